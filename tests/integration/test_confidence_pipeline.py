"""Diagnostic confidence end to end on the test index (offline): every differential item gets a calibrated
probability, the result a ``diagnostic_confidence`` block apart from the verification, the escalation thresholds are
config flags, and the CLI's answer and the audit trail say both things apart."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.confidence import load_calibration
from clinicalrag.commands.ask import render
from clinicalrag.commands.trace import render as render_trace
from graph.config import PipelineConfig
from graph.pipeline import ClinicalRAG, Resources

CASES = yaml.safe_load((Path(__file__).resolve().parents[1] / "cases" / "clinical_cases.yaml").read_text())["cases"]


@pytest.fixture(scope="module")
def rag(knowledge, tmp_path_factory):
    kg, index = knowledge
    from agents.llm import LLMConfig

    rt = Resources(llm_config=LLMConfig(), kg=kg, index=index,
                   audit_path=tmp_path_factory.mktemp("audit") / "audit.jsonl")
    return ClinicalRAG(rt)


@pytest.fixture(scope="module")
def influenza(rag):
    return rag.ask(CASES[0]["presentation"])


def test_items_have_calibrated_confidences_in_rank_order(influenza):
    r = influenza
    assert r["differential"]
    confs = [d["confidence"] for d in r["differential"]]
    assert all(isinstance(c, float) and 0.0 <= c <= 1.0 for c in confs), confs
    assert confs == sorted(confs, reverse=True)
    block = r["diagnostic_confidence"]
    assert block["top"] == confs[0] and block["level"] in ("low", "moderate", "high")
    assert block["calibration"] == load_calibration().label()
    # the influenza case states fever, cough, myalgia, headache (and more): findings the candidates explain
    assert block["findings"] >= 3 and 0 <= block["top_explains"] <= block["leading_explain"] <= block["findings"]
    assert block["explained"] == f"{block['top_explains']} of {block['findings']} findings"
    assert [(it["rank"], it["concept_id"]) for it in block["items"]] == [(d["rank"], d["concept_id"])
                                                                       for d in r["differential"]]
    assert all(it["features"]["rank"] == it["rank"] and it["features"]["findings"] == block["findings"]
               for it in block["items"])
    # the verification block is unchanged and separate
    assert r["verification"]["claims"] and "supported_ratio" in r["verification"]


def test_cli_answer_prints_claims_and_diagnostic_confidence_apart(influenza):
    text = render(influenza)
    line = next(x for x in text.splitlines() if x.startswith("Claims: "))
    claims = influenza["verification"]["claims"]
    supported = sum(c["verdict"] == "SUPPORTED" for c in claims)
    d = influenza["diagnostic_confidence"]
    assert line == (f"Claims: {supported}/{len(claims)} supported by cited evidence · Diagnostic confidence: "
                    f"{d['level']} (top candidate {d['top']:.2f}; explains {d['explained']})")
    assert text.index("Claims: ") < text.index("Differential diagnosis")
    assert f"1. {influenza['differential'][0]['diagnosis']} {d['top']:.2f}" in text


def test_the_audit_trail_shows_both(rag, influenza):
    rec = rag.resources.audit.get(influenza["run_id"])
    assert rec["diagnostic_confidence"]["top"] == influenza["diagnostic_confidence"]["top"]
    shown = render_trace(rec)
    assert "== diagnostic confidence (how likely is the diagnosis?)" in shown
    assert "== verification (are the claims supported by the evidence they cite?)" in shown


def test_escalation_thresholds_are_config_flags(rag, influenza):
    text = CASES[0]["presentation"]
    off = rag.ask(text, PipelineConfig(min_explained_findings=0.0, min_top_confidence=0.0), audit=False)
    strict = rag.ask(text, PipelineConfig(min_explained_findings=1.0, min_top_confidence=1.0), audit=False)
    d = strict["diagnostic_confidence"]
    assert not [x for x in off["escalation"]["reasons"] if x.startswith("diagnostic: ")]
    diag = [x for x in strict["escalation"]["reasons"] if x.startswith("diagnostic: ")]
    assert f"diagnostic: the top candidate's calibrated confidence is {d['top']:.2f}, under 1.00" in diag
    if d["leading_explain"] < d["findings"]:
        assert (f"diagnostic: the leading candidates explain only {d['leading_explain']} of {d['findings']} "
                "findings") in diag
    # the status is about the claims: the same whatever the diagnostic thresholds
    assert strict["status"] == off["status"] == influenza["status"]
    assert strict["escalation"]["escalated"]


def test_uncalibrated_state(rag, monkeypatch):
    monkeypatch.setenv("CLINICALRAG_CONFIDENCE_FILE", "")
    r = rag.ask(CASES[0]["presentation"], audit=False)
    assert r["differential"] and all(d["confidence"] is None for d in r["differential"])
    assert r["diagnostic_confidence"]["calibration"] == "uncalibrated" and r["diagnostic_confidence"]["top"] is None
    assert not [x for x in r["escalation"]["reasons"] if "calibrated confidence" in x]
    assert "Diagnostic confidence: uncalibrated (top candidate explains" in render(r)


def test_what_a_disease_explains_agrees_with_the_ranking(rag):
    """``KGRanker.explained`` (used for candidates found by text alone) finds the findings the ranking matched to a
    disease by its own edges; a parent disease may also have inherited a child's matches in the ranking."""
    from agents.ranker import ranking_findings

    res = rag.resources
    ex = res.mee.extract(CASES[0]["presentation"])
    pos, neg = ranking_findings(ex)
    cands = res.ranker.rank(pos, neg, k=10, age=ex.age_years, sex=ex.sex)
    assert cands
    found = [set(res.ranker.explained(c.concept_id, pos)) for c in cands]
    assert all(f <= set(c.matched) for f, c in zip(found, cands))
    assert any(f and f == set(c.matched) for f, c in zip(found, cands))
    assert res.ranker.explained(cands[0].concept_id, []) == []

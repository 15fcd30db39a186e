"""Diagnostic confidence (agents/confidence.py) on hand-made candidates and data: the features of a ranked item,
the logistic calibrator and its fit, the calibration file, and how the result, the escalation and the CLI keep
"claims supported" and "diagnostic confidence" apart (graph/result.py, clinicalrag/commands/ask.py)."""
from __future__ import annotations

import json
import math

import pytest
from asthma_case import WHEEZE

from agents.confidence import (
    CALIBRATION_FILE,
    UNCALIBRATED,
    Calibration,
    assess,
    current_finding_ids,
    design_row,
    differential_features,
    fit_calibration,
    fit_logistic,
    item_features,
    level_of,
    load_calibration,
)
from agents.types import Candidate, DifferentialItem, Draft, Entity, Extraction, Verification
from clinicalrag.commands.ask import render
from graph import nodes
from graph.config import PipelineConfig
from graph.result import STATUS_REVIEW, STATUS_VERIFIED, build_result, status_and_escalation

FINDINGS = ["SYMP:1", "SYMP:2", "SYMP:3", "SYMP:4"]


def _candidates() -> list[Candidate]:
    return [
        Candidate(concept_id="D:1", name="one", score=0.8, matched=["SYMP:1", "SYMP:2", "SYMP:9"],
                  ranks={"kg": 2, "page": 1}),
        Candidate(concept_id="D:2", name="two", score=0.6, matched=["SYMP:3"], contradicted=["SYMP:7", "SYMP:8"],
                  ranks={"kg": 1}),
        Candidate(concept_id="D:3", name="three", score=0.2, ranks={"text": 3, "page": 2}),
    ]


# ---- features -------------------------------------------------------------------------------------------------

def test_item_features_of_a_ranked_candidate():
    f = item_features(1, "D:1", _candidates(), FINDINGS)
    # SYMP:9 is not a current finding: it does not count
    assert f == {"rank": 1, "cand": 1, "rel": 1.0, "gap": 0.25, "matched": 2, "findings": 4, "contra": 0,
                 "kg": 2, "text": 0, "page": 1}
    f = item_features(2, "D:2", _candidates(), FINDINGS)
    assert f == {"rank": 2, "cand": 2, "rel": 0.75, "gap": 0.5, "matched": 1, "findings": 4, "contra": 2,
                 "kg": 1, "text": 0, "page": 0}
    last = item_features(3, "D:3", _candidates(), FINDINGS)
    assert (last["rel"], last["gap"], last["matched"], last["text"], last["page"]) == (0.25, 0.25, 0, 3, 2)


def test_a_subtype_named_before_its_parent_is_measured_against_the_next_rival():
    sub = Candidate(concept_id="D:0", name="zero", score=0.8, matched=["SYMP:1"], subtype_of="D:1")
    cands = [sub, *_candidates()]
    # the parent "D:1" ties with it but is not a rival: the gap is to "D:2"
    assert item_features(1, "D:0", cands, FINDINGS)["gap"] == 0.25
    assert item_features(1, "D:0", [sub.model_copy(update={"subtype_of": ""}), *_candidates()],
                         FINDINGS)["gap"] == 0.0
    assert item_features(1, "D:0", [c.model_dump() for c in cands], FINDINGS)["gap"] == 0.25
    assert item_features(1, "D:0", [sub], FINDINGS)["gap"] == 1.0


def test_features_tolerate_dicts_new_fields_and_candidates_nothing_ranked():
    dumped = [c.model_dump() for c in _candidates()]
    dumped[0]["origin"] = "llm"                       # a field a colleague may add
    del dumped[1]["ranks"]                            # a candidate from before the ranks were recorded
    assert item_features(1, "D:1", dumped, FINDINGS) == item_features(1, "D:1", _candidates(), FINDINGS)
    # without recorded ranks, a candidate with matched findings came from the knowledge-graph ranking
    assert item_features(2, "D:2", dumped, FINDINGS)["kg"] == 2
    # a diagnosis proposed outside the candidates (e.g. by a language model), or without a concept id
    for cid in ("D:404", None):
        f = item_features(4, cid, dumped, FINDINGS)
        assert f == {"rank": 4, "cand": 0, "rel": 0.0, "gap": 0.0, "matched": 0, "findings": 4, "contra": 0,
                     "kg": 0, "text": 0, "page": 0}
    odd = [{"concept_id": "D:1", "score": None}, {"concept_id": "D:2", "score": "n/a", "matched": None}]
    assert item_features(1, "D:1", odd, [])["rel"] == 0.0


def test_current_findings_leave_out_negated_past_and_anatomical_mentions():
    ex = Extraction(entities=[
        Entity(text="cough", category="symptom", concept_id="SYMP:1"),
        Entity(text="coughing", category="symptom", concept_id="SYMP:1"),
        Entity(text="fever", category="symptom", concept_id="SYMP:2", negated=True),
        Entity(text="old rash", category="symptom", concept_id="SYMP:3", historical=True),
        Entity(text="throat", category="anatomy", concept_id="UBERON:0000341"),
        Entity(text="mother's asthma", category="symptom", concept_id="SYMP:4", family=True),
        Entity(text="unlinked", category="symptom"),
        Entity(text="pain", category="test", concept_id="HP:0012531"),
    ])
    assert current_finding_ids(ex) == ["SYMP:1", "HP:0012531"]
    assert current_finding_ids(ex.model_dump()) == ["SYMP:1", "HP:0012531"]
    assert current_finding_ids(None) == []
    diff = [DifferentialItem(rank=1, diagnosis="one", concept_id="D:1")]
    assert differential_features(diff, _candidates(), ex)[0]["findings"] == 2


def test_design_row_by_hand():
    f = {"rank": 3, "cand": 2, "rel": 0.5, "gap": 0.1, "matched": 1, "findings": 4, "contra": 5, "kg": 2,
         "text": 0, "page": 4}
    row = dict(zip(("log_rank", "rel_top", "gap_next", "explained", "contradicted", "rr_kg", "rr_text", "rr_page",
                    "ranked"), design_row(f)))
    assert row == pytest.approx({"log_rank": math.log(3), "rel_top": 0.5, "gap_next": 0.1, "explained": 0.25,
                                 "contradicted": 3.0, "rr_kg": 0.5, "rr_text": 0.0, "rr_page": 0.25, "ranked": 1.0})
    assert design_row({}, ("log_rank", "explained", "ranked")) == [0.0, 0.0, 0.0]


# ---- the calibrator -------------------------------------------------------------------------------------------

def test_logistic_fit_recovers_the_rates_of_a_binary_input():
    # x = 0: 1 of 4 correct; x = 1: 3 of 4 correct -> p = 0.25 and 0.75 without a penalty
    rows = [[0.0]] * 4 + [[1.0]] * 4
    labels = [1, 0, 0, 0, 1, 1, 1, 0]
    mean, scale, coef, intercept = fit_logistic(rows, labels, l2=1e-8)
    assert mean == [0.5] and scale == [1.0]
    assert coef[0] == pytest.approx(2 * math.log(3), abs=1e-4) and intercept == pytest.approx(0.0, abs=1e-6)
    # a penalty shrinks the coefficient towards 0
    _, _, shrunk, _ = fit_logistic(rows, labels, l2=5.0)
    assert 0 < shrunk[0] < coef[0]
    # all labels equal: no slope, the smoothed rate as intercept
    _, _, flat, b0 = fit_logistic(rows, [0] * 8, l2=1.0)
    assert flat == [0.0] and b0 == pytest.approx(math.log(0.5 / 8.5))
    with pytest.raises(ValueError):
        fit_logistic(rows, [2] * 8)


def test_fit_calibration_drops_inputs_against_their_expected_sign():
    feats, labels = [], []
    for i in range(40):
        right = i % 4 == 0
        feats.append({"rank": 1 if right else 3, "cand": 1, "rel": 1.0 if right else 0.4, "gap": 0.0,
                      "matched": 3 if right else 1, "findings": 4, "contra": 1 if right else 0,   # wrong-way quirk
                      "kg": 1 if right else 5, "text": 0, "page": 0})
        labels.append(int(right))
    cal = fit_calibration(feats, labels, l2=1.0)
    assert "contradicted" not in cal.features
    assert "ranked" not in cal.features and "rr_text" not in cal.features   # constant inputs carry nothing
    assert {"log_rank", "explained", "rr_kg"} <= set(cal.features)
    good = cal.predict(feats[0])
    bad = cal.predict(feats[1])
    assert 0.5 < good < 1 and 0 < bad < 0.1
    kept = fit_calibration(feats, labels, l2=1.0, signs=None)
    assert "contradicted" in kept.features


def test_calibration_file_round_trip_and_the_uncalibrated_state(tmp_path, monkeypatch):
    cal = Calibration(features=("rr_page",), mean=(0.0,), scale=(1.0,), coef=(math.log(9),), intercept=0.0,
                      provenance={"status": "provisional", "datasets": {"s2d": 40}, "split": "dev",
                                  "date": "2026-11-23"})
    assert cal.predict({"page": 1}) == pytest.approx(0.9) and cal.predict({}) == pytest.approx(0.5)
    assert cal.label() == "logistic fit on dev split (s2d 40 cases; 2026-11-23; provisional)"
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal.to_json()))
    assert load_calibration(path) == cal
    assert load_calibration(tmp_path / "missing.json") is None
    monkeypatch.setenv("CLINICALRAG_CONFIDENCE_FILE", "")
    assert load_calibration() is None
    monkeypatch.setenv("CLINICALRAG_CONFIDENCE_FILE", str(path))
    assert load_calibration() == cal
    path.write_text('{"model": "isotonic"}')
    with pytest.raises(ValueError, match="not a diagnostic-confidence calibration"):
        load_calibration(path)
    with pytest.raises(ValueError, match="unknown calibration feature"):
        Calibration(features=("shoe_size",), mean=(0.0,), scale=(1.0,), coef=(1.0,), intercept=0.0)


def test_the_packaged_calibration_reads_and_says_where_it_comes_from():
    cal = load_calibration(CALIBRATION_FILE)
    assert cal is not None
    p = cal.provenance
    assert p["split"] == "dev" and p["n_cases"] == sum(p["datasets"].values()) > 0 and p["date"]
    assert p["status"] in ("provisional", "fitted") and cal.label().startswith("logistic fit on dev split (")
    assert 0 < cal.predict({"rank": 1, "cand": 1, "rel": 1.0, "findings": 3, "matched": 3, "kg": 1, "text": 1,
                            "page": 1}) < 1


def test_assess_never_rises_down_the_ranking_and_counts_what_the_leaders_explain():
    cal = Calibration(features=("rr_kg",), mean=(0.0,), scale=(1.0,), coef=(2.0,), intercept=-2.0)
    diff = [DifferentialItem(rank=i, diagnosis=n, concept_id=c) for i, (n, c) in
            enumerate([("one", "D:1"), ("two", "D:2"), ("three", "D:3")], 1)]
    ex = Extraction(entities=[Entity(text=s, category="symptom", concept_id=s) for s in FINDINGS])
    a = assess(diff, _candidates(), ex, calibration=cal, lead=2)
    raw = [cal.predict(f) for f in a.features]
    assert raw[1] > raw[0]                               # "two" is the KG ranking's first ...
    assert a.confidences == [raw[0], raw[0], raw[2]]      # ... but is never shown above "one"
    assert (a.findings, a.top_explained, a.lead_explained) == (4, 2, 3)
    block = a.block()
    assert block["explained"] == "2 of 4 findings" and block["explained_by_leading"] == "3 of 4 findings (top 2)"
    assert raw[0] == pytest.approx(1 / (1 + math.e))     # sigmoid(-2 + 2 * 1/2)
    assert block["level"] == level_of(raw[0]) == "moderate" and block["calibration"] == "logistic fit on dev split"
    none = assess(diff, _candidates(), ex, calibration=None)
    assert none.confidences == [None] * 3 and none.level == "unknown" and none.calibration == UNCALIBRATED
    assert [level_of(p) for p in (0.05, 0.2, 0.49, 0.5, 0.9)] == ["low", "moderate", "moderate", "high", "high"]


# ---- the result, the escalation and the CLI -------------------------------------------------------------------

LOW = Calibration(features=("rr_kg",), mean=(0.0,), scale=(1.0,), coef=(0.0,), intercept=math.log(0.02 / 0.98),
                  provenance={"status": "provisional", "split": "dev", "datasets": {"test": 4}})


def _answered(asthma: dict) -> dict:
    """The asthma turn answered: two claims, both supported; asthma explains wheezing, not cough."""
    from agents.types import ClaimCheck

    draft = Draft(text=f"1. asthma [{WHEEZE}]", differential=[
        DifferentialItem(rank=1, diagnosis="asthma", concept_id="DOID:2841", citations=[WHEEZE]),
        DifferentialItem(rank=2, diagnosis="a diagnosis nothing ranked", concept_id=None)])
    v = Verification(passed=True, supported_ratio=1.0, claims=[
        ClaimCheck(claim="a", verdict="SUPPORTED", confidence=0.9), ClaimCheck(claim="b", verdict="SUPPORTED",
                                                                                confidence=0.9)])
    return {**asthma, "draft": draft, "verification": v}


def test_diagnostic_escalation_keeps_the_claims_status(asthma):
    state = _answered(asthma)
    cfg = PipelineConfig()
    status, reasons = status_and_escalation(state, cfg, LOW)
    assert status == STATUS_VERIFIED
    assert reasons == ["diagnostic: the top candidate's calibrated confidence is 0.02, under 0.05"]
    # asthma explains 1 of the 2 current findings: under a 0.75 share the leading candidates escalate too
    status, reasons = status_and_escalation(state, PipelineConfig(min_explained_findings=0.75,
                                                                  min_top_confidence=0.0), LOW)
    assert status == STATUS_VERIFIED and reasons == ["diagnostic: the leading candidates explain only 1 of 2 findings"]
    assert status_and_escalation(state, PipelineConfig(min_top_confidence=0.0), LOW) == (STATUS_VERIFIED, [])
    # an evidence reason still makes it a review, with the diagnostic reason listed after it
    status, reasons = status_and_escalation({**state, "escalation": ["retrieval: weak"]}, cfg, LOW)
    assert status == STATUS_REVIEW and reasons[0] == "retrieval: weak" and reasons[1].startswith("diagnostic: ")
    # uncalibrated: no confidence floor can apply
    assert status_and_escalation(state, cfg, None) == (STATUS_VERIFIED, [])


def test_result_carries_confidence_apart_from_verification(asthma):
    state = _answered(asthma)
    r = build_result(state, PipelineConfig(), events=[], thread_id=None, llm_model=None, calibration=LOW)
    assert r["status"] == STATUS_VERIFIED and r["verification"]["passed"] is True
    assert [d["confidence"] for d in r["differential"]] == [0.02, 0.02]
    d = r["diagnostic_confidence"]
    assert {k: d[k] for k in ("top", "level", "explained", "findings", "calibration")} == {
        "top": 0.02, "level": "low", "explained": "1 of 2 findings", "findings": 2,
        "calibration": "logistic fit on dev split (test 4 cases; provisional)"}
    assert [it["features"]["cand"] for it in d["items"]] == [1, 0]
    assert r["escalation"] == {"escalated": True, "reasons": [
        "diagnostic: the top candidate's calibrated confidence is 0.02, under 0.05"]}
    text = render(r)
    assert ("Claims: 2/2 supported by cited evidence · Diagnostic confidence: low (top candidate 0.02; "
            "explains 1 of 2 findings)") in text.splitlines()
    assert "the diagnosis is uncertain (its claims are supported by the cited evidence)." in text
    assert "Status: verified" in text and "not verified" not in text
    assert "Status: verified — the claims match their cited evidence (not a check of the diagnosis)" in text
    assert "Probability each is the diagnosis: 1. asthma 0.02 · 2. a diagnosis nothing ranked 0.02" in text

    bare = build_result(state, PipelineConfig(), events=[], thread_id=None, llm_model=None, calibration=None)
    assert [d["confidence"] for d in bare["differential"]] == [None, None]
    assert bare["diagnostic_confidence"]["calibration"] == UNCALIBRATED and not bare["escalation"]["escalated"]
    assert "Diagnostic confidence: uncalibrated (top candidate explains 1 of 2 findings)" in render(bare)

    direct = build_result(state, PipelineConfig(mode="direct"), events=[], thread_id=None, llm_model="m",
                          calibration=LOW)
    assert direct["diagnostic_confidence"] is None
    assert ("Claims: not checked (language model only, no evidence) · Diagnostic confidence: not assessed"
            in render(direct))


def test_finalize_and_the_audit_record_carry_the_block(asthma, runtime, monkeypatch, tmp_path):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(LOW.to_json()))
    monkeypatch.setenv("CLINICALRAG_CONFIDENCE_FILE", str(path))
    state = _answered(asthma)
    rt = runtime()
    up = nodes.finalize(state, rt)
    assert up["escalation"] == ["diagnostic: the top candidate's calibrated confidence is 0.02, under 0.05"]
    assert up["result"]["status"] == STATUS_VERIFIED and up["result"]["diagnostic_confidence"]["top"] == 0.02
    rec = nodes.audit({**state, "result": up["result"]}, rt)
    stored = rt.context.resources.audit.get(rec["result"]["run_id"])
    assert stored["diagnostic_confidence"]["items"][0]["diagnosis"] == "asthma"
    from clinicalrag.commands.trace import render as trace_render

    shown = trace_render(stored)
    assert "== diagnostic confidence (how likely is the diagnosis?)" in shown and "0.02" in shown
    assert "== verification (are the claims supported by the evidence they cite?)" in shown


def test_every_face_reads_diagnostic_reasons_by_the_same_prefix():
    from clinicalrag.bench import runner
    from clinicalrag.commands import ask
    from graph import result

    assert ask.DIAGNOSTIC_PREFIX == runner.DIAGNOSTIC_PREFIX == result.DIAGNOSTIC_PREFIX == "diagnostic: "


def test_likelihood_words_follow_the_calibrated_confidence():
    from graph.result import calibrated_likelihoods

    text = ("### Differential diagnosis (for clinician review)\n"
            "#### 1. acute bronchitis (likelihood: high; score 0.13)\n   Cough is typical [E1].\n"
            "#### 2. influenza (likelihood: moderate; score 0.09; proposed by the model)\n   Fever [E2].\n"
            "#### 3. common cold (likelihood: low)\n"
            "The likelihood: high of nothing else changes.")
    out = calibrated_likelihoods(text, {1: 0.131, 2: 0.55})
    assert "#### 1. acute bronchitis (likelihood: low; confidence 0.13)" in out
    assert "#### 2. influenza (likelihood: high; confidence 0.55; proposed by the model)" in out
    assert "#### 3. common cold (likelihood: low)" in out                 # no confidence for rank 3: kept
    assert out.endswith("The likelihood: high of nothing else changes.")  # not a heading: untouched
    assert calibrated_likelihoods(text, {}) == text

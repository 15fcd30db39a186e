"""System specs of the benchmark: what each names, and a clear error for what names nothing."""
from __future__ import annotations

import pytest

from clinicalrag.bench.systems import SpecError, expand, parse_system


@pytest.mark.parametrize(("spec", "kind", "overrides", "use_llm"), [
    ("pipeline", "pipeline", {}, True),
    ("direct", "direct", {}, True),
    ("bm25", "bm25", {}, True),
    ("pipeline:no-mee", "pipeline", {"use_mee": False}, True),
    ("pipeline:no-knl,no-krg", "pipeline", {"use_knl": False, "use_krg": False}, True),
    ("pipeline:cap=1024", "pipeline", {"max_input_tokens": 1024}, True),
    ("pipeline:src=BO", "pipeline", {"sources": ["B", "O"]}, True),
    ("pipeline:no-llm,differential_k=10", "pipeline", {"differential_k": 10}, False),
    ("pipeline:use_verifier=false", "pipeline", {"use_verifier": False}, True),
    ("pipeline:no-prior", "pipeline", {"use_prior": False}, True),
    ("pipeline:no-mined", "pipeline", {"use_mined_edges": False}, True),
    ("pipeline:mined_strength=0.3", "pipeline", {"mined_strength": 0.3}, True),
    ("pipeline:no-sites", "pipeline", {"use_sites": False}, True),
    ("pipeline:no-signs", "pipeline", {"use_signs": False}, True),
    ("pipeline:no-risk-factors", "pipeline", {"use_risk_factors": False}, True),
    ("pipeline:site_weight=1", "pipeline", {"site_weight": 1.0}, True),
    ("pipeline:prior_weight=0.5", "pipeline", {"prior_weight": 0.5}, True),
])
def test_specs(spec, kind, overrides, use_llm):
    s = parse_system(spec)
    assert (s.kind, s.overrides, s.use_llm) == (kind, overrides, use_llm)
    if kind in ("pipeline", "direct"):
        cfg = s.config()
        assert cfg.mode == ("direct" if kind == "direct" else "pipeline")
        for k, v in overrides.items():
            assert getattr(cfg, k) == v


def test_ranker_gold_findings():
    assert parse_system("ranker:gold-findings").gold_findings
    assert not parse_system("ranker").gold_findings


def test_config_hash_differs_per_ablation():
    hashes = {parse_system(s).describe()["config_hash"] for s in ["pipeline", "pipeline:no-mee", "pipeline:cap=2048"]}
    assert len(hashes) == 3


@pytest.mark.parametrize(("spec", "why"), [
    ("pipline", "unknown system 'pipline'"),
    ("pipeline:no-mea", "unknown modifier 'no-mea'"),
    ("pipeline:cap=lots", "bad value for cap"),
    ("pipeline:cap=100", "max_input_tokens"),
    ("pipeline:src=X", "sources"),
    ("pipeline:colour=blue", "unknown setting 'colour'"),
    ("pipeline:use_mee=perhaps", "true/false"),
    ("bm25:no-mee", "takes no modifiers"),
    ("direct:no-llm", "cannot run without one"),
    ("ranker:no-mee", "gold-findings"),
])
def test_bad_specs(spec, why):
    with pytest.raises(SpecError, match=why):
        parse_system(spec)


def test_groups_expand_in_order_without_duplicates():
    assert expand(["pipeline", "ablations", "pipeline:no-mee", "caps"]) == [
        "pipeline", "pipeline:no-mee", "pipeline:no-knl", "pipeline:no-krg", "pipeline:no-verifier",
        "pipeline:no-pages", "pipeline:no-prior", "pipeline:no-mined", "pipeline:no-sites", "pipeline:no-signs",
        "pipeline:no-cardinal", "pipeline:no-opposites", "pipeline:no-risk-factors", "pipeline:no-subtypes",
        "pipeline:no-against", "pipeline:no-others", "pipeline:no-needs", "pipeline:no-fold-empty",
        "pipeline:cap=2048", "pipeline:cap=1024"]


@pytest.mark.parametrize(("text", "specs"), [
    ("direct,pipeline:no-mee,cap=1024,bm25", ["direct", "pipeline:no-mee,cap=1024", "bm25"]),
    ("pipeline:propose_prompt=direct,llm_agents=propose,model_weight=4,pipeline:no-llm",
     ["pipeline:propose_prompt=direct,llm_agents=propose,model_weight=4", "pipeline:no-llm"]),
    ("ablations, bm25", ["ablations", "bm25"]),
    (" direct ,, ranker ", ["direct", "ranker"]),
])
def test_split_specs_keeps_modifiers_with_their_system(text, specs):
    from clinicalrag.bench.systems import split_specs

    assert split_specs(text) == specs


@pytest.mark.parametrize(("raw", "agents"), [
    ("propose+generate", ["propose", "generate"]),
    ("propose", ["propose"]),
    ("none", []),
])
def test_list_setting_joined_with_plus(raw, agents):
    s = parse_system(f"pipeline:llm_agents={raw}")
    assert s.config().llm_agents == agents


def test_propose_prompt_setting_and_unknown_prompt():
    from agents.proposer import Proposer

    assert parse_system("pipeline:propose_prompt=direct").config().propose_prompt == "direct"
    with pytest.raises(SpecError):
        parse_system("pipeline:propose_prompt=poem")
    with pytest.raises(ValueError, match="unknown proposal prompt"):
        Proposer(prompt="poem")


def test_ask_set_takes_any_pipeline_setting_and_names_a_wrong_one():
    import argparse

    from clinicalrag.cli import UserError
    from clinicalrag.commands.ask import build_config, register

    sub = argparse.ArgumentParser().add_subparsers()
    register(sub)

    def cfg(*argv):
        return build_config(sub.choices["ask"].parse_args([*argv, "fever"]))

    c = cfg("--set", "direct_min_diagnoses=3", "--set", "llm_agents=propose+generate", "--set", "mined_strength=0.3")
    assert (c.direct_min_diagnoses, c.llm_agents, c.mined_strength) == (3, ["propose", "generate"], 0.3)
    for bad, words in [("nosuch=1", "unknown setting"), ("direct_min_diagnoses", "SETTING=VALUE"),
                       ("direct_min_diagnoses=0", "greater than or equal")]:
        with pytest.raises(UserError, match=words):
            cfg("--set", bad)

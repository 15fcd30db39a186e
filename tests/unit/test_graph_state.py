"""Reducers, and whole runs of the compiled graph on paths that need no knowledge (input errors, the direct
baseline without an LLM), with and without a checkpointer."""
from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver

from agents.types import Evidence
from graph.config import PipelineConfig
from graph.context import Context
from graph.state import add_events, add_unique, merge_evidence
from graph.workflow import compile_graph, graph


def _ev(i: str, score: float) -> Evidence:
    return Evidence(id=i, role="B", kind="chunk", text=i, score=score)


def test_add_unique_keeps_order_and_first_occurrence():
    assert add_unique(["a", "b"], ["b", "c", "a", "d"]) == ["a", "b", "c", "d"]
    assert add_unique(None, ["x", "x"]) == ["x"] and add_unique(["x"], None) == ["x"]


def test_add_events_appends():
    assert add_events([{"node": "a"}], [{"node": "b"}]) == [{"node": "a"}, {"node": "b"}]


def test_merge_evidence_unions_by_id_best_score_first():
    merged = merge_evidence([_ev("B:a", 0.5), _ev("B:b", 0.9)], [_ev("B:a", 0.7), _ev("B:c", 0.6)])
    assert [(e.id, e.score) for e in merged] == [("B:b", 0.9), ("B:a", 0.7), ("B:c", 0.6)]
    assert [e.id for e in merge_evidence([_ev("B:a", 0.8)], [_ev("B:a", 0.1)])] == ["B:a"]
    assert merge_evidence([_ev("B:a", 0.8)], [_ev("B:a", 0.1)])[0].score == 0.8


def _ctx(resources, **cfg) -> Context:
    return Context(config=PipelineConfig(**cfg), resources=resources)


def test_rejected_input_runs_through_the_graph(resources):
    out = graph.invoke({"message": "   "}, context=_ctx(resources))
    r = out["result"]
    assert r["status"] == "rejected" and "empty" in r["error"]
    assert [e["node"] for e in r["trace"]] == ["intake", "finalize"]
    assert resources.audit.records() == []          # nothing ran, nothing is audited


def test_direct_mode_without_llm_runs_and_is_audited(resources):
    out = graph.invoke({"message": "45-year-old woman with fever\ud800 and cough."}, context=_ctx(resources,
                                                                                                 mode="direct"))
    r = out["result"]
    assert set(out) == {"result"}
    assert r["status"].startswith("unverified") and not r["differential"]
    assert [e["node"] for e in r["trace"]] == ["intake", "direct", "finalize"]
    assert any("no LLM" in w for w in r["warnings"]) and any("surrogates" in w for w in r["warnings"])
    rec = resources.audit.get(r["run_id"])
    assert rec["status"] == r["status"] and resources.audit.verify().ok


def test_context_from_json_like_the_server_sends(resources):
    """LangGraph's server passes the context as a JSON object; it is coerced into Context."""
    out = graph.invoke({"message": "cough"}, context={"config": {"mode": "direct"}, "audit": False,
                                                      "resources": resources})
    assert out["result"]["mode"] == "direct" and out["result"]["run_id"] is None


def test_a_misspelt_setting_is_an_error_not_a_default_run(resources):
    """An ablation whose flag is misspelt would otherwise run the full pipeline under the ablation's name."""
    import pydantic
    import pytest

    with pytest.raises(pydantic.ValidationError, match="use_pagez"):
        PipelineConfig(use_pagez=False)
    with pytest.raises(pydantic.ValidationError, match="use_pagez"):
        graph.invoke({"message": "cough"}, context={"config": {"use_pagez": False}, "audit": False,
                                                    "resources": resources})
    assert PipelineConfig(use_pages=False).use_pages is False


def test_thread_turns_accumulate_and_the_turn_fields_reset(resources):
    g = compile_graph(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t1"}}
    ctx = _ctx(resources, mode="direct")
    r1 = g.invoke({"message": "45-year-old woman with fever and cough."}, cfg, context=ctx)["result"]
    r2 = g.invoke({"message": "She now has chest pain."}, cfg, context=ctx)["result"]
    assert r2["presentation"] == "45-year-old woman with fever and cough.\nShe now has chest pain."
    assert r1["thread_id"] == r2["thread_id"] == "t1"
    assert [e["node"] for e in r2["trace"]] == ["intake", "direct", "finalize"]     # events reset per turn
    assert r2["warnings"] == r1["warnings"]                                           # not accumulated
    bad = g.invoke({"message": ""}, cfg, context=ctx)["result"]
    assert bad["status"] == "rejected"
    state = g.get_state(cfg).values
    assert state["history"] == ["45-year-old woman with fever and cough.", "She now has chest pain."]
    assert "prompt" not in str(state["events"])


def test_the_graph_is_compiled_once_per_process():
    import graph.studio as studio

    assert studio.graph is graph and studio.make_graph() is graph

"""The per-run LLM budget against a real OpenAI-compatible server on 127.0.0.1 (tests/support)."""
from __future__ import annotations

import json

from pydantic import BaseModel
from support.llama_server import http_error, ok

from agents.llm import LLMClient, LLMConfig
from agents.llm import LLMBudget


class Answer(BaseModel):
    answer: str


MSGS = [{"role": "user", "content": "say ok"}]


def _client(srv) -> LLMClient:
    return LLMClient(LLMConfig(base_url=srv.base_url, model=srv.model, timeout=5, max_retries=0))


def test_budget_stops_calls_past_the_cap(faulty_server):
    faulty_server.default = ok(json.dumps({"answer": "ok"}))
    llm = LLMBudget(_client(faulty_server), max_calls=2)
    assert llm.structured(MSGS, Answer, tag="a").value.answer == "ok"
    assert llm.chat(MSGS, tag="b").ok
    assert not llm.enabled
    res = llm.structured(MSGS, Answer, tag="c")
    assert res.value is None and "budget of 2" in res.error and llm.skipped == ["c"]
    assert [c["tag"] for c in llm.calls] == ["a", "b"] and len(faulty_server.chat_requests()) == 2


def test_two_runs_sharing_a_client_keep_their_own_count(faulty_server):
    """Overlapping runs: each run's budget counts its own calls, not the shared client's log."""
    faulty_server.default = ok(json.dumps({"answer": "ok"}))
    client = _client(faulty_server)
    run_a, run_b = LLMBudget(client, max_calls=1), LLMBudget(client, max_calls=1)
    assert run_a.chat(MSGS, tag="a").ok
    assert run_b.enabled and run_b.chat(MSGS, tag="b").ok      # run a's call does not use run b's budget
    assert len(client.log) == 2 and len(run_a.calls) == len(run_b.calls) == 1


def test_budget_resumes_from_the_calls_a_run_already_made(faulty_server):
    llm = LLMBudget(_client(faulty_server), max_calls=4, used=4)
    assert not llm.enabled and llm.chat(MSGS).error.startswith("LLM call budget")
    assert faulty_server.chat_requests() == []


def test_call_records_carry_metadata_not_prompts(faulty_server):
    faulty_server.queue(http_error(500, "model crashed"))
    llm = LLMBudget(_client(faulty_server), max_calls=4)
    res = llm.chat(MSGS, tag="x")
    assert res.error and llm.calls[0]["error"] == res.error and llm.calls[0]["tag"] == "x"
    assert set(llm.calls[0]) == {"tag", "model", "mode", "prompt_tokens", "completion_tokens", "latency_s",
                                 "attempts", "finish_reason", "error", "cached", "ts", "logical", "parse_error",
                                 "rejected_format"}


def test_prompt_over_the_input_cap_is_not_sent(faulty_server):
    llm = LLMBudget(_client(faulty_server), max_calls=4, max_input_tokens=20)
    res = llm.structured([{"role": "user", "content": "fever " * 200}], Answer, tag="big")
    assert res.value is None and "exceeds the input cap" in res.error
    assert not faulty_server.chat_requests()


def test_disabled_client_disables_the_budget():
    from agents.llm import LLMClient, LLMConfig

    run = LLMBudget(LLMClient(LLMConfig()), max_calls=4)
    assert not run.enabled and run.used == 0


def test_a_refused_response_format_is_a_fallback_not_an_error():
    from graph.result import llm_summary

    refused = {"tag": "propose", "error": "HTTP 400: response_format json_schema", "rejected_format": True,
               "logical": False}
    accepted = {"tag": "propose", "error": None, "rejected_format": False, "logical": True, "parse_error": None}
    s = llm_summary([{"llm_calls": [refused, accepted]}], "m")
    assert (s["calls"], s["http_calls"], s["errors"], s["format_fallbacks"]) == (1, 2, 0, 1)
    assert s["by_tag"]["propose"] == {"calls": 1, "parse_errors": 0, "errors": 0}
    # every mode refused: the refusal is the logical call, and it failed
    s = llm_summary([{"llm_calls": [{**refused, "logical": True}]}], "m")
    assert (s["errors"], s["by_tag"]["propose"]["errors"]) == (1, 1)

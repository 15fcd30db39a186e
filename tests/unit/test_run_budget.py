"""agents.llm.budget: a per-run budget counts its own calls and refuses calls beyond its caps."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from agents.llm import BudgetedLLM, LLMClient, LLMConfig, RunBudget, forget_endpoint_modes

try:
    from support.llama_server import MALFORMED_JSON, ok
except ModuleNotFoundError:  # tests/ made a package
    from tests.support.llama_server import MALFORMED_JSON, ok


class Answer(BaseModel):
    answer: str


MSGS = [{"role": "user", "content": "Say ok as JSON."}]


@pytest.fixture(autouse=True)
def _fresh_modes():
    forget_endpoint_modes()
    yield
    forget_endpoint_modes()


@pytest.fixture
def client(faulty_server) -> LLMClient:
    return LLMClient(LLMConfig(base_url=faulty_server.base_url, model=faulty_server.model, max_retries=0,
                               timeout=10.0))


def test_calls_are_counted_per_run(faulty_server, client):
    faulty_server.queue(ok(MALFORMED_JSON), ok('{"answer": "ok"}'))
    run = RunBudget(client, max_calls=3)
    s = run.structured(MSGS, Answer, tag="mee")              # a structured call with a repair: two calls
    assert s.ok and run.used == 2 and [c.tag for c in run.calls] == ["mee", "mee"]
    assert [c.mode for c in run.calls] == ["json_schema", "json_schema+repair"]
    other = RunBudget(client, max_calls=3)                    # another run on the same client starts at zero
    assert other.used == 0 and other.enabled
    assert run.chat(MSGS, tag="knl").ok and run.used == 3 and not run.enabled
    assert len(client.log) == 3                               # the client's own log sees every call


def test_calls_beyond_the_cap_are_refused_and_named(faulty_server, client):
    run = RunBudget(client, max_calls=1)
    assert run.chat(MSGS, tag="generate").ok
    refused = run.structured(MSGS, Answer, tag="verify")
    assert refused.value is None and refused.error == "LLM call budget of 1 per case used up"
    assert run.chat(MSGS, tag="hyde").error == "LLM call budget of 1 per case used up"
    assert run.skipped == ["verify", "hyde"] and run.used == 1
    assert len(faulty_server.chat_requests()) == 1


def test_prompt_size_cap(faulty_server, client):
    run = RunBudget(client, max_calls=4, max_input_tokens=40)
    fits, n = run.fits(MSGS)
    assert fits and n == run.prompt_tokens(MSGS)
    assert not run.fits(MSGS, Answer)[0]                      # the schema the client adds counts too
    s = run.structured(MSGS, Answer, tag="generate")
    assert s.error.startswith("prompt of ") and s.error.endswith("exceeds the input cap of 40")
    assert run.skipped == ["generate"] and run.used == 0 and faulty_server.chat_requests() == []


def test_disabled_client_disables_the_budget():
    run = RunBudget(LLMClient(LLMConfig()), max_calls=4)
    assert not run.enabled and run.used == 0


def test_budgeted_llm_starts_a_fresh_budget_per_run(faulty_server, client):
    llm = BudgetedLLM(client, max_calls=1)
    assert llm.chat(MSGS, tag="a").ok and not llm.enabled
    assert llm.chat(MSGS, tag="b").error and llm.skipped == ["b"]
    first = llm.run
    llm.start_run(max_calls=2, max_input_tokens=1000)
    assert llm.run is not first and llm.used == 0 and llm.enabled and llm.skipped == []
    assert (llm.max_calls, llm.max_input_tokens) == (2, 1000)
    llm.start_run()                                           # caps carry over when not given
    assert (llm.max_calls, llm.max_input_tokens) == (2, 1000)
    mark = len(llm.log)
    assert llm.chat(MSGS, tag="c").ok and [c.tag for c in llm.calls_since(mark)] == ["c"]
    assert first.used == 1                                    # an old run's count does not move

"""agents.llm.structured: JSON extraction, validation and the one repair call, on recorded model replies."""
from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from agents.llm import LLMClient, LLMConfig, extract_json, forget_endpoint_modes
from agents.llm.structured import parse_reply, repair_messages, response_formats, with_schema_instruction

try:
    from support.llama_server import MALFORMED_JSON, TRUNCATED_JSON, ok
except ModuleNotFoundError:  # tests/ made a package
    from tests.support.llama_server import MALFORMED_JSON, TRUNCATED_JSON, ok


class Patient(BaseModel):
    age: int
    sex: Literal["male", "female"]


GOOD = Patient(age=45, sex="male")

# replies recorded from small local models (SmolLM2, Qwen2.5-Coder) and from the fault-injecting server
RECORDED_OK = [
    '{"age": 45, "sex": "male"}',
    '```json\n{"age": 45, "sex": "male"}\n```',
    'Sure! Here is the JSON you asked for:\n{"age": 45, "sex": "male"}\nLet me know if you need more.',
    '{"note": "first object is not it"} {"age": 45, "sex": "male"}',
    '```\n{"age": "45", "sex": "male"}\n```',          # lax validation: "45" -> 45
]


@pytest.fixture(autouse=True)
def _fresh_modes():
    forget_endpoint_modes()
    yield
    forget_endpoint_modes()


@pytest.mark.parametrize("raw", RECORDED_OK[:3] + RECORDED_OK[4:])
def test_recorded_replies_parse(raw):
    assert parse_reply(raw, Patient) == (GOOD, None)


def test_first_json_object_wins():
    assert extract_json(RECORDED_OK[3]) == {"note": "first object is not it"}
    value, problem = parse_reply(RECORDED_OK[3], Patient)
    assert value is None and problem.startswith("malformed JSON: the reply has none of the fields")


@pytest.mark.parametrize("raw,finish,expected", [
    (MALFORMED_JSON, "stop", "malformed JSON: Expecting property name enclosed in double quotes at char 26"),
    (TRUNCATED_JSON, "length", "malformed JSON: Unterminated string starting at at char 19 (reply "
                               "truncated at max_tokens)"),
    ("", "stop", "malformed JSON: empty reply"),
    ("I cannot help with that.", "stop", "malformed JSON: Expecting value at char 0"),
    ("[1, 2]", "stop", "malformed JSON: no JSON object in reply"),
])
def test_unusable_replies_say_why(raw, finish, expected):
    assert parse_reply(raw, Patient, finish) == (None, expected)


def test_validation_errors_are_listed_by_field():
    value, problem = parse_reply('{"age": "forty-five", "sex": "man"}', Patient)
    assert value is None
    assert problem.startswith("schema validation failed: age: ") and "; sex: " in problem


def test_request_shape():
    msgs = [{"role": "system", "content": "You extract.  "}, {"role": "user", "content": "45 M"}]
    strict = with_schema_instruction(msgs, '{"s":1}', "json_schema")
    assert strict[0]["content"] == "You extract.\n\nReply with a single JSON object only, no prose and no code fences."
    loose = with_schema_instruction(msgs[1:], '{"s":1}', "json_object")
    assert loose[0]["role"] == "system" and loose[0]["content"].endswith('JSON Schema:\n{"s":1}')
    assert msgs[0]["content"] == "You extract.  "          # the caller's messages are not changed
    fmts = response_formats(Patient)
    assert fmts["json_schema"]["json_schema"]["name"] == "Patient" and fmts["text"] is None
    fix = repair_messages(msgs, "oops", "malformed JSON: x")
    assert fix[-2] == {"role": "assistant", "content": "oops"} and "malformed JSON: x" in fix[-1]["content"]


def _client(server) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.base_url, model=server.model, max_retries=0, timeout=10.0))


def test_one_repair_call_fixes_a_recorded_bad_reply(faulty_server):
    faulty_server.queue(ok(MALFORMED_JSON), ok(RECORDED_OK[2]))
    s = _client(faulty_server).structured([{"role": "user", "content": "45 M"}], Patient, tag="t")
    assert s.value == GOOD and s.error is None and s.repaired and s.mode == "json_schema"
    assert s.raw == RECORDED_OK[2] and len(s.calls) == 2
    sent = faulty_server.chat_requests()[-1].body["messages"]
    assert sent[-2] == {"role": "assistant", "content": MALFORMED_JSON}


def test_disabled_client_makes_no_request():
    s = LLMClient(LLMConfig()).structured([{"role": "user", "content": "x"}], Patient)
    assert s.value is None and s.error == "LLM disabled: no base_url/model configured" and s.calls == []

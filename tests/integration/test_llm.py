"""The LLM client against real servers on 127.0.0.1: llama.cpp with SmolLM2-135M, and a fault-injecting one."""
from __future__ import annotations

import socket
import time
from typing import Literal

import pytest
from pydantic import BaseModel

from agents.llm import (
    LLMClient,
    LLMConfig,
    extract_json,
    forget_endpoint_modes,
    load_llm_config,
    load_prompt,
)
# tests/ is not a package and an installed distribution ships a top-level ``tests`` package, so the
# helpers are imported as ``support.*`` (pytest puts tests/ on sys.path); ``tests.support`` as a fallback.
try:
    import support.llama_server as srv_support
except ModuleNotFoundError:  # tests/ made a package
    import tests.support.llama_server as srv_support

faulty_server = srv_support.faulty_server     # fixtures
llama_server = srv_support.llama_server
MALFORMED_JSON, TRUNCATED_JSON = srv_support.MALFORMED_JSON, srv_support.TRUNCATED_JSON
garbage_body, http_error, malformed = srv_support.garbage_body, srv_support.http_error, srv_support.malformed
ok, stall, truncated = srv_support.ok, srv_support.stall, srv_support.truncated


class Patient(BaseModel):
    age: int
    sex: Literal["male", "female"]


GOOD = '{"age": 45, "sex": "male"}'
MSGS = [{"role": "user", "content": "A 45-year-old man with fever. Give his age and sex as JSON."}]


@pytest.fixture(autouse=True)
def _clean_env_and_modes(monkeypatch):
    for k in list(__import__("os").environ):
        if k.startswith("CLINICALRAG_LLM_") or k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
            monkeypatch.delenv(k, raising=False)
    forget_endpoint_modes()
    yield
    forget_endpoint_modes()


def client_for(srv, **kw) -> LLMClient:
    cfg = dict(base_url=srv.base_url, model=srv.model, timeout=5.0, max_retries=2, backoff=0.01, max_tokens=64)
    cfg.update(kw)
    return LLMClient(LLMConfig(**cfg))


# ------------------------------------------------------------------------------------------------
# real llama.cpp server (SmolLM2-135M-Instruct)


@pytest.mark.llm
def test_real_chat_completion_accounts_tokens_and_latency(llama_server):
    c = client_for(llama_server, timeout=60.0, max_retries=0)
    r = c.chat([{"role": "user", "content": "Name one symptom of influenza."}], tag="smoke", max_tokens=32)
    print(f"\nllama.cpp chat: latency={r.latency_s:.3f}s prompt_tokens={r.prompt_tokens} "
          f"completion_tokens={r.completion_tokens} finish={r.finish_reason}")
    assert r.error is None, r.error
    assert r.text.strip()
    assert r.prompt_tokens > 0 and 0 < r.completion_tokens <= 32
    assert not r.usage_estimated          # llama.cpp reports usage itself
    assert r.latency_s > 0 and r.attempts == 1
    assert r.model == llama_server.model
    assert c.usage.calls == 1 and c.usage.prompt_tokens == r.prompt_tokens
    assert c.log[-1].tag == "smoke" and c.log[-1].completion_tokens == r.completion_tokens


@pytest.mark.llm
def test_real_structured_output_mechanism(llama_server):
    c = client_for(llama_server, timeout=60.0, max_retries=0)
    s = c.structured(MSGS, Patient, tag="extract")
    print(f"\nllama.cpp structured: mode={s.mode} calls={len(s.calls)} repaired={s.repaired} "
          f"value={s.value} error={s.error} latency={[round(x.latency_s, 3) for x in s.calls]} "
          f"tokens={[(x.prompt_tokens, x.completion_tokens) for x in s.calls]}")
    assert len(s.calls) <= 3
    assert s.mode in ("json_schema", "json_object_schema", "json_object", "text")
    # either a validated value, or a clear error after the one repair call
    assert (s.value is not None and s.error is None) or (s.error and s.repaired)
    if s.mode != "json_schema":
        # llama_cpp.server refuses OpenAI's json_schema response_format; the client noticed and moved on
        assert s.calls[0].rejected_format and s.calls[0].error
    # the accepted mode is remembered for this endpoint: the next call starts there
    assert c.preferred_mode() == s.mode
    s2 = c.structured([{"role": "user", "content": "A 30-year-old woman with a cough. Age and sex as JSON."}],
                      Patient, tag="extract")
    assert s2.mode == s.mode and not s2.calls[0].rejected_format
    assert len(s2.calls) <= 2
    assert [r.tag for r in c.log] == ["extract"] * len(c.log)
    assert c.usage.calls == len(s.calls) + len(s2.calls)


@pytest.mark.llm
def test_real_server_tokenizer_count(llama_server):
    c = client_for(llama_server)
    msgs = [{"role": "user", "content": "Chest pain radiating to the left arm."}]
    n_server = c.count_prompt_tokens(msgs, use_server=True)
    n_local = c.count_prompt_tokens(msgs)
    assert c._server_tokenizer is True
    assert n_server > 3 and n_local > 3


# ------------------------------------------------------------------------------------------------
# faults (real HTTP server on 127.0.0.1 that misbehaves on command, and a closed port)


def test_connection_refused_is_retried_and_reported():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = LLMClient(LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=2, backoff=0.01))
    r = c.chat(MSGS, tag="x")
    assert r.error == "connection refused"
    assert r.attempts == 3 and r.text == ""
    s = c.structured(MSGS, Patient)
    assert s.value is None and s.error == "connection refused" and len(s.calls) == 1
    assert c.usage.errors == 2 and c.usage.attempts == 6


def test_timeout_is_retried_then_reported(faulty_server):
    faulty_server.default = stall(3.0, ok(GOOD))
    c = client_for(faulty_server, timeout=0.3, max_retries=1)
    t0 = time.perf_counter()
    r = c.chat(MSGS)
    took = time.perf_counter() - t0
    assert r.error == "timeout after 0.3s"
    assert r.attempts == 2 and len(faulty_server.chat_requests()) == 2
    assert 0.6 <= took < 2.5 and r.latency_s >= 0.6


def test_http_500_retried_with_backoff_until_success(faulty_server):
    faulty_server.queue(http_error(500), http_error(503), ok("fine"))
    c = client_for(faulty_server, max_retries=2, backoff=0.05)
    r = c.chat(MSGS)
    assert r.error is None and r.text == "fine" and r.attempts == 3
    ts = [q.ts for q in faulty_server.chat_requests()]
    assert len(ts) == 3
    assert ts[1] - ts[0] >= 0.05 and ts[2] - ts[1] >= 0.10     # exponential backoff
    assert c.usage.calls == 1 and c.usage.attempts == 3 and c.usage.errors == 0


def test_http_500_exhausts_retries(faulty_server):
    faulty_server.default = http_error(500, "model crashed")
    c = client_for(faulty_server, max_retries=2)
    r = c.chat(MSGS, tag="gen")
    assert r.error.startswith("HTTP 500") and "model crashed" in r.error
    assert r.attempts == 3 and len(faulty_server.chat_requests()) == 3
    assert c.log[-1].error == r.error and c.log[-1].attempts == 3 and c.log[-1].tag == "gen"


def test_429_is_retried_but_other_4xx_are_not(faulty_server):
    faulty_server.queue(http_error(429, "slow down"), ok("after rate limit"))
    c = client_for(faulty_server)
    assert c.chat(MSGS).text == "after rate limit"
    faulty_server.queue(http_error(401, "bad key"))
    r = c.chat(MSGS)
    assert r.error.startswith("HTTP 401") and r.attempts == 1
    assert len(faulty_server.chat_requests()) == 3


def test_raise_on_error_is_opt_in(faulty_server):
    from agents.llm import LLMError

    faulty_server.default = http_error(500)
    c = client_for(faulty_server, max_retries=0)
    assert c.chat(MSGS).error.startswith("HTTP 500")
    with pytest.raises(LLMError, match="HTTP 500"):
        c.chat(MSGS, raise_on_error=True)


def test_non_json_body_is_an_error_not_an_exception(faulty_server):
    faulty_server.default = garbage_body()
    c = client_for(faulty_server, max_retries=0)
    r = c.chat(MSGS)
    assert r.error.startswith("invalid response from server") and r.text == "" and r.attempts == 1


def test_malformed_json_content_sets_error_after_one_repair(faulty_server):
    faulty_server.default = malformed()
    c = client_for(faulty_server)
    s = c.structured(MSGS, Patient, tag="mee")
    assert s.value is None and s.error.startswith("malformed JSON")
    assert s.repaired and len(s.calls) == 2 and s.raw == MALFORMED_JSON
    repair_req = faulty_server.chat_requests()[-1].body
    assert repair_req["messages"][-2] == {"role": "assistant", "content": MALFORMED_JSON}
    assert "malformed JSON" in repair_req["messages"][-1]["content"]
    assert [r.mode for r in c.log] == ["json_schema", "json_schema+repair"]


def test_truncated_json_reports_truncation(faulty_server):
    faulty_server.default = truncated()
    s = client_for(faulty_server).structured(MSGS, Patient)
    assert s.value is None and "malformed JSON" in s.error and "truncated" in s.error
    assert s.raw == TRUNCATED_JSON and len(s.calls) == 2


def test_repair_fixes_a_validation_error(faulty_server):
    faulty_server.queue(ok('{"age": "forty-five", "sex": "man"}'), ok(GOOD))
    s = client_for(faulty_server).structured(MSGS, Patient)
    assert s.value == Patient(age=45, sex="male") and s.error is None
    assert s.repaired and len(s.calls) == 2
    fix_msg = faulty_server.chat_requests()[-1].body["messages"][-1]["content"]
    assert "age" in fix_msg and "sex" in fix_msg          # the validation errors were sent back


def test_repair_can_be_disabled(faulty_server):
    faulty_server.default = malformed()
    s = client_for(faulty_server).structured(MSGS, Patient, repair=False)
    assert s.value is None and not s.repaired and len(s.calls) == 1


def test_json_schema_request_shape(faulty_server):
    faulty_server.default = ok(GOOD)
    s = client_for(faulty_server).structured(MSGS, Patient)
    assert s.ok and s.mode == "json_schema" and not s.repaired and len(s.calls) == 1
    rf = faulty_server.chat_requests()[0].body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "Patient"
    assert rf["json_schema"]["schema"]["required"] == ["age", "sex"]


def test_format_ladder_falls_back_and_remembers(faulty_server):
    faulty_server.reject_formats = {"json_schema"}
    faulty_server.default = ok(GOOD)
    c = client_for(faulty_server)
    s = c.structured(MSGS, Patient)
    assert s.ok and s.mode == "json_object_schema" and len(s.calls) == 2
    assert s.calls[0].rejected_format and s.calls[0].attempts == 1       # a rejection is not retried
    sent = faulty_server.chat_requests()[1].body
    assert sent["response_format"]["type"] == "json_object" and "schema" in sent["response_format"]
    assert '"age"' in sent["messages"][0]["content"]                        # schema pasted into the prompt
    n = len(faulty_server.chat_requests())
    s2 = LLMClient(c.config).structured(MSGS, Patient)                       # another client, same endpoint
    assert s2.mode == "json_object_schema" and len(faulty_server.chat_requests()) == n + 1


def test_format_ladder_reaches_plain_text_with_fences(faulty_server):
    faulty_server.reject_formats = {"json_schema", "json_object"}
    faulty_server.default = ok(f"Sure! Here it is:\n```json\n{GOOD}\n```\nAnything else?")
    s = client_for(faulty_server).structured(MSGS, Patient)
    assert s.ok and s.mode == "text" and s.value.age == 45
    assert len(s.calls) == 4 and "response_format" not in faulty_server.chat_requests()[-1].body


def test_every_format_rejected_gives_clear_error(faulty_server):
    faulty_server.reject_formats = {"json_schema", "json_object"}
    faulty_server.default = http_error(400, "bad request")
    s = client_for(faulty_server).structured(MSGS, Patient)
    assert s.value is None and s.error.startswith("HTTP 400") and len(s.calls) == 4


def test_missing_usage_is_estimated_with_project_tokenizer(faulty_server):
    faulty_server.default = ok("fever and cough", usage=False)
    r = client_for(faulty_server).chat(MSGS)
    assert r.usage_estimated and r.completion_tokens == 3 and r.prompt_tokens > 5


# ------------------------------------------------------------------------------------------------
# configuration


def test_disabled_config_makes_no_request(faulty_server):
    c = LLMClient(LLMConfig(base_url=faulty_server.base_url, model=""))
    assert not c.enabled
    assert "disabled" in c.chat(MSGS).error
    s = c.structured(MSGS, Patient)
    assert s.value is None and "disabled" in s.error and s.calls == []
    assert faulty_server.requests == []
    assert not LLMConfig().enabled and not load_llm_config(environ={}).enabled


def test_config_precedence_cli_env_file(tmp_path):
    toml = tmp_path / "llm.toml"
    toml.write_text('[llm]\nbase_url = "http://file:1/v1"\nmodel = "file-model"\ntimeout = 7\nmax_tokens = 99\n')
    env = {"CLINICALRAG_LLM_MODEL": "env-model", "CLINICALRAG_LLM_TIMEOUT": "9.5"}
    cfg = load_llm_config({"timeout": 3.0, "max_tokens": None}, toml, environ=env)
    assert cfg.base_url == "http://file:1/v1"        # file only
    assert cfg.model == "env-model"                  # env beats file
    assert cfg.timeout == 3.0                        # CLI beats env
    assert cfg.max_tokens == 99                      # None override ignored
    assert cfg.enabled and cfg.temperature == 0.0

    yml = tmp_path / "llm.yaml"
    yml.write_text("base_url: http://yaml:2/v1\nmodel: y\njson_mode: json_object\n")
    cfg = load_llm_config(None, None, environ={"CLINICALRAG_LLM_CONFIG": str(yml), "OPENAI_API_KEY": "sk-x"})
    assert (cfg.base_url, cfg.model, cfg.json_mode, cfg.api_key) == ("http://yaml:2/v1", "y", "json_object", "sk-x")
    assert cfg.public_dict()["api_key"] == "***"


def test_from_env_and_openai_fallback():
    env = {"OPENAI_BASE_URL": "http://o:1/v1", "CLINICALRAG_LLM_BASE_URL": "http://c:2/v1",
           "CLINICALRAG_LLM_MODEL": "m", "CLINICALRAG_LLM_MAX_RETRIES": "4", "CLINICALRAG_LLM_SEED": "7"}
    cfg = LLMConfig.from_env(environ=env)
    assert cfg.base_url == "http://c:2/v1" and cfg.max_retries == 4 and cfg.seed == 7
    assert LLMConfig.from_env(environ={"OPENAI_BASE_URL": "http://o:1/v1"}).base_url == "http://o:1/v1"


def test_bad_config_is_a_clear_error(tmp_path):
    bad = tmp_path / "llm.toml"
    bad.write_text('modle = "typo"\n')
    with pytest.raises(ValueError, match="unknown keys.*modle"):
        load_llm_config(None, bad, environ={})
    with pytest.raises(FileNotFoundError):
        load_llm_config(None, tmp_path / "missing.toml", environ={})
    with pytest.raises(ValueError, match="unknown LLM setting"):
        load_llm_config({"temprature": 1.0}, None, environ={})
    with pytest.raises(ValueError):
        load_llm_config(None, None, environ={"CLINICALRAG_LLM_JSON_MODE": "xml"})


# ------------------------------------------------------------------------------------------------
# helpers


def test_extract_json_variants():
    assert extract_json(GOOD) == {"age": 45, "sex": "male"}
    assert extract_json(f"Answer:\n```json\n{GOOD}\n```") == {"age": 45, "sex": "male"}
    assert extract_json('blah {"a": {"b": [1, 2]}} trailing {"c": 1}') == {"a": {"b": [1, 2]}}
    for bad in ("", "no json here", TRUNCATED_JSON, "[1, 2]"):
        with pytest.raises(ValueError, match="malformed JSON"):
            extract_json(bad)


def test_load_prompt_errors_and_substitution():
    with pytest.raises(ValueError):
        load_prompt("../secrets")
    with pytest.raises(FileNotFoundError):
        load_prompt("no_such_prompt_here")
    from importlib.resources import files

    prompts = sorted(p.name[:-4] for p in files("agents").joinpath("prompts").iterdir() if p.name.endswith(".txt"))
    if not prompts:
        pytest.skip("no prompt files shipped yet")
    name = prompts[0]
    raw = load_prompt(name)
    assert raw.strip()
    import string

    names = {m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(raw)} - {None}
    if names:
        filled = load_prompt(name, **{n: f"<{n}-value>" for n in names})
        assert all(f"<{n}-value>" in filled for n in names) and "$" + sorted(names)[0] not in filled
        with pytest.raises(KeyError):
            load_prompt(name, unrelated="x")

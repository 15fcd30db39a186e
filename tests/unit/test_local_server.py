"""The managed llama.cpp server (agents/llm/server.py): ports, its command line against llama.cpp's own parser, and
start-up failures (a child that dies early, a readiness timeout) that must leave no process behind. Serving a real
model is in tests/integration/test_local_llm.py."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agents.llm import server
from agents.llm.server import LocalServer, LocalServerError, default_threads, free_port, port_open

needs_llama_cpp = pytest.mark.skipif(bool(server.missing_modules()),
                                     reason="llama-cpp-python[server] is not installed (make install-llm)")


def test_free_port_is_bindable_on_loopback_and_closed():
    port = free_port()
    assert 1024 <= port <= 65535
    assert not port_open(port)
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        assert port_open(port)


def test_command_line(tmp_path):
    srv = LocalServer(tmp_path / "Tiny-Model.Q4.gguf", n_threads=3, n_ctx=4096, port=5555, log_dir=tmp_path)
    cmd = srv.command()
    assert cmd[:3] == [sys.executable, "-m", "llama_cpp.server"]
    opts = dict(zip(cmd[3::2], cmd[4::2]))
    assert opts == {"--model": str(tmp_path / "Tiny-Model.Q4.gguf"), "--model_alias": "Tiny-Model.Q4",
                    "--host": "127.0.0.1", "--port": "5555", "--n_threads": "3", "--n_threads_batch": "3",
                    "--n_ctx": "4096", "--verbose": "False"}
    assert srv.base_url == "http://127.0.0.1:5555/v1" and srv.model == "Tiny-Model.Q4"
    assert srv.log_path == tmp_path / "llama-server-5555.log"
    assert LocalServer(tmp_path / "m.gguf", alias="a", log_dir=tmp_path).n_threads == default_threads() >= 1


@needs_llama_cpp
def test_llama_cpp_accepts_every_flag_of_the_command(tmp_path):
    """llama-cpp-python's server help lists every option the command line uses (a renamed flag fails here)."""
    helptext = subprocess.run([sys.executable, "-m", "llama_cpp.server", "--help"], capture_output=True, text=True,
                              timeout=120, check=True).stdout
    known = set(re.findall(r"--[a-z_]+", helptext))
    flags = [a for a in LocalServer(tmp_path / "m.gguf", port=1, log_dir=tmp_path).command() if a.startswith("--")]
    assert flags and set(flags) <= known, set(flags) - known


def _gone(srv: LocalServer) -> bool:
    return srv.proc is not None and srv.proc.poll() is not None and not port_open(srv.port)


@needs_llama_cpp
def test_a_child_that_dies_during_start_up_is_reported_with_its_log(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)              # the magic, then nothing llama.cpp can load
    srv = LocalServer(bad, n_threads=1, n_ctx=512, log_dir=tmp_path / "logs")
    with pytest.raises(LocalServerError) as err:
        srv.start(ready_timeout=120)
    msg = str(err.value)
    assert "exited with code" in msg and "during start-up" in msg and str(srv.log_path) in msg
    assert "log tail" in msg and len(msg.split("---")[-1].strip()) > 0
    assert _gone(srv) and not srv.alive() and srv not in server._RUNNING


@needs_llama_cpp
def test_a_readiness_timeout_stops_the_child(tmp_path):
    model = tmp_path / "slow.gguf"
    model.write_bytes(b"GGUF" + b"\x00" * 64)
    srv = LocalServer(model, n_threads=1, n_ctx=512, log_dir=tmp_path)
    with pytest.raises(LocalServerError, match=r"not ready after 0s"):
        srv.start(ready_timeout=0)
    assert _gone(srv) and srv not in server._RUNNING


def test_a_missing_model_file_is_refused_before_any_process(tmp_path):
    srv = LocalServer(tmp_path / "missing.gguf", log_dir=tmp_path)
    with pytest.raises(LocalServerError, match="model file not found|make install-llm"):
        srv.start()
    assert srv.proc is None and not Path(srv.log_path).exists()

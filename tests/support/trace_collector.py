"""A LangSmith-compatible trace collector on 127.0.0.1: a real HTTP endpoint the ``langsmith`` client talks to
(``LANGSMITH_ENDPOINT``), so the run tree that LangGraph and our LLM wrapper send can be checked and printed
without a hosted LangSmith.

It answers ``GET /info`` (batch ingestion as JSON, not multipart), records ``POST /runs/batch`` (``post`` and
``patch`` lists), ``POST /runs`` and ``PATCH /runs/<id>``, and rebuilds the tree from ``parent_run_id``.

    with TraceCollector() as tc:
        os.environ.update(tc.env())        # LANGSMITH_TRACING / _ENDPOINT / _API_KEY / _PROJECT
        ... run the graph ...
        tc.flush()                         # let the client's background thread send
        print(tc.tree_text())
"""
from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class TraceCollector:
    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _body(self) -> Any:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                return json.loads(raw or b"null")

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                if self.path.startswith("/info"):
                    self._send(200, {"version": "collector", "batch_ingest_config": {
                        "use_multipart_endpoint": False, "scale_up_qsize_trigger": 1000,
                        "scale_up_nthreads_limit": 1, "scale_down_nempty_trigger": 4, "size_limit": 100,
                        "size_limit_bytes": 20_000_000}})
                else:
                    self._send(404, {"detail": "not found"})

            def do_POST(self):  # noqa: N802
                body = self._body()
                if self.path.startswith("/runs/batch"):
                    for run in body.get("post") or []:
                        collector._upsert(run)
                    for run in body.get("patch") or []:
                        collector._upsert(run)
                    self._send(200, {})
                elif self.path.rstrip("/") == "/runs":
                    collector._upsert(body)
                    self._send(200, {})
                else:
                    self._send(404, {"detail": "not found"})

            def do_PATCH(self):  # noqa: N802
                if self.path.startswith("/runs/"):
                    body = self._body() or {}
                    body.setdefault("id", self.path.rsplit("/", 1)[-1])
                    collector._upsert(body)
                    self._send(200, {})
                else:
                    self._send(404, {"detail": "not found"})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _upsert(self, run: dict[str, Any]) -> None:
        with self._lock:
            rid = str(run.get("id"))
            self.runs.setdefault(rid, {}).update({k: v for k, v in run.items() if v is not None})

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def __enter__(self) -> "TraceCollector":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def env(self, project: str = "clinicalrag-local") -> dict[str, str]:
        return {"LANGSMITH_TRACING": "true", "LANGSMITH_ENDPOINT": self.url, "LANGSMITH_API_KEY": "local-collector",
                "LANGSMITH_PROJECT": project}

    @staticmethod
    def flush(timeout: float = 30.0) -> None:
        """Wait until the langsmith client has sent what it queued."""
        try:
            from langchain_core.tracers.langchain import wait_for_all_tracers  # noqa: PLC0415

            wait_for_all_tracers()
        except ImportError:
            pass
        try:
            from langsmith.run_trees import get_cached_client  # noqa: PLC0415

            get_cached_client().flush()
        except Exception:  # noqa: BLE001 — older/newer client without these helpers: wait a moment instead
            time.sleep(min(timeout, 3.0))

    # ---- the tree --------------------------------------------------------------------------------------------
    def children(self, parent: str | None) -> list[dict[str, Any]]:
        with self._lock:
            runs = list(self.runs.values())
        kids = [r for r in runs if (str(r.get("parent_run_id")) if r.get("parent_run_id") else None) == parent]
        return sorted(kids, key=lambda r: (r.get("dotted_order") or "", r.get("start_time") or ""))

    def roots(self) -> list[dict[str, Any]]:
        return self.children(None)

    def tree_text(self, root: dict[str, Any] | None = None, skip: tuple[str, ...] = ()) -> str:
        """An indented tree: ``name [run_type]``, LLM runs with their tag; runs named in ``skip`` are left out
        with their children lifted (LangGraph's internal channel writers, routers)."""
        lines: list[str] = []

        def walk(run: dict[str, Any], depth: int) -> None:
            name = str(run.get("name"))
            if name in skip:
                for c in self.children(str(run["id"])):
                    walk(c, depth)
                return
            lines.append("  " * depth + f"{name} [{run.get('run_type')}]" + (" ERROR" if run.get("error") else ""))
            for c in self.children(str(run["id"])):
                walk(c, depth + 1)

        for r in ([root] if root else self.roots()):
            walk(r, 0)
        return "\n".join(lines)

"""An optional on-disk cache of chat completions, keyed by the whole request (model, messages, sampling settings,
seed, response format). A benchmark re-run of unchanged cases then costs no calls; a repeat that must differ
passes another ``seed``. Only successful answers are stored. SQLite, safe across threads and processes."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

_SCHEMA = """CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY, model TEXT, text TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,
    finish_reason TEXT, latency_s REAL, created REAL)"""


def request_key(params: dict[str, Any]) -> str:
    """A stable digest of a chat-completions request (key order and whitespace do not matter)."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """``get(params) -> dict | None`` and ``put(params, answer)`` over one SQLite file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as c:
            c.execute(_SCHEMA)
        self.hits = 0
        self.misses = 0

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            self._local.conn = conn
        return conn

    def get(self, params: dict[str, Any]) -> dict[str, Any] | None:
        row = self._conn().execute(
            "SELECT model, text, prompt_tokens, completion_tokens, finish_reason, latency_s FROM responses "
            "WHERE key = ?", (request_key(params),)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        keys = ("model", "text", "prompt_tokens", "completion_tokens", "finish_reason", "latency_s")
        return dict(zip(keys, row))

    def put(self, params: dict[str, Any], answer: dict[str, Any]) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (request_key(params), answer.get("model"), answer.get("text", ""), int(answer.get("prompt_tokens", 0)),
             int(answer.get("completion_tokens", 0)), answer.get("finish_reason"),
             float(answer.get("latency_s", 0.0)), time.time()))

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

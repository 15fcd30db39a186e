"""Audit trail of runs: an append-only, hash-chained JSON Lines file.

Every record written by :meth:`AuditLog.append` gets

- ``run_id``: kept if the caller set one, else a new time-sortable id (32 hex characters: 8 of Unix seconds,
  then 24 random, so ids sort by creation second and 16 characters tell runs apart);
- ``ts``: UTC ISO-8601 time; ``seq``: 0, 1, 2, ... in file order;
- ``prev_hash``: the ``hash`` of the previous record (64 zeros for the first);
- ``hash``: sha256 of the canonical JSON of the record without ``hash`` (sorted keys, ``(",", ":")``
  separators, ASCII), so each record seals the whole chain before it.

Writers take an exclusive ``fcntl`` lock on ``<log>.lock``, append one line, flush and fsync, then update the
anchor file ``audit.head`` (the last ``seq`` and ``hash``) atomically (temp file + fsync + rename). The anchor
makes removal of the *last* records detectable, which the chain alone cannot show.

:meth:`AuditLog.verify` recomputes everything and names the first bad record: "broken JSON",
"edited record" (hash mismatch), "removed record" (a gap in ``seq``, or the log ends before the anchor),
"reordered" (``seq`` out of order), "inserted record" (a repeated ``seq``), "anchor mismatch"; a record
rewritten with a recomputed hash shows as "edited record" because the next record's ``prev_hash`` no longer
matches.
Limits: someone who rewrites a record *and* recomputes every later hash and the anchor is not detected;
for that, copy the anchor hash somewhere they cannot write (e.g. print it in a report).

Suggested record shape (what ``clinicalrag trace show`` pretty-prints; other keys are shown as they are)::

    {"kind": "run", "inputs": {"presentation": "..."}, "entities": [{"text", "category", "concept_id", ...}],
     "evidence": [{"id", "score", "role"}], "nodes": [{"node", "prompt", "output", "model", "tokens",
     "latency_ms"}], "verification": {...}, "escalation": {...}, "answer": "...", "references": [...],
     "code_version": "...", "config_hash": "..."}

Helpers: :func:`langsmith_enabled`, :func:`code_version`, :func:`config_hash`.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import fcntl
import hashlib
import json
import os
import secrets
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from agents.llm.budget import langsmith_enabled  # noqa: F401  (re-exported)

GENESIS = "0" * 64
HEAD_NAME = "audit.head"


# ---------------------------------------------------------------------------------------------------------
# canonical JSON and helpers


def _default(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    if isinstance(obj, (Path, _dt.datetime, _dt.date)):
        return str(obj)
    if hasattr(obj, "tolist"):          # numpy arrays and scalars
        return obj.tolist()
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return repr(obj)


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=_default,
                      allow_nan=False)


def _jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON data (NaN/inf become null), so the hash covers exactly what is stored."""
    def fix(x: Any) -> Any:
        if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
            return None
        if isinstance(x, dict):
            return {str(k): fix(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [fix(v) for v in x]
        return x
    return fix(json.loads(json.dumps(obj, default=_default)))


def record_hash(record: dict) -> str:
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body).encode("ascii")).hexdigest()


def new_run_id() -> str:
    """32 hex chars: 8 of Unix time in seconds (sortable) + 24 random."""
    return f"{int(time.time()) & 0xFFFFFFFF:08x}{secrets.token_hex(12)}"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def config_hash(obj: Any) -> str:
    """Short stable hash (16 hex) of any JSON-able configuration (pydantic models and dataclasses too)."""
    return hashlib.sha256(canonical_json(_jsonable(obj)).encode("ascii")).hexdigest()[:16]


@lru_cache(maxsize=1)
def code_version() -> str:
    """``git describe --always --dirty`` of the checkout, else the installed package version, else "unknown"."""
    root = Path(__file__).resolve().parent.parent
    if (root / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--tags"],
                                 capture_output=True, text=True, timeout=5)
            if out.returncode == 0 and out.stdout.strip():
                return f"git:{out.stdout.strip()}"
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

        return f"clinicalrag {version('clinicalrag')}"
    except PackageNotFoundError:
        return "unknown"


# ---------------------------------------------------------------------------------------------------------


@dataclass
class VerifyReport:
    ok: bool
    n_records: int
    first_bad_seq: int | None = None
    problem: str | None = None
    detail: str = ""
    head_seq: int | None = None
    head_hash: str | None = None

    def message(self) -> str:
        if self.ok:
            return f"audit log OK: {self.n_records} records, chain intact, head hash {(self.head_hash or '')[:16]}"
        return f"audit log BROKEN at record seq {self.first_bad_seq}: {self.problem}. {self.detail}".strip()


class AuditLog:
    def __init__(self, path: Path | str | None = None):
        if path is None:
            from knowledge.paths import trace_dir  # noqa: PLC0415

            path = trace_dir() / "audit.jsonl"
        self.path = Path(path)
        self.head_path = self.path.with_name(HEAD_NAME if self.path.name == "audit.jsonl"
                                             else self.path.name + ".head")
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    # -- locking -------------------------------------------------------------------------------------------
    @contextmanager
    def _locked(self, exclusive: bool = True) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as lf:
            fcntl.flock(lf.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(lf.fileno(), fcntl.LOCK_UN)

    # -- anchor --------------------------------------------------------------------------------------------
    def _read_head(self) -> dict | None:
        try:
            return json.loads(self.head_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {"seq": None, "hash": None, "broken": True}

    def _write_head(self, seq: int, h: str) -> None:
        tmp = self.head_path.with_name(self.head_path.name + f".tmp{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps({"seq": seq, "hash": h, "ts": utc_now()}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.head_path)
        try:
            dfd = os.open(self.head_path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass

    def _last_line(self) -> str | None:
        try:
            with open(self.path, "rb") as f:
                f.seek(0, os.SEEK_END)
                end = f.tell()
                if end == 0:
                    return None
                pos, buf = end, b""
                while pos > 0:
                    step = min(65536, pos)
                    pos -= step
                    f.seek(pos)
                    buf = f.read(step) + buf
                    lines = buf.rstrip(b"\n").split(b"\n")
                    if len(lines) > 1 or pos == 0:
                        return lines[-1].decode("utf-8", "replace")
        except FileNotFoundError:
            return None
        return None

    # -- write ---------------------------------------------------------------------------------------------
    def append(self, record: dict) -> dict:
        """Append ``record`` (not modified) and return the stored record with run_id/ts/seq/prev_hash/hash."""
        if not isinstance(record, dict):
            raise TypeError(f"audit record must be a dict, not {type(record).__name__}")
        body = _jsonable({k: v for k, v in record.items() if k not in ("hash", "prev_hash", "seq")})
        body.setdefault("run_id", new_run_id())
        body["ts"] = body.get("ts") or utc_now()
        with self._locked():
            prev_seq, prev_hash = -1, GENESIS
            last = self._last_line()
            if last is not None:
                try:
                    rec = json.loads(last)
                    prev_seq, prev_hash = int(rec["seq"]), str(rec["hash"])
                except (ValueError, KeyError, TypeError):
                    head = self._read_head() or {}
                    if head.get("seq") is None:
                        raise RuntimeError(f"cannot append to {self.path}: its last line is not a valid record "
                                           "and there is no anchor; run `clinicalrag trace verify`") from None
                    prev_seq, prev_hash = int(head["seq"]), str(head["hash"])
            body["seq"] = prev_seq + 1
            body["prev_hash"] = prev_hash
            body["hash"] = record_hash(body)
            line = canonical_json(body) + "\n"
            with open(self.path, "a", encoding="ascii") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self._write_head(body["seq"], body["hash"])
        return body

    # -- read ----------------------------------------------------------------------------------------------
    def _lines(self) -> list[str]:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                return [ln.rstrip("\n") for ln in f if ln.strip()]
        except FileNotFoundError:
            return []

    def records(self) -> list[dict]:
        """All parseable records, in file order."""
        out = []
        for ln in self._lines():
            try:
                rec = json.loads(ln)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
        return out

    def list(self, limit: int = 20) -> list[dict]:
        """Summaries of the last ``limit`` records, newest first."""
        recs = self.records()
        out = [summarize(r) for r in recs[-limit:]] if limit > 0 else []
        return out[::-1]

    def get(self, run_id_prefix: str) -> dict:
        """The record whose run_id starts with the prefix (the latest one when a run wrote several)."""
        prefix = run_id_prefix.strip().lower()
        if not prefix:
            raise KeyError("empty run id")
        hits = [r for r in self.records() if str(r.get("run_id", "")).lower().startswith(prefix)]
        if not hits:
            raise KeyError(f"no run with id starting {run_id_prefix!r} in {self.path}")
        ids = sorted({str(r.get("run_id")) for r in hits})
        if len(ids) > 1:
            raise KeyError(f"run id prefix {run_id_prefix!r} is ambiguous: "
                           + ", ".join(i[:12] for i in ids[:5]) + (" ..." if len(ids) > 5 else ""))
        return hits[-1]

    def verify(self) -> VerifyReport:
        with self._locked(exclusive=False):
            lines = self._lines()
            head = self._read_head()
        parsed: list[dict | None] = []
        for ln in lines:
            try:
                rec = json.loads(ln)
                parsed.append(rec if isinstance(rec, dict) else None)
            except ValueError:
                parsed.append(None)
        seqs = [r.get("seq") if r else None for r in parsed]
        prev = GENESIS
        for i, rec in enumerate(parsed):
            if rec is None:
                return VerifyReport(False, len(lines), i, "broken JSON",
                                    f"line {i + 1} is not a JSON record: {lines[i][:80]!r}")
            seq = rec.get("seq")
            if not isinstance(seq, int) or "hash" not in rec:
                return VerifyReport(False, len(lines), i, "broken record", f"line {i + 1} has no seq/hash")
            if record_hash(rec) != rec["hash"]:
                return VerifyReport(False, len(lines), seq, "edited record",
                                    f"line {i + 1} (run {str(rec.get('run_id'))[:12]}): content does not match "
                                    "its hash")
            if seq != i:
                if seq > i and i in seqs[i + 1:]:
                    return VerifyReport(False, len(lines), i, "reordered",
                                        f"line {i + 1} holds seq {seq}; seq {i} comes later")
                if seq > i:
                    return VerifyReport(False, len(lines), i, "removed record",
                                        f"seq jumps from {i - 1} to {seq} at line {i + 1}")
                problem = "reordered" if seq in seqs[:i] and seqs.count(seq) == 1 else "inserted record"
                if seqs.count(seq) > 1:
                    problem = "inserted record"
                return VerifyReport(False, len(lines), seq, problem,
                                    f"line {i + 1} holds seq {seq}, expected {i}")
            if rec.get("prev_hash") != prev:
                if i == 0:
                    return VerifyReport(False, len(lines), 0, "removed record",
                                        "the first record does not start the chain (records before it removed?)")
                return VerifyReport(False, len(lines), seq - 1, "edited record",
                                    f"line {i}: record seq {seq - 1} was rewritten (its hash was recomputed, but "
                                    f"seq {seq} sealed a different one)")
            prev = rec["hash"]
        n = len(parsed)
        last_seq = n - 1
        if head is None:
            if n:
                return VerifyReport(False, n, last_seq, "anchor missing",
                                    f"{self.head_path.name} is missing; the end of the log cannot be checked")
            return VerifyReport(True, 0)
        if head.get("broken") or not isinstance(head.get("seq"), int):
            return VerifyReport(False, n, last_seq, "anchor broken", f"{self.head_path.name} is unreadable")
        hseq, hhash = head["seq"], head.get("hash")
        if hseq > last_seq:
            return VerifyReport(False, n, last_seq + 1, "removed record",
                                f"the log ends at seq {last_seq} but the anchor records seq {hseq}",
                                hseq, hhash)
        if hseq < last_seq:
            return VerifyReport(False, n, hseq + 1, "anchor mismatch",
                                f"records after the anchored seq {hseq} (appended outside the log API?)",
                                hseq, hhash)
        if n and hhash != prev:
            return VerifyReport(False, n, last_seq, "edited record",
                                "the last record's hash differs from the anchor", hseq, hhash)
        return VerifyReport(True, n, None, None, "", hseq, hhash)


# ---------------------------------------------------------------------------------------------------------


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def summarize(rec: dict) -> dict:
    """One-line view of a record for ``trace list``."""
    inputs = rec.get("inputs") if isinstance(rec.get("inputs"), dict) else {}
    text = (inputs.get("presentation") or inputs.get("question") or inputs.get("query")
            or rec.get("presentation") or rec.get("question") or "")
    ver = rec.get("verification") if isinstance(rec.get("verification"), dict) else {}
    esc = rec.get("escalation")
    top = None
    diff = _get(rec, "draft", "differential") or rec.get("differential")
    if isinstance(diff, list) and diff and isinstance(diff[0], dict):
        top = diff[0].get("diagnosis")
    dx = rec.get("diagnostic_confidence") if isinstance(rec.get("diagnostic_confidence"), dict) else {}
    if top is None and dx.get("items"):
        top = dx["items"][0].get("diagnosis")
    escalated = None
    if isinstance(esc, dict):
        escalated = esc.get("escalated", esc.get("needed", bool(esc)))
    elif esc is not None:
        escalated = bool(esc)
    return {
        "seq": rec.get("seq"), "run_id": rec.get("run_id"), "ts": rec.get("ts"), "kind": rec.get("kind"),
        "input": " ".join(str(text).split())[:80],
        "top_diagnosis": top,
        "passed": ver.get("passed"),
        "escalated": escalated,
        "diagnostic_top": dx.get("top"),
        "diagnostic_level": dx.get("level"),
    }


__all__ = ["AuditLog", "VerifyReport", "summarize", "langsmith_enabled", "code_version", "config_hash",
           "canonical_json", "record_hash", "new_run_id"]

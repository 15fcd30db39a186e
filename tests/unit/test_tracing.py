"""The hash-chained audit trail: chain, tamper detection, concurrent writers, and the `trace` CLI."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clinicalrag.cli import main
from graph.tracing import AuditLog, code_version, config_hash, langsmith_enabled, record_hash

PROJECT = Path(__file__).resolve().parents[2]


def _record(i: int) -> dict:
    return {
        "kind": "ask",
        "inputs": {"presentation": f"Case {i}: 9-year-old with recurrent wheezing and night cough"},
        "entities": [{"text": "wheezing", "category": "symptom", "concept_id": "SYMP:0000604"}],
        "evidence": [{"id": "G:DOID:2841|has_symptom|SYMP:0000604", "role": "G", "score": 0.91},
                     {"id": "B:0000010_1#0", "role": "B", "score": 0.74}],
        "nodes": [{"node": "verify", "ms": 12.5, "summary": {"claims": 3},
                   "llm_calls": [{"tag": "verify", "model": "smollm2", "prompt_tokens": 812,
                                  "completion_tokens": 96, "latency_s": 1.7}]}],
        "verification": {"passed": i % 2 == 0, "supported_ratio": 1.0,
                         "claims": [{"claim": "Asthma causes wheezing.", "verdict": "SUPPORTED",
                                     "confidence": 0.93, "citations": ["B:0000010_1#0"]}]},
        "escalation": {"escalated": i % 2 == 1, "reasons": [] if i % 2 == 0 else ["claim 2 has no citation"]},
        "draft": {"differential": [{"rank": 1, "diagnosis": "Asthma"}]},
        "answer": "1. Asthma: recurrent wheezing [B:0000010_1#0].",
        "score": float("nan"),   # NaN must not break hashing (stored as null)
    }


def _chain(tmp_path: Path, n: int = 5) -> AuditLog:
    log = AuditLog(tmp_path / "audit.jsonl")
    for i in range(n):
        log.append(_record(i))
    return log


def _lines(log: AuditLog) -> list[str]:
    return log.path.read_text().splitlines()


def _write(log: AuditLog, lines: list[str]) -> None:
    log.path.write_text("".join(ln + "\n" for ln in lines))


def test_chain_of_five_verifies(tmp_path):
    log = _chain(tmp_path)
    rep = log.verify()
    assert rep.ok, rep.message()
    assert rep.n_records == 5 and rep.head_seq == 4
    recs = log.records()
    assert [r["seq"] for r in recs] == list(range(5))
    assert recs[0]["prev_hash"] == "0" * 64
    for a, b in zip(recs, recs[1:]):
        assert b["prev_hash"] == a["hash"]
        assert a["run_id"] <= b["run_id"] or a["run_id"][:8] == b["run_id"][:8]  # sortable by time
    for r in recs:
        assert r["hash"] == record_hash(r) and r["ts"].endswith("Z") and len(r["run_id"]) == 32
    assert recs[0]["score"] is None
    head = json.loads((tmp_path / "audit.head").read_text())
    assert head["seq"] == 4 and head["hash"] == recs[-1]["hash"]


def test_append_keeps_caller_run_id_and_does_not_mutate(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    rec = {"run_id": "myrun-1", "kind": "ask"}
    out = log.append(rec)
    assert rec == {"run_id": "myrun-1", "kind": "ask"}
    assert out["run_id"] == "myrun-1" and out["seq"] == 0
    assert log.get("myrun")["hash"] == out["hash"]
    with pytest.raises(TypeError):
        log.append(["not", "a", "dict"])  # type: ignore[arg-type]


def test_edited_field_detected(tmp_path):
    log = _chain(tmp_path)
    lines = _lines(log)
    rec = json.loads(lines[2])
    rec["verification"]["passed"] = not rec["verification"]["passed"]
    lines[2] = json.dumps(rec, sort_keys=True, separators=(",", ":"))
    _write(log, lines)
    rep = log.verify()
    assert not rep.ok and rep.problem == "edited record" and rep.first_bad_seq == 2


def test_edited_record_with_recomputed_hash_detected(tmp_path):
    log = _chain(tmp_path)
    lines = _lines(log)
    rec = json.loads(lines[1])
    rec["answer"] = "forged answer"
    rec["hash"] = record_hash(rec)     # a careful forger recomputes this record's hash ...
    lines[1] = json.dumps(rec, sort_keys=True, separators=(",", ":"))
    _write(log, lines)
    rep = log.verify()                 # ... but the next record still seals the original one
    assert not rep.ok and rep.first_bad_seq == 1 and rep.problem == "edited record"


def test_removed_middle_record_detected(tmp_path):
    log = _chain(tmp_path)
    lines = _lines(log)
    del lines[2]
    _write(log, lines)
    rep = log.verify()
    assert not rep.ok and rep.problem == "removed record" and rep.first_bad_seq == 2


def test_removed_last_record_detected_by_anchor(tmp_path):
    log = _chain(tmp_path)
    _write(log, _lines(log)[:-1])
    rep = log.verify()
    assert not rep.ok and rep.problem == "removed record" and rep.first_bad_seq == 4
    assert "anchor" in rep.detail


def test_reordered_records_detected(tmp_path):
    log = _chain(tmp_path)
    lines = _lines(log)
    lines[1], lines[3] = lines[3], lines[1]
    _write(log, lines)
    rep = log.verify()
    assert not rep.ok and rep.problem == "reordered" and rep.first_bad_seq == 1


def test_inserted_duplicate_record_detected(tmp_path):
    log = _chain(tmp_path)
    lines = _lines(log)
    lines.insert(3, lines[2])
    _write(log, lines)
    rep = log.verify()
    assert not rep.ok and rep.problem == "inserted record"


def test_broken_json_detected(tmp_path):
    log = _chain(tmp_path)
    lines = _lines(log)
    lines[3] = lines[3][: len(lines[3]) // 2]
    _write(log, lines)
    rep = log.verify()
    assert not rep.ok and rep.problem == "broken JSON" and rep.first_bad_seq == 3


def test_missing_anchor_reported(tmp_path):
    log = _chain(tmp_path, 2)
    (tmp_path / "audit.head").unlink()
    rep = log.verify()
    assert not rep.ok and rep.problem == "anchor missing"


def test_empty_log_is_ok(tmp_path):
    rep = AuditLog(tmp_path / "audit.jsonl").verify()
    assert rep.ok and rep.n_records == 0


def _writer(path: str, tag: str, n: int) -> None:
    log = AuditLog(Path(path))
    for i in range(n):
        log.append({"kind": "ask", "writer": tag, "i": i, "answer": "x" * (2000 + i)})


def test_concurrent_appends_from_two_processes_keep_chain(tmp_path):
    path = tmp_path / "audit.jsonl"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), tag, 25)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    log = AuditLog(path)
    rep = log.verify()
    assert rep.ok, rep.message()
    assert rep.n_records == 50
    recs = log.records()
    assert sorted((r["writer"], r["i"]) for r in recs) == sorted((t, i) for t in "ab" for i in range(25))


def test_default_path_under_trace_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CLINICALRAG_HOME", str(tmp_path))
    log = AuditLog()
    assert log.path == tmp_path / "traces" / "audit.jsonl"
    log.append({"kind": "ask"})
    assert (tmp_path / "traces" / "audit.head").exists()


def test_helpers():
    assert langsmith_enabled({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "k"})
    assert langsmith_enabled({"LANGCHAIN_TRACING_V2": "1", "LANGCHAIN_API_KEY": "k"})
    assert not langsmith_enabled({"LANGSMITH_TRACING": "true"})
    assert not langsmith_enabled({"LANGSMITH_API_KEY": "k"})
    assert config_hash({"a": 1, "b": [1, 2]}) == config_hash({"b": [1, 2], "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2}) and len(config_hash({})) == 16
    v = code_version()
    assert v and v != "unknown"


# ---------------------------------------------------------------------------------------------------------
# CLI


def test_cli_list_show_verify(tmp_path, capsys):
    log = _chain(tmp_path, 3)
    logp = str(log.path)
    assert main(["trace", "--log", logp, "list"]) == 0
    out = capsys.readouterr().out
    assert out.count("Case ") == 3 and "Asthma" in out

    assert main(["trace", "list", "--log", logp, "--limit", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["seq"] for r in rows] == [2, 1]
    assert rows[0]["passed"] is True and rows[1]["escalated"] is True

    rid = rows[1]["run_id"]
    assert main(["trace", "--log", logp, "show", rid[:16]]) == 0
    out = capsys.readouterr().out
    for part in ("== inputs", "Case 1", "== entities", "wheezing", "== evidence", "0.910",
                 "G:DOID:2841|has_symptom|SYMP:0000604", "== nodes", "model=smollm2", "tokens=812+96",
                 "latency=1.70s", "== verification", "SUPPORTED", "== escalation", "claim 2 has no citation",
                 "== answer"):
        assert part in out, part
    assert main(["trace", "--log", logp, "show", rid, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == rid

    assert main(["trace", "--log", logp, "verify"]) == 0
    assert "OK: 3 records" in capsys.readouterr().out

    assert main(["trace", "--log", logp, "show", "ffffffffffff"]) == 2
    assert "no run with id" in capsys.readouterr().err

    lines = _lines(log)
    _write(log, lines[:1] + lines[2:])
    assert main(["trace", "--log", logp, "verify"]) == 1
    out = capsys.readouterr().out
    assert "BROKEN at record seq 1" in out and "removed record" in out


def test_cli_subprocess_uses_clinicalrag_home(tmp_path):
    env = {**os.environ, "CLINICALRAG_HOME": str(tmp_path), "PYTHONPATH": str(PROJECT)}
    AuditLog(tmp_path / "traces" / "audit.jsonl").append(_record(0))
    run = subprocess.run([sys.executable, "-m", "clinicalrag", "trace", "verify"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "OK: 1 records" in run.stdout
    head = tmp_path / "traces" / "audit.head"
    h = json.loads(head.read_text())
    h["seq"] = 5
    head.write_text(json.dumps(h))
    run = subprocess.run([sys.executable, "-m", "clinicalrag", "trace", "verify"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "removed record" in run.stdout

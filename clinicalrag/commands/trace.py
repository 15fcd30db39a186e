"""`clinicalrag trace`: list, show and verify the hash-chained audit trail of runs."""
from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Any

from clinicalrag.cli import UserError


def register(sub) -> None:
    p = sub.add_parser("trace", help="inspect and verify the audit trail of runs")
    p.add_argument("--log", default=None, metavar="PATH",
                   help="audit log file (default: <CLINICALRAG_HOME>/traces/audit.jsonl)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log", default=argparse.SUPPRESS, metavar="PATH", help="audit log file")
    tsub = p.add_subparsers(dest="trace_cmd", metavar="SUBCOMMAND")
    tsub.required = True

    pl = tsub.add_parser("list", help="the latest runs, newest first", parents=[common])
    pl.add_argument("--limit", type=int, default=20, help="how many runs (default 20)")
    pl.add_argument("--json", action="store_true", help="print JSON")
    pl.set_defaults(func=_list)

    ps = tsub.add_parser("show", help="one run in full (prefix of its run id is enough)", parents=[common])
    ps.add_argument("run_id", metavar="ID")
    ps.add_argument("--json", action="store_true", help="print the stored record as JSON")
    ps.set_defaults(func=_show)

    pv = tsub.add_parser("verify", help="check the hash chain; exit 1 when it is broken", parents=[common])
    pv.add_argument("--json", action="store_true", help="print the report as JSON")
    pv.set_defaults(func=_verify)


def _log(args):
    from graph.tracing import AuditLog

    path = Path(args.log).expanduser() if args.log else None
    if path is not None and path.exists() and path.is_dir():
        raise UserError(f"--log {path} is a folder; give the audit .jsonl file")
    return AuditLog(path)


def _list(args) -> int:
    if args.limit < 0:
        raise UserError("--limit must be >= 0")
    log = _log(args)
    rows = log.list(limit=args.limit)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"no runs recorded in {log.path}")
        return 0
    # CLAIMS: every claim supported by its cited evidence (verified); DX: calibrated confidence in the top diagnosis
    print(f"{'SEQ':>4}  {'RUN ID':<16}  {'TIME (UTC)':<19}  {'CLAIMS':<6}  {'DX':<13}  {'ESC':<3}  INPUT")
    for r in rows:
        passed = {True: "yes", False: "no", None: "-"}[r.get("passed") if r.get("passed") in (True, False) else None]
        esc = {True: "yes", False: "no"}.get(r.get("escalated"), "-")
        ts = str(r.get("ts") or "")[:19].replace("T", " ")
        top = f" -> {r['top_diagnosis']}" if r.get("top_diagnosis") else ""
        dx = r.get("diagnostic_level") or "-"
        if r.get("diagnostic_top") is not None:
            dx = f"{dx} {r['diagnostic_top']:.2f}"
        print(f"{r.get('seq', ''):>4}  {str(r.get('run_id', ''))[:16]:<16}  {ts:<19}  {passed:<6}  {dx:<13}  "
              f"{esc:<3}  {r.get('input', '')}{top}")
    return 0


def _show(args) -> int:
    log = _log(args)
    try:
        rec = log.get(args.run_id)
    except KeyError as exc:
        raise UserError(str(exc).strip("'\"")) from None
    if args.json:
        print(json.dumps(rec, indent=2, ensure_ascii=False))
        return 0
    print(render(rec))
    return 0


def _verify(args) -> int:
    log = _log(args)
    rep = log.verify()
    if args.json:
        print(json.dumps(rep.__dict__, indent=2))
    else:
        print(rep.message())
    return 0 if rep.ok else 1


# ---------------------------------------------------------------------------------------------------------
# pretty printing

_SHOWN = {"run_id", "seq", "ts", "hash", "prev_hash", "kind", "inputs", "entities", "evidence", "nodes",
          "verification", "escalation", "answer", "references", "code_version", "config_hash", "status",
          "llm_model", "warnings", "latency_ms", "diagnostic_confidence"}


def _short(v: Any, n: int = 300) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."


def _section(out: list[str], title: str) -> None:
    out.append("")
    out.append(f"== {title}")


def render(rec: dict) -> str:
    out: list[str] = []
    out.append(f"run {rec.get('run_id')}  seq {rec.get('seq')}  {rec.get('ts')}  kind {rec.get('kind') or '-'}")
    meta = [f"{k}: {rec[k]}" for k in ("status", "code_version", "config_hash", "llm_model", "latency_ms")
            if rec.get(k) not in (None, "")]
    if meta:
        out.append("  " + " | ".join(str(m) for m in meta))
    out.append(f"  hash {str(rec.get('hash'))[:16]}…  prev {str(rec.get('prev_hash'))[:16]}…")

    inputs = rec.get("inputs")
    if inputs:
        _section(out, "inputs")
        if isinstance(inputs, dict):
            for k, v in inputs.items():
                if v in (None, ""):
                    continue
                text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
                out.append(f"  {k}:")
                out.extend(textwrap.indent(textwrap.fill(text, 100), "    ").splitlines())
        else:
            out.append(f"  {_short(inputs, 1000)}")

    ents = rec.get("entities")
    if isinstance(ents, list) and ents:
        _section(out, f"entities ({len(ents)})")
        for e in ents:
            if isinstance(e, dict):
                flags = [f for f in ("negated", "historical", "family", "hypothetical") if e.get(f)]
                cid = f" -> {e.get('concept_id')} {e.get('concept_name') or ''}".rstrip() if e.get("concept_id") else ""
                out.append(f"  - {e.get('text')!s} [{e.get('category')}]{cid}"
                           + (f" ({', '.join(flags)})" if flags else ""))
            else:
                out.append(f"  - {_short(e)}")

    evid = rec.get("evidence")
    if isinstance(evid, list) and evid:
        _section(out, f"evidence ({len(evid)})")
        for e in evid:
            if isinstance(e, dict):
                sc = e.get("score")
                sc_s = f"{sc:.3f}" if isinstance(sc, (int, float)) else "-"
                out.append(f"  {sc_s:>7}  {e.get('id')}")
            else:
                out.append(f"  {_short(e)}")

    nodes = rec.get("nodes")
    if isinstance(nodes, list) and nodes:
        _section(out, f"nodes ({len(nodes)})")
        for ev in nodes:
            if not isinstance(ev, dict):
                out.append(f"  {_short(ev)}")
                continue
            ms = ev.get("ms", ev.get("latency_ms"))
            out.append(f"  * {ev.get('node', '?')}" + (f"  {ms} ms" if ms is not None else ""))
            if ev.get("summary") is not None:
                out.append(f"      summary: {_short(ev['summary'], 400)}")
            if ev.get("prompt"):
                out.append(f"      prompt: {_short(ev['prompt'], 400)}")
            if ev.get("output"):
                out.append(f"      output: {_short(ev['output'], 400)}")
            for c in ev.get("llm_calls") or []:
                if not isinstance(c, dict):
                    continue
                lat = c.get("latency_s")
                lat_s = f"{lat:.2f}s" if isinstance(lat, (int, float)) else "-"
                line = (f"      llm[{c.get('tag') or '-'}] model={c.get('model')} mode={c.get('mode')} "
                        f"tokens={c.get('prompt_tokens', 0)}+{c.get('completion_tokens', 0)} latency={lat_s}")
                if c.get("error"):
                    line += f" ERROR: {_short(c['error'], 160)}"
                out.append(line)
                if c.get("output"):
                    out.append(f"        output: {_short(c['output'], 300)}")

    ver = rec.get("verification")
    if isinstance(ver, dict):
        _section(out, "verification (are the claims supported by the evidence they cite?)")
        out.append(f"  passed: {ver.get('passed')}  supported ratio: {ver.get('supported_ratio')}")
        if ver.get("fabricated_citations"):
            out.append(f"  fabricated citations removed: {', '.join(map(str, ver['fabricated_citations']))}")
        for i, c in enumerate(ver.get("claims") or [], 1):
            if isinstance(c, dict):
                conf = c.get("confidence")
                conf_s = f"{conf:.2f}" if isinstance(conf, (int, float)) else "-"
                out.append(f"  {i:>2}. {c.get('verdict', '?'):<12} {conf_s}  {_short(c.get('claim', ''), 140)}")
                if c.get("citations"):
                    out.append(f"      cites: {', '.join(c['citations'])}")
        for r in ver.get("reasons") or []:
            out.append(f"  reason: {_short(r, 300)}")
        for r in ver.get("notes") or []:
            out.append(f"  note: {_short(r, 300)}")

    dx = rec.get("diagnostic_confidence")
    if isinstance(dx, dict):
        _section(out, "diagnostic confidence (how likely is the diagnosis?)")
        top = dx.get("top")
        out.append(f"  top: {'-' if top is None else f'{top:.2f}'}  level: {dx.get('level')}  "
                   f"top candidate explains {dx.get('explained')}; leading explain {dx.get('explained_by_leading')}")
        out.append(f"  calibration: {dx.get('calibration')}")
        for it in dx.get("items") or []:
            if isinstance(it, dict):
                conf = it.get("confidence")
                out.append(f"  {it.get('rank')!s:>2}. {'-' if conf is None else f'{conf:.2f}':>5}  "
                           f"{it.get('diagnosis')}  {_short(it.get('features') or {}, 160)}")

    esc = rec.get("escalation")
    if esc:
        _section(out, "escalation")
        if isinstance(esc, dict):
            out.append(f"  escalated: {esc.get('escalated')}")
            for r in esc.get("reasons") or []:
                out.append(f"  - {_short(r, 300)}")
            rest = {k: v for k, v in esc.items() if k not in ("escalated", "reasons")}
            if rest:
                out.append(f"  {_short(rest, 400)}")
        else:
            out.append(f"  {_short(esc, 400)}")

    if rec.get("answer"):
        _section(out, "answer")
        ans = rec["answer"] if isinstance(rec["answer"], str) else json.dumps(rec["answer"], indent=2, default=str)
        out.extend("  " + ln for ln in ans.splitlines())

    refs = rec.get("references")
    if refs:
        _section(out, "references")
        for r in refs:
            if isinstance(r, dict):
                out.append(f"  [{r.get('n')}] {r.get('title')} — {r.get('source')}"
                           + (f" {r.get('url')}" if r.get("url") else ""))
            else:
                out.append(f"  {_short(r)}")

    if rec.get("warnings"):
        _section(out, "warnings")
        out.extend(f"  - {_short(w, 300)}" for w in rec["warnings"])

    other = {k: v for k, v in rec.items() if k not in _SHOWN}
    if other:
        _section(out, "other fields")
        for k, v in other.items():
            out.append(f"  {k}: {_short(v, 400)}")
    return "\n".join(out)

"""`clinicalrag ask`: a cited, verified differential diagnosis for a presentation."""
from __future__ import annotations

import json
import re
import sys

from clinicalrag.cli import UserError
from clinicalrag.llm_options import add_provider_arguments, llm_config

BADGE = {"SUPPORTED": "✔ supported", "CONTRADICTED": "✘ contradicted", "INSUFFICIENT": "? insufficient"}


def register(sub) -> None:
    p = sub.add_parser("ask", help="answer a patient presentation with a cited differential diagnosis")
    p.add_argument("text", nargs="?", help="the presentation ('-' or omitted: read standard input)")
    p.add_argument("--json", action="store_true", help="print the full structured result as JSON")
    p.add_argument("--mode", choices=["pipeline", "direct"], default="pipeline",
                   help="pipeline (retrieval + verification) or direct (LLM only baseline)")
    p.add_argument("--no-mee", action="store_true", help="ablation: no entity extraction")
    p.add_argument("--no-knl", action="store_true", help="ablation: raw knowledge instead of sentences")
    p.add_argument("--no-krg", action="store_true", help="ablation: no reference list")
    p.add_argument("--no-verify", action="store_true", help="ablation: skip claim verification")
    p.add_argument("--sources", default="G,B,O", help="knowledge sources to use (subset of G,B,O)")
    p.add_argument("--top-k", type=int, default=None, help="top-k per source for entity retrieval")
    p.add_argument("--max-input-tokens", type=int, default=None, help="prompt/context cap (e.g. 4096, 2048, 1024)")
    p.add_argument("--max-attempts", type=int, default=None, help="corrective re-retrieval attempts (default 2)")
    p.add_argument("--thread", default=None, help="conversation thread id (follow-up turns add to the case)")
    p.add_argument("--llm-base-url", default=None, help="OpenAI-compatible endpoint (or CLINICALRAG_LLM_BASE_URL)")
    p.add_argument("--llm-model", default=None, help="model name (or CLINICALRAG_LLM_MODEL)")
    p.add_argument("--llm-config", default=None, help="LLM config file (TOML or YAML)")
    p.add_argument("--no-llm", action="store_true", help="ignore any configured LLM (deterministic path)")
    add_provider_arguments(p)
    p.add_argument("--no-audit", action="store_true", help="do not append an audit record")
    p.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE",
                   help="any pipeline setting (graph/config.py), repeatable: --set direct_min_diagnoses=3 "
                        "--set llm_agents=propose+generate")
    p.set_defaults(func=run)


def build_config(args):
    from graph.config import PipelineConfig

    bad = [x for x in args.sources.split(",") if x.strip() and x.strip().upper() not in ("G", "B", "O")]
    if bad:
        raise UserError(f"unknown source(s) {', '.join(bad)}: choose from G, B, O (e.g. --sources G,B)")
    kw = {"mode": args.mode, "use_mee": not args.no_mee, "use_knl": not args.no_knl, "use_krg": not args.no_krg,
          "use_verifier": not args.no_verify,
          "sources": [s.strip().upper() for s in args.sources.split(",") if s.strip()]}
    if args.top_k is not None:
        kw["top_k_per_source"] = args.top_k
    if args.max_input_tokens is not None:
        kw["max_input_tokens"] = args.max_input_tokens
    if args.max_attempts is not None:
        kw["max_attempts"] = args.max_attempts
    for item in getattr(args, "set", None) or []:
        from clinicalrag.bench.systems import SpecError, setting_value  # noqa: PLC0415

        name, eq, raw = item.partition("=")
        if not eq or not name.strip():
            raise UserError(f"--set takes SETTING=VALUE, not {item!r}")
        try:
            kw[name.strip()] = setting_value(name.strip(), raw.strip())
        except (SpecError, ValueError) as exc:
            raise UserError(f"--set {item}: {exc}") from None
    try:
        return PipelineConfig(**kw)
    except Exception as exc:  # pydantic validation error → one clear line
        first = str(exc).splitlines()
        raise UserError(f"invalid option: {' '.join(first[1:3]) if len(first) > 2 else exc}") from None


def run(args) -> int:
    from graph.pipeline import ClinicalRAG, InputError, Resources

    text = args.text
    if text is None or text == "-":
        if sys.stdin.isatty():
            raise UserError("give a presentation as an argument or on standard input")
        raw = sys.stdin.buffer.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UserError("standard input is binary data, not UTF-8 text") from None
    cfg = build_config(args)
    llm_cfg = llm_config(args, {"base_url": args.llm_base_url, "model": args.llm_model}, args.llm_config)
    try:
        rag = ClinicalRAG(Resources(llm_config=llm_cfg))
        result = rag.ask(text, cfg, thread_id=args.thread, audit=not args.no_audit)
    except InputError as exc:
        raise UserError(str(exc)) from None
    except FileNotFoundError as exc:
        raise UserError(f"{exc} — run `clinicalrag index build` (or `make demo`) first") from None
    except RuntimeError as exc:
        if type(exc).__name__ == "IndexNotBuilt":
            raise UserError(str(exc)) from None
        raise
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        print(render(result))
    return 0


def status_line(status: str) -> str:
    """The banner's status, with what "verified" does and does not mean (it is about the claims, not the diagnosis)."""
    if status == "verified":
        return "Status: verified — the claims match their cited evidence (not a check of the diagnosis)"
    return f"Status: {status}"


def _course_words(course: str | None) -> str:
    """The illness's course as the extractor measured it: "acute" when every duration of the presenting illness is
    at most ``ACUTE_DAYS``, "chronic" when one is ``CHRONIC_DAYS`` or more (a 40-minute pain is acute, not "days")."""
    from agents.mee.demographics import ACUTE_DAYS, CHRONIC_DAYS  # noqa: PLC0415

    if course == "acute":
        return f"complaints of {ACUTE_DAYS / 7:g} weeks or less"
    if course == "chronic":
        return f"complaints of {CHRONIC_DAYS / 7:g} weeks or more"
    return ""


def render(r: dict) -> str:
    """A readable answer: status banner, the claims and diagnostic-confidence line, differential, the must-not-miss
    line, verification badges, warnings, references."""
    out = []
    esc = r.get("escalation") or {}
    status = r["status"]
    bar = "=" * 78
    reasons = list(esc.get("reasons") or [])
    diagnostic_only = bool(reasons) and all(x.startswith(DIAGNOSTIC_PREFIX) for x in reasons)
    if esc.get("escalated") and diagnostic_only:
        claims = " (its claims are supported by the cited evidence)" if status == "verified" else ""
        out += [bar, f"⚠  NEEDS CLINICIAN REVIEW — the diagnosis is uncertain{claims}.",
                *[f"   - {x}" for x in reasons[:8]], status_line(status), bar]
    elif esc.get("escalated"):
        out += [bar, "⚠  NEEDS CLINICIAN REVIEW — this answer is not verified.",
                *[f"   - {x}" for x in reasons[:8]], bar]
    else:
        out += [bar, status_line(status), bar]
    out += [summary_line(r)]
    per_item = confidence_line(r.get("differential") or [])
    if per_item:
        out.append(per_item)
    out.append("")
    ex = r.get("extraction") or {}
    ents = ex.get("entities") or []
    if ents:
        pos = [finding_label(e) for e in ents if e.get("category") != "demographic"   # age and sex close the line
               and not (e.get("negated") or e.get("family") or e.get("hypothetical"))]
        neg = finding_labels([e for e in ents if e.get("negated")])
        places = ", ".join(f"{p['text']} ({', '.join(g.replace('_', ' ') for g in p.get('regions') or [])})"
                           for p in ex.get("places") or [])
        course = _course_words(ex.get("course"))
        demo = ", ".join(x for x in [f"{ex['age_years']:g} y" if ex.get("age_years") is not None else "",
                                     ex.get("sex") or "", course, f"has been in {places}" if places else ""] if x)
        out.append(f"Findings: {', '.join(pos) or '—'}" + (f" | absent: {', '.join(neg)}" if neg else "")
                   + (f" | {demo}" if demo else ""))
        out.append("")
    props = r.get("proposals") or []

    def named(xs: list[dict]) -> str:
        return "; ".join(f"{x['rank']}. {x['name']}" + (f" (= {x['concept_name']})" if x.get("concept_name") and
                                                        x["concept_name"].lower() != x["name"].lower() else "")
                         + ("" if x.get("concept_id") else " (not in the knowledge graph)") for x in xs)

    first = [x for x in props if not x.get("alternative")]
    more = [x for x in props if x.get("alternative")]
    if first:
        out.append("The language model proposed: " + named(first))
    if more:   # the widening call's diagnoses, beside the model's own answer
        out.append("It would also consider: " + named(more))
    if props:
        out.append("")
    refmap = r.get("reference_map") or {}
    answer = re.sub(r"(?m)^(\s*)#{1,6} ", r"\1", _numbered(r["answer"], refmap))
    mnm = must_not_miss_lines(r.get("must_not_miss") or [])
    steps = re.search(r"(?m)^Suggested next steps", answer)
    if mnm and steps:   # under the differential, before the next steps
        out += [answer[: steps.start()].rstrip("\n"), *mnm, "", answer[steps.start():]]
    else:
        out += [answer, *mnm]
    v = r.get("verification")
    if v and v.get("claims"):
        out += ["", "Verification of claims:"]
        for c in v["claims"]:
            claim = _numbered(c["claim"], refmap)
            out.append(f"  {BADGE.get(c['verdict'], c['verdict'])} ({c['confidence']:.2f}) {claim[:150]}")
        if v.get("fabricated_citations"):
            out.append(f"  dropped fabricated citations: {', '.join(v['fabricated_citations'])}")
    if r.get("warnings"):
        out += ["", "Warnings:"] + [f"  - {w}" for w in r["warnings"]]
    refs = r.get("references") or []
    if refs:
        out += ["", "References:"]
        for ref in refs:
            out.append("  " + _fmt_ref(ref))
    llm = r.get("llm") or {}
    by_tag = ", ".join(f"{t} {v.get('calls', 0)}" for t, v in (llm.get("by_tag") or {}).items())
    out += ["", f"({r['latency_ms']:.0f} ms; LLM: {llm.get('model') or 'none'}, {llm.get('calls', 0)} calls"
                f"{f' ({by_tag})' if by_tag else ''}; run {r.get('run_id') or '-'})",
            "Decision support only: confirm with clinical judgement."]
    return "\n".join(out)


DIAGNOSTIC_PREFIX = "diagnostic: "   # graph.result.DIAGNOSTIC_PREFIX: an escalation about the diagnosis


def finding_label(e: dict) -> str:
    """An extracted finding as the presentation says it and, when the words do not name it, what it was read as:
    "back (backache)", "HR 110 (tachycardia)", "affect is flat (Diminishment of emotional expression)"."""
    text, name = e.get("text") or "", e.get("concept_name") or ""
    words = re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()
    said = re.sub(r"[^a-z0-9]+", " ", name.lower()).strip()
    if not name or e.get("category") == "demographic" or said == words or said in words:
        return text
    return f"{text} ({name})"


def finding_labels(ents: list[dict]) -> list[str]:
    """:func:`finding_label` of each entity, those of one span joined: a normal platelet count denies two findings,
    "Platelet count 250,000/mm3 (thrombocytopenia, Thrombocytosis)"."""
    groups: dict[tuple, list[dict]] = {}
    for e in ents:
        groups.setdefault((e.get("start"), e.get("end"), e.get("text")), []).append(e)
    out = []
    for (_, _, text), group in groups.items():
        if len(group) == 1:
            out.append(finding_label(group[0]))
            continue
        names = [n for n in dict.fromkeys(g.get("concept_name") or "" for g in group) if n]
        out.append(f"{text} ({', '.join(names)})" if names else text or "")
    return out


def claims_text(r: dict) -> str:
    """How many claims the verifier found supported by their cited evidence (the meaning of "verified")."""
    v = r.get("verification")
    claims = (v or {}).get("claims") or []
    if r.get("mode") == "direct":
        return "not checked (language model only, no evidence)"
    if v is None:
        return "not checked (verifier disabled)" if not (r.get("config") or {}).get("use_verifier", True) \
            else "not checked"
    if not claims:
        return "none to check"
    supported = sum(c.get("verdict") == "SUPPORTED" for c in claims)
    return f"{supported}/{len(claims)} supported by cited evidence"


def diagnostic_text(r: dict) -> str:
    """How likely the top diagnosis is (calibrated) and how many findings it explains."""
    d = r.get("diagnostic_confidence")
    if not d:
        return "not assessed"
    if not r.get("differential"):
        return "none (no diagnosis ranked)"
    explains = f"explains {d.get('explained') or '?'}"
    if d.get("top") is None:
        return f"uncalibrated (top candidate {explains})"
    return f"{d.get('level')} (top candidate {d['top']:.2f}; {explains})"


def summary_line(r: dict) -> str:
    """Claims supported and diagnostic confidence, side by side and apart: an answer whose every claim is
    supported by its evidence can still name the wrong diagnosis."""
    return f"Claims: {claims_text(r)} · Diagnostic confidence: {diagnostic_text(r)}"


def confidence_line(differential: list[dict]) -> str:
    """Each diagnosis with its calibrated probability of being the right one ('' when there are none)."""
    shown = [f"{d.get('rank')}. {d.get('diagnosis')} {d['confidence']:.2f}" for d in differential
             if d.get("confidence") is not None]
    return "Probability each is the diagnosis: " + " · ".join(shown) if shown else ""


def must_not_miss_lines(items: list[dict]) -> list[str]:
    """The "Must not miss" line (each dangerous diagnosis with the findings that call for it, and its rank when the
    differential already has it), then the reasons with their sources (one line per reason, naming its diagnoses)."""
    if not items:
        return []
    shown = []
    for it in items:
        notes = [", ".join(it.get("triggers") or [])]
        notes += it.get("conditions") or []
        if it.get("rank"):
            notes.append(f"#{it['rank']} in the differential")
        if it.get("ruled_out"):
            notes.append(f"ruled out by {it['ruled_out']}")
        shown.append(f"{it['name']} ({'; '.join(n for n in notes if n)})")
    out = ["", "Must not miss: " + "; ".join(shown)]
    why: dict[tuple[str, str], list[str]] = {}
    for it in items:
        why.setdefault((it["reason"], it["citation"]), []).append(it["name"])
    out += [f"  - {', '.join(names)}: {reason} [{citation}]" for (reason, citation), names in why.items()]
    return out


_CITE = re.compile(r"\[([BOG]:[^\[\]\s]+?)\]")


def _numbered(text: str, refmap: dict) -> str:
    """Show citations as reference numbers where the reference list has them: [B:doc#0:10-90] → [3]."""
    if not refmap:
        return text

    def sub(m):
        raw = m.group(1)
        eid = re.sub(r":\d+-\d+$", "", raw)
        n = refmap.get(eid)
        return f"[{n}]" if n else m.group(0)

    return _CITE.sub(sub, text)


def _fmt_ref(ref: dict) -> str:
    from agents.types import Reference

    try:
        return Reference(**ref).format()
    except Exception:
        return str(ref)

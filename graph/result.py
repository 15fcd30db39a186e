"""The outcome of a turn, as pure functions of the final state: the status, the escalation, the structured result
and the audit record. Called by the ``finalize`` and ``audit`` nodes."""
from __future__ import annotations

import re
import time
from typing import Any

from agents.answer import clean_draft
from agents.llm.budget import logical_calls
from agents.confidence import Assessment, Calibration, assess, level_of, load_calibration
from agents.types import Draft
from agents.verifier import clean_citations

from .config import PipelineConfig
from .state import Result, State

STATUS_VERIFIED = "verified"
STATUS_REVIEW = "needs clinician review"
STATUS_UNVERIFIED_DIRECT = "unverified (language model only, no evidence)"
STATUS_UNVERIFIED_NO_VERIFIER = "unverified (verifier disabled)"
STATUS_REJECTED = "rejected"
INSUFFICIENT_ESCALATION = "insufficient evidence"
# escalation reasons about the diagnosis (not about the evidence for the claims) start with this
DIAGNOSTIC_PREFIX = "diagnostic: "

_PACKAGED: Any = object()   # "the packaged calibration" (agents/data/diagnostic_confidence.json, when present)


def is_diagnostic(reason: str) -> bool:
    return reason.startswith(DIAGNOSTIC_PREFIX)


def diagnostic_assessment(state: State, cfg: PipelineConfig, calibration: Any = _PACKAGED) -> Assessment | None:
    """The diagnostic confidence of a finished pipeline turn (None for a rejected message or the LLM-only mode, which
    rank no candidates). ``calibration``: a :class:`~agents.confidence.Calibration`, None for none, or by default
    the packaged one."""
    if state.get("input_error") or cfg.mode == "direct":
        return None
    cal: Calibration | None = load_calibration() if calibration is _PACKAGED else calibration
    draft, _ = answer_draft(state)
    return assess(draft.differential, state.get("candidates") or [], state.get("extraction"), calibration=cal,
                  lead=cfg.explained_top_n)


def diagnostic_reasons(a: Assessment | None, cfg: PipelineConfig) -> list[str]:
    """Escalation reasons about the diagnosis: no current finding was recognised, the leading candidates explain
    under ``min_explained_findings`` of the current findings, or the calibrated confidence of the top one is under
    ``min_top_confidence``."""
    if a is None or not a.features:
        return []
    out = []
    if not a.findings:
        out.append(f"{DIAGNOSTIC_PREFIX}no finding of the present illness was recognised: the ranking rests on the "
                   f"reference texts alone")
    if a.findings and a.lead_explained < cfg.min_explained_findings * a.findings:
        lead = "the leading candidate" if min(a.lead, len(a.features)) == 1 else "the leading candidates"
        out.append(f"{DIAGNOSTIC_PREFIX}{lead} explain{'s' if lead.endswith('candidate') else ''} only "
                   f"{a.lead_explained} of {a.findings} findings")
    if a.top is not None and a.top < cfg.min_top_confidence:
        out.append(f"{DIAGNOSTIC_PREFIX}the top candidate's calibrated confidence is {a.top:.2f}, under "
                   f"{cfg.min_top_confidence:.2f}")
    return out


def status_and_escalation(state: State, cfg: PipelineConfig, calibration: Any = _PACKAGED) -> tuple[str, list[str]]:
    """(status, escalation reasons) of a finished turn; the reasons include any added here.

    The status is about the claims: "verified" means every claim is supported by the evidence it cites. Reasons
    about the diagnosis (:data:`DIAGNOSTIC_PREFIX`, :func:`diagnostic_reasons`) escalate the answer to a clinician
    without changing the status; the result's ``diagnostic_confidence`` says how likely the diagnosis is."""
    reasons = list(state.get("escalation") or [])
    if state.get("input_error"):
        return STATUS_REJECTED, reasons
    draft = state.get("draft") or Draft()
    v = state.get("verification")
    if cfg.mode == "direct":
        return STATUS_UNVERIFIED_DIRECT, reasons
    evidence_reasons = [r for r in reasons if not is_diagnostic(r)]
    if not draft.insufficient:
        reasons += [r for r in diagnostic_reasons(diagnostic_assessment(state, cfg, calibration), cfg)
                    if r not in reasons]
    if evidence_reasons or draft.insufficient:
        return STATUS_REVIEW, reasons if evidence_reasons else [INSUFFICIENT_ESCALATION, *reasons]
    if not cfg.use_verifier:
        return STATUS_UNVERIFIED_NO_VERIFIER, reasons
    return (STATUS_VERIFIED if v is not None and v.passed else STATUS_REVIEW), reasons


def answer_draft(state: State) -> tuple[Draft, str]:
    """(the draft as shown, its answer text): the verifier's cleaned draft where verification ran, and in any case
    without a citation of an id that is not in the turn's evidence."""
    known = {e.id for e in state.get("evidence") or []}
    draft = state.get("draft") or Draft()
    v = state.get("verification")
    if v is not None and v.cleaned_draft is not None:
        draft = v.cleaned_draft
    draft, _ = clean_draft(draft, known)
    text = (v.cleaned_text if v is not None and v.cleaned_text else "") or draft.text
    text, _ = clean_citations(text, known)
    return draft, text


def llm_summary(events: list[dict[str, Any]], model: str | None) -> dict[str, Any]:
    calls = [c for ev in events for c in ev.get("llm_calls") or []]
    by_tag: dict[str, dict[str, int]] = {}
    for c in calls:
        if not c.get("logical", True):
            continue
        t = by_tag.setdefault(c.get("tag") or "?", {"calls": 0, "parse_errors": 0, "errors": 0})
        t["calls"] += 1
        t["parse_errors"] += bool(c.get("parse_error"))
        t["errors"] += _failed(c)
    # a request the server refused for its response_format is not a failure: the client asked again in a mode the
    # server accepts (counted apart, as format fallbacks)
    return {"model": model, "calls": logical_calls(calls), "http_calls": len(calls), "by_tag": by_tag,
            "prompt_tokens": sum(c.get("prompt_tokens", 0) for c in calls),
            "completion_tokens": sum(c.get("completion_tokens", 0) for c in calls),
            "errors": sum(_failed(c) for c in calls),
            "format_fallbacks": sum(bool(c.get("rejected_format")) for c in calls),
            "cached": sum(bool(c.get("cached")) for c in calls)}


def _failed(call: dict[str, Any]) -> bool:
    """An error, unless it is a refused response_format that the client followed with another mode (the logical call
    is then the accepted one; a refusal that stays the logical call means no mode was accepted: a failure)."""
    return call.get("error") is not None and not (call.get("rejected_format") and not call.get("logical", True))


# a differential heading of the answer text: "#### 2. influenza (likelihood: moderate; ..."
_HEADING = re.compile(r"^(#### (\d+)\. [^\n]*?\(likelihood: )(high|moderate|low)\b([^\n]*)$", re.M)
_SCORE = re.compile(r"; score \d+(?:\.\d+)?")


def calibrated_likelihoods(text: str, confidences: dict[int, float]) -> str:
    """The answer text with each differential heading's likelihood word replaced by the level of the item's
    calibrated confidence (``confidences``: rank -> probability; :func:`agents.confidence.level_of`) and its fusion
    score by that confidence; ranks not in ``confidences`` keep their words.

    The composer writes each word relative to the top candidate (the top one always "high") beside a fusion score
    that is no probability; once the calibrated confidences are known the heading says how likely the diagnosis is,
    in the words and numbers of the diagnostic confidence (a top candidate at 0.13 reads "low; confidence 0.13")."""
    if not confidences:
        return text

    def one(m: re.Match) -> str:
        p = confidences.get(int(m.group(2)))
        if p is None:
            return m.group(0)
        return m.group(1) + level_of(p) + _SCORE.sub(f"; confidence {p:.2f}", m.group(4), count=1)

    return _HEADING.sub(one, text)


def diagnostic_block(a: Assessment | None, differential: list[Any]) -> dict[str, Any] | None:
    """The result's ``diagnostic_confidence``: the top item's calibrated probability and its level, the findings
    explained, where the calibration comes from, and per item its probability and the features it came from."""
    if a is None:
        return None
    items = [{"rank": d.rank, "diagnosis": d.diagnosis, "concept_id": d.concept_id,
              "confidence": None if p is None else round(p, 4), "features": f}
             for d, p, f in zip(differential, a.confidences, a.features)]
    return {**a.block(), "items": items}


def build_result(state: State, cfg: PipelineConfig, *, events: list[dict[str, Any]], thread_id: str | None,
                 llm_model: str | None, now: float | None = None, calibration: Any = _PACKAGED) -> Result:
    status, reasons = status_and_escalation(state, cfg, calibration)
    started = state.get("started_at")
    latency = round(((now if now is not None else time.time()) - started) * 1000, 1) if started else 0.0
    base: Result = {
        "status": status, "error": state.get("input_error"), "thread_id": thread_id, "mode": cfg.mode,
        "config": cfg.model_dump(), "config_hash": cfg.digest(), "warnings": list(state.get("warnings") or []),
        "attempts": state.get("attempts", 0), "trace": events, "llm": llm_summary(events, llm_model),
        "latency_ms": latency, "run_id": None,
        "escalation": {"escalated": bool(reasons), "reasons": reasons},
    }
    if status == STATUS_REJECTED:
        return {**base, "answer": "", "differential": [], "must_not_miss": [], "next_steps": [], "verification": None,
                "references": [], "reference_map": {}, "evidence": [], "candidates": [], "extraction": None,
                "proposals": [], "disagreement": None,
                "presentation": None, "diagnostic_confidence": None}
    draft, text = answer_draft(state)
    v = state.get("verification")
    ex = state.get("extraction")
    a = diagnostic_assessment(state, cfg, calibration)
    confidences = a.confidences if a is not None else [None] * len(draft.differential)
    # the likelihood words follow the calibrated confidences where there are some (else the composer's relative ones)
    text = calibrated_likelihoods(text, {d.rank: p for d, p in zip(draft.differential, confidences) if p is not None})
    return {
        **base,
        "answer": text,
        "differential": [{**d.model_dump(), "confidence": None if p is None else round(p, 4),
                          **({"likelihood": level_of(p)} if p is not None else {})}
                         for d, p in zip(draft.differential, confidences)],
        "must_not_miss": [i.model_dump() for i in state.get("must_not_miss") or []],
        "next_steps": list(draft.next_steps),
        "verification": v.model_dump() if v is not None else None,
        "references": [r.model_dump() for r in state.get("references") or []],
        "reference_map": dict(state.get("reference_map") or {}),
        "evidence": [e.model_dump() for e in state.get("evidence") or []],
        "candidates": [c.model_dump() for c in state.get("candidates") or []],
        "proposals": [x.model_dump() for x in state.get("proposals") or []],
        "disagreement": draft.disagreement.model_dump() if draft.disagreement is not None else None,
        "extraction": ex.model_dump() if ex is not None else None,
        "presentation": state.get("presentation"),
        "diagnostic_confidence": diagnostic_block(a, draft.differential),
    }


def with_prompts(events: list[dict[str, Any]], prompts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with each recorded prompt attached to the node execution that made it."""
    out = [dict(ev) for ev in events]
    for p in prompts:
        seen = -1
        for ev in out:
            if ev.get("node") == p["node"]:
                seen += 1
                if seen == p["occurrence"]:
                    ev["prompt"] = p["prompt"]
                    break
    return out


def audit_record(state: State, result: Result, prompts: list[dict[str, Any]], code_version: str) -> dict[str, Any]:
    return {
        "kind": "ask",
        "inputs": {"message": state.get("message"), "presentation": state.get("presentation"),
                   "thread_id": result["thread_id"]},
        "config": result["config"], "config_hash": result["config_hash"], "code_version": code_version,
        "llm_model": result["llm"]["model"],
        "entities": (result.get("extraction") or {}).get("entities", []),
        "evidence": [{"id": e["id"], "role": e["role"], "score": e["score"]} for e in result["evidence"]],
        "candidates": [{"id": c["concept_id"], "name": c["name"], "score": c["score"]}
                       for c in result["candidates"][:10]],
        "must_not_miss": [{"id": i["concept_id"], "name": i["name"], "triggers": i["triggers"], "rules": i["rules"],
                           "conditions": i["conditions"], "rank": i["rank"], "ruled_out": i.get("ruled_out")}
                          for i in result.get("must_not_miss") or []],
        "nodes": with_prompts(result["trace"], prompts),
        "verification": result["verification"],
        "diagnostic_confidence": result.get("diagnostic_confidence"),
        "escalation": result["escalation"],
        "status": result["status"],
        "answer": result["answer"],
        "references": [r.get("n") for r in result["references"]],
        "warnings": result["warnings"],
        "llm": result["llm"],
        "latency_ms": result["latency_ms"],
    }

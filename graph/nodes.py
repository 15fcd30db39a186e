"""The graph's nodes: module-level functions ``node(state, runtime) -> update``.

Each node reads the run's :class:`~graph.context.Context` from ``runtime.context`` (configuration and shared
resources), calls one agent, and returns a partial state update with one event (name, duration, summary, the
metadata of the LLM calls it made). Prompts and raw LLM outputs go to the run's audit record and to the custom
stream (``stream_mode="custom"``), never into the state.
"""
from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from agents.answer import apply_support, clean_draft, verify_draft
from agents.corrective import correct as correct_params
from agents.grader import grade as grade_evidence
from agents.guard import strip_instructions
from agents.hki import RetrievalParams
from agents.llm.budget import logical_calls
from agents.types import Draft, Extraction, Sentence

from .context import Context, context_of
from .inputs import InputError, join_turns, normalise_presentation
from .result import audit_record, build_result, status_and_escalation
from .state import State


def llm_calls_used(state: State) -> int:
    """Logical LLM calls the turn has made so far (from its own events)."""
    return sum(logical_calls(ev.get("llm_calls")) for ev in state.get("events") or [])


class Step:
    """One node execution: the run's context, the LLM under the run's budget, timing, and the node's event."""

    def __init__(self, name: str, state: State, runtime: Runtime[Context] | None, *, first: bool = False):
        self.name = name
        self.first = first
        self.runtime = runtime
        self.ctx = context_of(runtime)
        self.cfg = self.ctx.config
        self.resources = self.ctx.resources
        self.llm = self.resources.budget(self.cfg, used=0 if first else llm_calls_used(state))
        self.occurrence = 0 if first else sum(ev.get("node") == name for ev in state.get("events") or [])
        self._t0 = time.perf_counter()

    def llm_for(self, agent: str):
        """The run's LLM for ``agent`` when the config lets that agent call the model (``llm_agents``), else None
        (the agent takes its deterministic path)."""
        return self.llm if agent in self.cfg.llm_agents else None

    def prompt(self, info: dict[str, Any]) -> None:
        """Keep an agent's prompt and raw output for the audit record and stream it for live views."""
        if not info.get("messages"):
            return
        payload = {"messages": info["messages"], "raw_output": info.get("raw")}
        if info.get("prompt_tokens_counted") is not None:
            payload["prompt_tokens_counted"] = info["prompt_tokens_counted"]
        self.ctx.record_prompt(self.name, self.occurrence, payload)
        writer = getattr(self.runtime, "stream_writer", None)
        if writer is not None:
            writer({"kind": "llm_prompt", "node": self.name, **payload})

    def event(self, summary: dict[str, Any] | None) -> dict[str, Any]:
        ev: dict[str, Any] = {"node": self.name, "ms": round((time.perf_counter() - self._t0) * 1000, 2),
                              "summary": summary}
        if self.llm is not None and self.llm.calls:
            ev["llm_calls"] = list(self.llm.calls)
        return ev

    def done(self, update: dict[str, Any], summary: dict[str, Any] | None = None) -> dict[str, Any]:
        ev = self.event(summary)
        update["events"] = Overwrite([ev]) if self.first else [ev]   # the first step of a turn starts its events
        return update


# ---- intake ---------------------------------------------------------------------------------------------------

def intake(state: State, runtime: Runtime[Context]) -> dict:
    """Check and normalise the message, remove instructions addressed to the assistant, join the thread's turns;
    reset every per-turn field."""
    step = Step("intake", state, runtime, first=True)
    cfg = step.cfg
    history = list(state.get("history") or [])
    turn: dict[str, Any] = {
        "input_error": None, "started_at": time.time(), "extraction": None,
        "params": RetrievalParams.from_config(cfg), "expansions": [], "candidates": [], "coverage": {},
        "proposals": [],
        "grade": None, "attempts": 0, "sentences": [], "draft": None, "verification": None, "references": [],
        "reference_map": {}, "must_not_miss": [], "evidence": Overwrite([]), "escalation": Overwrite([]),
    }
    try:
        text, notes = normalise_presentation(state.get("message"), cfg.max_presentation_chars)
    except InputError as exc:
        return step.done({**turn, "input_error": str(exc), "presentation": "", "warnings": Overwrite([])},
                         {"rejected": str(exc)})
    msg, removed = strip_instructions(text)
    warnings = list(notes)
    if removed:
        warnings.append(f"removed {len(removed)} instruction-like sentence(s) from the presentation: "
                        + " | ".join(r[:80] for r in removed))
    if not msg.strip():
        msg = "(no clinical content)"
    presentation, _, capped = join_turns(history, msg, cfg.max_presentation_chars)
    return step.done({**turn, "history": history + [msg], "presentation": presentation,
                      "warnings": Overwrite(warnings + capped)},
                     {"turn": len(history) + 1, "chars": len(presentation)})


# ---- retrieval ------------------------------------------------------------------------------------------------

def mee(state: State, runtime: Runtime[Context]) -> dict:
    """Medical entity extraction (capped at ``max_entities``)."""
    step = Step("mee", state, runtime)
    if not step.cfg.use_mee:
        return step.done({"extraction": Extraction(),
                          "warnings": ["MEE disabled: retrieval uses the whole presentation only"]},
                         {"disabled": True})
    ex = step.resources.mee_for(step.llm_for("mee")).extract(state["presentation"])
    ex, capped = ex.capped(step.cfg.max_entities)
    warnings = list(ex.warnings) + ([capped] if capped else [])
    return step.done({"extraction": ex, "warnings": warnings},
                     {"entities": len(ex.entities), "positive": len(ex.positive()), "negated": len(ex.negated()),
                      "age": ex.age_years, "sex": ex.sex, "course": ex.course})


def propose(state: State, runtime: Runtime[Context]) -> dict:
    """The language model's own differential (one call), linked to the knowledge graph; nothing without an LLM."""
    step = Step("propose", state, runtime)
    llm = step.llm_for("propose")
    if llm is None or not llm.enabled:
        return step.done({"proposals": []}, {"skipped": "no LLM" if step.llm is None else "not enabled"})
    from agents.proposer import Proposer  # noqa: PLC0415

    proposer = Proposer(llm, step.resources.kg, k=step.cfg.differential_k, prompt=step.cfg.propose_prompt,
                        direct_min=step.cfg.direct_min_diagnoses)
    items, warns, info = proposer.propose(state["presentation"], state.get("extraction"))
    step.prompt(info)
    summary: dict = {}
    if step.llm_for("alternatives") is not None and not warns:   # a second call widens the model's differential
        more, more_warns, more_info = proposer.alternatives(state["presentation"], items, n=step.cfg.alternatives_k)
        step.prompt(more_info)
        items, warns = items + more, warns + more_warns
        summary["alternatives"] = [x.name for x in more]
    return step.done({"proposals": items, "warnings": warns},
                     {"proposed": [x.name for x in items if not x.alternative],
                      "linked": sum(x.concept_id is not None for x in items), **summary})


def hki(state: State, runtime: Runtime[Context]) -> dict:
    """Heterogeneous knowledge retrieval with the current parameters (and the corrective expansions), keyed on
    the extracted entities and on the model's proposed diagnoses."""
    step = Step("hki", state, runtime)
    p: RetrievalParams = state["params"]
    res = step.resources.hki.retrieve(state.get("extraction"), state["presentation"], p,
                                      expansions=state.get("expansions") or [],
                                      proposals=state.get("proposals") or [])
    return step.done({"evidence": res.evidence, "candidates": res.candidates, "coverage": res.coverage,
                      "warnings": res.warnings},
                     {"evidence": len(res.evidence),
                      "candidates": [f"{c.name} ({'+'.join(c.origins)})" if c.origins else c.name
                                     for c in res.candidates[:5]],
                      "by_role": {r: sum(e.role == r for e in res.evidence) for r in "GBO"},
                      "params": {"top_k": p.top_k, "chunk_k": p.chunk_k, "min_entity_score": p.min_entity_score}})


def grade(state: State, runtime: Runtime[Context]) -> dict:
    """Is the evidence sufficient to write an answer?"""
    step = Step("grade", state, runtime)
    cfg = step.cfg
    g = grade_evidence(state.get("extraction"), state.get("evidence") or [], state.get("candidates") or [],
                       state.get("coverage") or {}, min_coverage=cfg.grader_min_coverage,
                       min_evidence=cfg.grader_min_evidence, min_score=cfg.min_entity_score,
                       need_candidates="G" in cfg.sources, use_entities=cfg.use_mee)
    return step.done({"grade": g}, g.model_dump())


def correct(state: State, runtime: Runtime[Context]) -> dict:
    """Widen the search after weak evidence or a failed verification (one attempt)."""
    step = Step("correct", state, runtime)
    attempt = state.get("attempts", 0) + 1
    g = state.get("grade")
    newp, corr = correct_params(state.get("extraction"), g.uncovered if g is not None else [], state["params"],
                                kg=step.resources.kg, llm=step.llm_for("hyde"), presentation=state["presentation"],
                                attempt=attempt)
    return step.done({"attempts": attempt, "params": newp, "expansions": corr.expansions, "warnings": corr.warnings},
                     {"attempt": attempt, "expansions": corr.expansions[:6], **corr.widened,
                      "reason": "verification failed" if state.get("verification") is not None else "weak evidence"})


def escalate_retrieval(state: State, runtime: Runtime[Context]) -> dict:
    """Retrieval attempts exhausted: record why; the answer will be marked for clinician review."""
    step = Step("escalate_retrieval", state, runtime)
    g = state.get("grade")
    reasons = [f"retrieval: {r}" for r in (g.reasons if g is not None else [])] or ["retrieval: evidence insufficient"]
    return step.done({"escalation": reasons}, {"reasons": reasons})


# ---- answer ---------------------------------------------------------------------------------------------------

def knl(state: State, runtime: Runtime[Context]) -> dict:
    """Knowledge to natural language: one sentence per evidence item (template, plus an LLM paraphrase)."""
    step = Step("knl", state, runtime)
    evidence = state.get("evidence") or []
    if not step.cfg.use_knl:
        sents = [Sentence(evidence_id=e.id, text=e.text, span=e.span) for e in evidence]
        return step.done({"sentences": sents}, {"disabled": True})
    sents, warns = step.resources.knl(step.llm_for("knl")).convert(evidence, state["presentation"])
    return step.done({"sentences": sents, "warnings": warns},
                     {"sentences": len(sents), "generated": sum(s.generated is not None for s in sents)})


def generate(state: State, runtime: Runtime[Context]) -> dict:
    """A ranked differential with inline citations, from the evidence only."""
    step = Step("generate", state, runtime)
    gen = step.resources.generator(step.cfg, step.llm_for("generate"))
    draft, warns, info = gen.generate(state["presentation"], state.get("extraction"), state.get("candidates") or [],
                                      state.get("sentences") or [], state.get("evidence") or [],
                                      attempt=state.get("attempts", 0))
    step.prompt(info)
    return step.done({"draft": draft, "warnings": warns},
                     {"origin": draft.origin, "differential": [d.diagnosis for d in draft.differential],
                      "insufficient": draft.insufficient, "evidence_in_prompt": info.get("evidence_in_prompt")})


def direct(state: State, runtime: Runtime[Context]) -> dict:
    """The LLM-only baseline (no retrieval)."""
    step = Step("direct", state, runtime)
    draft, warns, info = step.resources.generator(step.cfg, step.llm).direct(state["presentation"])
    step.prompt(info)
    return step.done({"draft": draft, "warnings": warns},
                     {"differential": [d.diagnosis for d in draft.differential]})


def verify(state: State, runtime: Runtime[Context]) -> dict:
    """Check every claim against the evidence it cites; the draft continues without fabricated citations."""
    step = Step("verify", state, runtime)
    draft = state["draft"]
    v = verify_draft(step.resources.verifier_for(step.cfg, step.llm_for("verify")), draft, state.get("evidence") or [],
                     presentation=state["presentation"])
    summary: dict[str, Any] = {"passed": v.passed, "claims": len(v.claims),
                               "verdicts": {k: sum(c.verdict == k for c in v.claims)
                                            for k in ("SUPPORTED", "CONTRADICTED", "INSUFFICIENT")},
                               "fabricated": v.fabricated_citations, "reasons": v.reasons[:6]}
    if draft.insufficient:
        summary = {"passed": False, "insufficient": True}
    shown = apply_support(v.cleaned_draft or draft, v)
    if shown.text != (v.cleaned_draft or draft).text:
        v = v.model_copy(update={"cleaned_draft": shown, "cleaned_text": shown.text})
    elif v.cleaned_draft is not None:
        v = v.model_copy(update={"cleaned_draft": shown})
    update: dict[str, Any] = {"verification": v, "draft": shown}
    if v.fabricated_citations:
        update["warnings"] = [f"verifier dropped {len(v.fabricated_citations)} fabricated citation(s)"]
    return step.done(update, summary)


def escalate(state: State, runtime: Runtime[Context]) -> dict:
    """Verification failed for good: record why; the answer will be marked for clinician review."""
    step = Step("escalate", state, runtime)
    v = state.get("verification")
    reasons = [f"verification: {r}" for r in (v.reasons if v is not None else [])]
    if not reasons and not state.get("escalation"):
        reasons = ["verification failed"]
    return step.done({"escalation": reasons}, {"reasons": list(state.get("escalation") or []) + reasons})


def krg(state: State, runtime: Runtime[Context]) -> dict:
    """The reference list of what the answer cites."""
    step = Step("krg", state, runtime)
    if not step.cfg.use_krg:
        return step.done({"references": [], "reference_map": {}}, {"disabled": True})
    evidence = state.get("evidence") or []
    draft, _ = clean_draft(state.get("draft") or Draft(), (e.id for e in evidence))
    v = state.get("verification")
    answer = v.cleaned_text if v is not None and v.cleaned_text else draft.text
    refs, mapping = step.resources.krg.for_answer(draft, evidence, answer)
    return step.done({"references": refs, "reference_map": mapping},
                     {"references": len(refs), "from_evidence": len(evidence)})


def must_not_miss(state: State, runtime: Runtime[Context]) -> dict:
    """The dangerous diagnoses compatible with the findings (curated rules, no LLM), each marked with its rank when
    the differential already has it."""
    from agents.must_not_miss import MustNotMissError  # noqa: PLC0415 — loads the knowledge-graph helpers

    step = Step("must_not_miss", state, runtime)
    differential = (state.get("draft") or Draft()).differential
    try:
        items = step.resources.must_not_miss.check(state.get("extraction"), differential,
                                                   text=state.get("presentation") or "")
    except MustNotMissError as exc:
        return step.done({"must_not_miss": [], "warnings": [f"must-not-miss list unavailable: {exc}"]},
                         {"error": str(exc)})
    return step.done({"must_not_miss": items},
                     {"items": [i.name for i in items], "in_differential": sum(i.in_differential for i in items),
                      "ruled_out": [i.name for i in items if i.ruled_out],
                      "rules": sorted({r for i in items for r in i.rules})})


# ---- outcome --------------------------------------------------------------------------------------------------

def finalize(state: State, runtime: Runtime[Context]) -> dict:
    """The outcome of the turn: status, escalation and the structured result."""
    step = Step("finalize", state, runtime)
    status, reasons = status_and_escalation(state, step.cfg)
    added = [r for r in reasons if r not in (state.get("escalation") or [])]
    ev = step.event({"status": status, "escalated": bool(reasons)})
    events = list(state.get("events") or []) + [ev]
    info = getattr(runtime, "execution_info", None)
    result = build_result({**state, "escalation": reasons}, step.cfg, events=events,
                          thread_id=getattr(info, "thread_id", None), llm_model=step.resources.llm_model)
    update: dict[str, Any] = {"result": result, "events": [ev]}
    if added:
        update["escalation"] = added
    return update


def audit(state: State, runtime: Runtime[Context]) -> dict:
    """Append the turn to the hash-chained audit log (with the prompts and raw LLM outputs of the run)."""
    ctx = context_of(runtime)
    result = state.get("result")
    if not ctx.audit or result is None or state.get("input_error"):
        return {}
    from .tracing import code_version  # noqa: PLC0415

    rec = ctx.resources.audit.append(audit_record(state, result, ctx.prompts, code_version()))
    return {"result": {**result, "run_id": rec.get("run_id")}}

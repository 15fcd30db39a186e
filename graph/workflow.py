"""The ClinicalRAG StateGraph: MEE → HKI → grade → KNL → generate → verify → KRG, with corrective
re-retrieval and escalation.

    START → intake ─(direct)→ direct → finalize → END
                   └(pipeline)→ mee → hki → grade ─(sufficient)→ knl
                                         ▲        ├(weak, attempts left)→ correct → hki
                                         │        └(exhausted)→ escalate_retrieval → knl
             knl → generate ─(verifier on)→ verify ─(pass)→ krg
                            └(verifier off)→ krg   ├(fail, attempts left)→ correct → hki …
                                                   └(fail)→ escalate → krg
             krg → finalize → END

Resources (KG, index, agents, LLM client) live in a :class:`Runtime`, outside the checkpointed state.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any, Callable

from langgraph.graph import END, START, StateGraph

from agents.corrective import correct
from agents.grader import grade as grade_fn
from agents.guard import strip_instructions
from agents.hki import RetrievalParams
from agents.verifier import parse_citations
from agents.types import Candidate, Draft, Evidence, Extraction, Sentence, Verification

from .config import PipelineConfig
from .state import RunState


def _params(cfg: PipelineConfig) -> RetrievalParams:
    return RetrievalParams(sources=tuple(cfg.sources), top_k=cfg.top_k_per_source, chunk_k=cfg.chunk_k,
                           min_entity_score=cfg.min_entity_score, min_chunk_score=cfg.min_chunk_score,
                           max_evidence=cfg.max_evidence, differential_k=cfg.differential_k,
                           use_entities=cfg.use_mee)


def _cfg(state: RunState) -> PipelineConfig:
    return PipelineConfig(**(state.get("config") or {}))


def build_graph(rt, checkpointer=None):
    """Compile the graph over a Runtime (see graph.pipeline.Runtime)."""

    def node(name: str, fn: Callable[[RunState], dict[str, Any]]):
        def run(state: RunState) -> dict[str, Any]:
            t0 = time.perf_counter()
            mark = len(rt.llm.log) if rt.llm is not None else 0
            update = fn(state) or {}
            ev = {"node": name, "ms": round((time.perf_counter() - t0) * 1000, 2),
                  "summary": update.pop("_summary", None)}
            if rt.llm is not None:
                calls = rt.llm.calls_since(mark)
                if calls:
                    ev["llm_calls"] = [c.model_dump() for c in calls]
            if "_prompt" in update:
                ev["prompt"] = update.pop("_prompt")
            update["events"] = list(update.get("events", state.get("events", []))) + [ev]
            return update
        run.__name__ = name
        return run

    # ---- nodes ------------------------------------------------------------------------------------------------
    def intake(state: RunState) -> dict:
        history = list(state.get("history") or [])
        msg, removed = strip_instructions(state["message"])
        warnings = [f"removed {len(removed)} instruction-like sentence(s) from the presentation: "
                    + " | ".join(r[:80] for r in removed)] if removed else []
        if not msg.strip():
            msg = "(no clinical content)"
        presentation = "\n".join(history + [msg]) if history else msg
        cfg = _cfg(state)
        return {"presentation": presentation, "config": cfg.model_dump(), "history": history + [msg], "attempts": 0,
                "warnings": warnings,
                "events": [], "expansions": [], "params": asdict(_params(cfg)), "verification": None,
                "escalation": {"escalated": False, "reasons": []}, "references": [], "reference_map": {},
                "evidence": [], "candidates": [], "sentences": [], "draft": {},
                "_summary": {"turn": len(history) + 1, "chars": len(presentation)}}

    def mee(state: RunState) -> dict:
        cfg = _cfg(state)
        if not cfg.use_mee:
            return {"extraction": Extraction().model_dump(),
                    "warnings": state["warnings"] + ["MEE disabled: retrieval uses the whole presentation only"],
                    "_summary": {"disabled": True}}
        ex = rt.mee.extract(state["presentation"])
        return {"extraction": ex.model_dump(), "warnings": state["warnings"] + list(ex.warnings),
                "_summary": {"entities": len(ex.entities), "positive": len(ex.positive()),
                             "negated": len(ex.negated()), "age": ex.age_years, "sex": ex.sex}}

    def hki(state: RunState) -> dict:
        p = RetrievalParams(**{**state["params"], "sources": tuple(state["params"]["sources"])})
        ex = Extraction(**state["extraction"])
        res = rt.hki.retrieve(ex, state["presentation"], p, expansions=state.get("expansions") or [])
        return {"evidence": [e.model_dump() for e in res.evidence],
                "candidates": [c.model_dump() for c in res.candidates], "coverage": res.coverage,
                "warnings": state["warnings"] + res.warnings,
                "_summary": {"evidence": len(res.evidence), "candidates": [c.name for c in res.candidates[:5]],
                             "by_role": {r: sum(e.role == r for e in res.evidence) for r in "GBO"},
                             "params": {"top_k": p.top_k, "chunk_k": p.chunk_k,
                                        "min_entity_score": p.min_entity_score}}}

    def grade(state: RunState) -> dict:
        cfg = _cfg(state)
        g = grade_fn(Extraction(**state["extraction"]), [Evidence(**e) for e in state["evidence"]],
                     [Candidate(**c) for c in state["candidates"]], state.get("coverage") or {},
                     min_coverage=cfg.grader_min_coverage, min_evidence=cfg.grader_min_evidence,
                     min_score=cfg.min_entity_score, need_candidates="G" in cfg.sources and cfg.use_mee)
        if not cfg.use_mee:  # no entities to cover: grade on evidence volume only
            g.sufficient = g.n_evidence >= cfg.grader_min_evidence
            g.reasons = [] if g.sufficient else g.reasons[:1]
        return {"grade": g.model_dump(), "_summary": g.model_dump()}

    def corrective(state: RunState) -> dict:
        attempt = state.get("attempts", 0) + 1
        p = RetrievalParams(**{**state["params"], "sources": tuple(state["params"]["sources"])})
        uncovered = (state.get("grade") or {}).get("uncovered", [])
        newp, corr = correct(Extraction(**state["extraction"]), uncovered, p, kg=rt.kg, llm=rt.llm,
                             presentation=state["presentation"], attempt=attempt)
        return {"attempts": attempt, "params": {**asdict(newp), "sources": list(newp.sources)},
                "expansions": corr.expansions, "warnings": state["warnings"] + corr.warnings,
                "_summary": {"attempt": attempt, "expansions": corr.expansions[:6], **corr.widened,
                             "reason": "verification failed" if state.get("verification") else "weak evidence"}}

    def escalate_retrieval(state: RunState) -> dict:
        reasons = list(state["escalation"]["reasons"]) + [
            f"retrieval: {r}" for r in (state.get("grade") or {}).get("reasons", ["evidence insufficient"])]
        return {"escalation": {"escalated": True, "reasons": reasons}, "_summary": {"reasons": reasons}}

    def knl(state: RunState) -> dict:
        cfg = _cfg(state)
        evidence = [Evidence(**e) for e in state["evidence"]]
        if not cfg.use_knl:
            sents = [Sentence(evidence_id=e.id, text=e.text, span=e.span) for e in evidence]
            return {"sentences": [s.model_dump() for s in sents], "_summary": {"disabled": True}}
        sents, warns = rt.knl.convert(evidence, state["presentation"])
        return {"sentences": [s.model_dump() for s in sents], "warnings": state["warnings"] + warns,
                "_summary": {"sentences": len(sents), "generated": sum(s.generated is not None for s in sents)}}

    def generate(state: RunState) -> dict:
        cfg = _cfg(state)
        gen = rt.generator(cfg)
        draft, warns, info = gen.generate(state["presentation"], Extraction(**state["extraction"]),
                                          [Candidate(**c) for c in state["candidates"]],
                                          [Sentence(**s) for s in state["sentences"]],
                                          [Evidence(**e) for e in state["evidence"]],
                                          attempt=state.get("attempts", 0))
        out = {"draft": draft.model_dump(), "warnings": state["warnings"] + warns,
               "_summary": {"origin": draft.origin, "differential": [d.diagnosis for d in draft.differential],
                            "insufficient": draft.insufficient,
                            "evidence_in_prompt": info.get("evidence_in_prompt")}}
        if info.get("messages"):
            out["_prompt"] = {"messages": info["messages"], "raw_output": info.get("raw"),
                              "prompt_tokens_counted": info.get("prompt_tokens_counted")}
        return out

    def direct(state: RunState) -> dict:
        cfg = _cfg(state)
        draft, warns, info = rt.generator(cfg).direct(state["presentation"])
        out = {"draft": draft.model_dump(), "warnings": state["warnings"] + warns,
               "_summary": {"differential": [d.diagnosis for d in draft.differential]}}
        if info.get("messages"):
            out["_prompt"] = {"messages": info["messages"], "raw_output": info.get("raw")}
        return out

    def verify(state: RunState) -> dict:
        draft = Draft(**state["draft"])
        evidence = [Evidence(**e) for e in state["evidence"]]
        if draft.insufficient:
            v = Verification(passed=False, reasons=["the answer states that the evidence is insufficient"])
            v_d = v.model_dump()
            v_d["cleaned_text"] = draft.text
            return {"verification": v_d, "_summary": {"passed": False, "insufficient": True}}
        v = rt.verifier_for(_cfg(state)).verify(draft, evidence, presentation=state["presentation"])
        vd = v.model_dump()
        update: dict = {"verification": vd,
                        "_summary": {"passed": v.passed, "claims": len(v.claims),
                                     "verdicts": {k: sum(c.verdict == k for c in v.claims)
                                                  for k in ("SUPPORTED", "CONTRADICTED", "INSUFFICIENT")},
                                     "fabricated": v.fabricated_citations, "reasons": v.reasons[:6]}}
        if v.fabricated_citations:
            update["warnings"] = state["warnings"] + [
                f"verifier dropped {len(v.fabricated_citations)} fabricated citation(s)"]
        return update

    def escalate(state: RunState) -> dict:
        v = state.get("verification") or {}
        reasons = list(state["escalation"]["reasons"]) + [f"verification: {r}" for r in v.get("reasons", [])]
        if not reasons:
            reasons = ["verification failed"]
        return {"escalation": {"escalated": True, "reasons": reasons}, "_summary": {"reasons": reasons}}

    def krg(state: RunState) -> dict:
        cfg = _cfg(state)
        evidence = [Evidence(**e) for e in state["evidence"]]
        draft = Draft(**state["draft"])
        cited = [c for d in draft.differential for c in d.citations]
        if not cfg.use_krg:
            return {"references": [], "reference_map": {}, "_summary": {"disabled": True}}
        # the reference list is what the answer cites (all evidence stays in the structured result)
        v = state.get("verification") or {}
        text = v.get("cleaned_text") or draft.text
        cited_all = set(cited) | {c.id for c in parse_citations(text, {e.id for e in evidence})}
        listed = [e for e in evidence if e.id in cited_all] or evidence[:10]
        refs, mapping = rt.krg.references(listed, cited_ids=cited or None)
        return {"references": [r.model_dump() for r in refs], "reference_map": mapping,
                "_summary": {"references": len(refs), "from_evidence": len(evidence)}}

    def finalize(state: RunState) -> dict:
        return {"_summary": {"escalated": state["escalation"]["escalated"]}}

    # ---- routing ----------------------------------------------------------------------------------------------
    def route_mode(state: RunState) -> str:
        return "direct" if state["config"].get("mode") == "direct" else "mee"

    def route_grade(state: RunState) -> str:
        if state["grade"]["sufficient"]:
            return "knl"
        if state.get("attempts", 0) < state["config"]["max_attempts"]:
            return "correct"
        return "escalate_retrieval"

    def route_generate(state: RunState) -> str:
        return "verify" if state["config"].get("use_verifier", True) else "krg"

    def route_verify(state: RunState) -> str:
        v = state.get("verification") or {}
        if v.get("passed"):
            return "krg"
        if state["escalation"]["escalated"]:   # retrieval was already exhausted: don't loop again
            return "escalate"
        if state.get("attempts", 0) < state["config"]["max_attempts"]:
            return "correct"
        return "escalate"

    g = StateGraph(RunState)
    for name, fn in [("intake", intake), ("mee", mee), ("hki", hki), ("grade", grade), ("correct", corrective),
                     ("escalate_retrieval", escalate_retrieval), ("knl", knl), ("generate", generate),
                     ("direct", direct), ("verify", verify), ("escalate", escalate), ("krg", krg),
                     ("finalize", finalize)]:
        g.add_node(name, node(name, fn))
    g.add_edge(START, "intake")
    g.add_conditional_edges("intake", route_mode, {"direct": "direct", "mee": "mee"})
    g.add_edge("mee", "hki")
    g.add_edge("hki", "grade")
    g.add_conditional_edges("grade", route_grade,
                            {"knl": "knl", "correct": "correct", "escalate_retrieval": "escalate_retrieval"})
    g.add_edge("correct", "hki")
    g.add_edge("escalate_retrieval", "knl")
    g.add_edge("knl", "generate")
    g.add_conditional_edges("generate", route_generate, {"verify": "verify", "krg": "krg"})
    g.add_conditional_edges("verify", route_verify, {"krg": "krg", "correct": "correct", "escalate": "escalate"})
    g.add_edge("escalate", "krg")
    g.add_edge("krg", "finalize")
    g.add_edge("direct", "finalize")
    g.add_edge("finalize", END)
    return g.compile(checkpointer=checkpointer)

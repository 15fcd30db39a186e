"""Corrective step: when evidence is weak (or an answer failed verification), widen the search.

Expands the query with KG synonyms and parent concepts of the uncovered entities, adds a HyDE passage (a
hypothetical reference text written by the LLM) when an LLM is present, widens k and relaxes thresholds.
Bounded by the caller's attempt counter; each call returns a new parameter set, never loops by itself.
"""
from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel

from .hki import RetrievalParams
from .textutil import fence
from .types import Extraction


class Correction(BaseModel):
    expansions: list[str]
    widened: dict
    hyde: str | None = None
    warnings: list[str] = []


class _Hyde(BaseModel):
    passage: str


def correct(extraction: Extraction | None, uncovered: list[str], params: RetrievalParams, kg=None, llm=None,
            presentation: str = "", attempt: int = 1) -> tuple[RetrievalParams, Correction]:
    expansions: list[str] = []
    warnings: list[str] = []
    ents = {e.text: e for e in (extraction.positive() if extraction else [])}
    targets = [ents[t] for t in uncovered if t in ents] or list(ents.values())
    for e in targets[:8]:
        if kg is None or not e.concept_id:
            continue
        c = kg.concept(e.concept_id)
        if c is None:
            continue
        terms = [s for s in (c.synonyms or [])[:3] if s.lower() != e.text.lower()]
        for pid in kg.parents(c.id)[:2]:
            pc = kg.concept(pid)
            if pc is not None:
                terms.append(pc.name)
        if terms:
            expansions.append(f"{c.name}: " + ", ".join(dict.fromkeys(terms)))
    hyde = None
    if llm is not None and getattr(llm, "enabled", False) and presentation:
        from .prompts import load_prompt

        msgs = [{"role": "system", "content": load_prompt("hyde_system")},
                {"role": "user", "content": load_prompt("hyde_user", presentation=fence(presentation))}]
        res = llm.structured(msgs, _Hyde, tag="hyde")
        if res.value is not None and res.value.passage.strip():
            hyde = res.value.passage.strip()[:1500]
            expansions.append(hyde)
        else:
            warnings.append(f"corrective: HyDE skipped ({res.error})")
    factor = 2 ** attempt
    new = replace(params, top_k=min(params.top_k * 2, 50), chunk_k=min(max(params.chunk_k, 4) * 2, 60),
                  min_entity_score=round(params.min_entity_score * 0.85, 3),
                  min_chunk_score=round(params.min_chunk_score * 0.5, 3),
                  max_evidence=min(params.max_evidence + 10 * attempt, 120))
    widened = {"top_k": new.top_k, "chunk_k": new.chunk_k, "min_entity_score": new.min_entity_score,
               "max_evidence": new.max_evidence, "factor": factor}
    return new, Correction(expansions=expansions, widened=widened, hyde=hyde, warnings=warnings)

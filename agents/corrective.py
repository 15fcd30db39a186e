"""Corrective step: when evidence is weak (or an answer failed verification), widen the search.

Expands the query with KG synonyms and parent concepts of the uncovered entities, adds a HyDE passage (a
hypothetical reference text written by the LLM) when an LLM is present, widens k and relaxes thresholds.
Bounded by the caller's attempt counter; each call returns a new parameter set, never loops by itself.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from pydantic import BaseModel

from .hki import RetrievalParams
from .textutil import fence
from .types import Extraction


class Correction(BaseModel):
    expansions: list[str]
    widened: dict
    hyde: str | None = None
    warnings: list[str] = []


@dataclass(frozen=True)
class CorrectiveConfig:
    """How far one corrective round widens retrieval, and what it adds to the queries."""

    max_targets: int = 8               # uncovered findings expanded per round
    synonyms_per_finding: int = 3
    parents_per_finding: int = 2
    top_k_factor: int = 2              # entity top-k x2 (at most top_k_max)
    top_k_max: int = 50
    chunk_k_min: int = 4               # chunk top-k: max(chunk_k, chunk_k_min) x2 (at most chunk_k_max)
    chunk_k_max: int = 60
    entity_score_factor: float = 0.85  # entity-match floor lowered by this factor
    chunk_score_factor: float = 0.5    # chunk-score floor lowered by this factor
    evidence_step: int = 10            # evidence kept grows by this much per attempt (at most evidence_max)
    evidence_max: int = 120
    hyde_max_chars: int = 1500


DEFAULT_CONFIG = CorrectiveConfig()


class _Hyde(BaseModel):
    passage: str


def correct(extraction: Extraction | None, uncovered: list[str], params: RetrievalParams, kg=None, llm=None,
            presentation: str = "", attempt: int = 1,
            config: CorrectiveConfig = DEFAULT_CONFIG) -> tuple[RetrievalParams, Correction]:
    expansions: list[str] = []
    warnings: list[str] = []
    ents = {e.text: e for e in (extraction.positive() if extraction else [])}
    targets = [ents[t] for t in uncovered if t in ents] or list(ents.values())
    cfg = config
    for e in targets[: cfg.max_targets]:
        if kg is None or not e.concept_id:
            continue
        c = kg.concept(e.concept_id)
        if c is None:
            continue
        terms = [s for s in (c.synonyms or [])[: cfg.synonyms_per_finding] if s.lower() != e.text.lower()]
        for pid in kg.parents(c.id)[: cfg.parents_per_finding]:
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
            hyde = res.value.passage.strip()[: cfg.hyde_max_chars]
            expansions.append(hyde)
        else:
            warnings.append(f"corrective: HyDE skipped ({res.error})")
    factor = 2 ** attempt
    new = replace(params, top_k=min(params.top_k * cfg.top_k_factor, cfg.top_k_max),
                  chunk_k=min(max(params.chunk_k, cfg.chunk_k_min) * 2, cfg.chunk_k_max),
                  min_entity_score=round(params.min_entity_score * cfg.entity_score_factor, 3),
                  min_chunk_score=round(params.min_chunk_score * cfg.chunk_score_factor, 3),
                  max_evidence=min(params.max_evidence + cfg.evidence_step * attempt, cfg.evidence_max))
    widened = {"top_k": new.top_k, "chunk_k": new.chunk_k, "min_entity_score": new.min_entity_score,
               "max_evidence": new.max_evidence, "factor": factor}
    return new, Correction(expansions=expansions, widened=widened, hyde=hyde, warnings=warnings)

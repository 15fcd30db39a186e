"""Retrieval grader: is the evidence sufficient to write an answer?

Sufficient when: at least ``min_evidence`` items; the share of positive entities with at least one evidence
item at or above ``min_score`` reaches ``min_coverage``; and — when the knowledge graph is among the sources —
at least one candidate disease was ranked. Otherwise the grade says which entities are uncovered, for the
corrective step.

Without entity extraction (``use_entities=False``, the MEE ablation) there are no findings to cover and the KG
ranker has nothing to rank: the evidence is graded on its volume only.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from .types import Candidate, Evidence, Extraction


class Grade(BaseModel):
    sufficient: bool
    coverage: float
    n_evidence: int
    uncovered: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)


def grade(extraction: Extraction | None, evidence: list[Evidence], candidates: list[Candidate],
          coverage_map: dict[str, list[str]], min_coverage: float = 0.5, min_evidence: int = 3,
          min_score: float = 0.5, need_candidates: bool = True, use_entities: bool = True) -> Grade:
    if not use_entities:
        reasons = [] if len(evidence) >= min_evidence else [
            f"only {len(evidence)} evidence items (need {min_evidence})"]
        return Grade(sufficient=not reasons, coverage=0.0, n_evidence=len(evidence), reasons=reasons)
    by_id = {e.id: e for e in evidence}
    positives = [e.text for e in extraction.positive()] if extraction else []
    covered, uncovered = [], []
    for text in positives:
        ids = coverage_map.get(text, [])
        if any(by_id[i].score >= min_score for i in ids if i in by_id):
            covered.append(text)
        else:
            uncovered.append(text)
    cov = len(covered) / len(positives) if positives else 0.0
    reasons = []
    if len(evidence) < min_evidence:
        reasons.append(f"only {len(evidence)} evidence items (need {min_evidence})")
    if not positives:
        reasons.append("no positive clinical findings were recognised in the presentation")
    elif cov < min_coverage:
        reasons.append(f"evidence covers {len(covered)}/{len(positives)} findings (need {min_coverage:.0%}); "
                       f"uncovered: {', '.join(uncovered[:8])}")
    if need_candidates and positives and not candidates:
        reasons.append("the knowledge graph ranked no candidate disease")
    return Grade(sufficient=not reasons, coverage=round(cov, 3), n_evidence=len(evidence), uncovered=uncovered,
                 reasons=reasons)

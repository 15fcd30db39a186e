"""Answer-level policy: which citations an answer may carry, and how a draft is verified.

- :func:`clean_draft`: the draft without any citation of an id that is not in the evidence — in the text, the
  differential's rationales and citation lists, and the next steps. Whatever produced the draft (an LLM that
  invented ids, the direct baseline, a path without the verifier), the answer shown never cites unknown ids.
- :func:`verify_draft`: a draft that declares the evidence insufficient is not checked claim by claim; it fails
  verification with that reason (so it is escalated, never "verified"). Any other draft goes to the verifier.
"""
from __future__ import annotations

from typing import Any, Iterable

from .types import Draft, Evidence, Verification
from .verifier import clean_citations, parse_citations

INSUFFICIENT_REASON = "the answer states that the evidence is insufficient"


def valid_citation(token: str, known: set[str]) -> bool:
    """True when ``token`` ("id" or "id:start-end") names an evidence item in ``known``."""
    token = token.strip().strip("[]").strip()
    return bool(token) and bool(parse_citations(f"[{token}]", known))


def clean_draft(draft: Draft, evidence_ids: Iterable[str]) -> tuple[Draft, list[str]]:
    """(the draft without citations of unknown ids, the removed tokens in order of appearance)."""
    known = set(evidence_ids)
    removed: list[str] = []
    out = draft.model_copy(deep=True)
    out.text, fab = clean_citations(out.text, known)
    removed += fab
    for item in out.differential:
        keep = []
        for c in item.citations:
            if valid_citation(c, known):
                keep.append(c)
            else:
                removed.append(c.strip())
        item.citations = keep
        item.rationale, fab = clean_citations(item.rationale, known)
        removed += fab
    steps = []
    for s in out.next_steps:
        s, fab = clean_citations(s, known)
        removed += fab
        steps.append(s)
    out.next_steps = steps
    return out, list(dict.fromkeys(r for r in removed if r))


def verify_draft(verifier: Any, draft: Draft, evidence: list[Evidence], presentation: str | None = None
                 ) -> Verification:
    """The verification of ``draft`` against ``evidence`` (see the module docstring)."""
    if draft.insufficient:
        cleaned, _ = clean_draft(draft, (e.id for e in evidence))
        return Verification(passed=False, reasons=[INSUFFICIENT_REASON], cleaned_text=cleaned.text,
                            cleaned_draft=cleaned)
    return verifier.verify(draft, evidence, presentation=presentation)


__all__ = ["clean_draft", "verify_draft", "valid_citation", "INSUFFICIENT_REASON"]

"""Answer-level policy: which citations an answer may carry, and how a draft is verified.

- :func:`clean_draft`: the draft without any citation of an id that is not in the evidence — in the text, the
  differential's rationales and citation lists, and the next steps. Whatever produced the draft (an LLM that
  invented ids, the direct baseline, a path without the verifier), the answer shown never cites unknown ids.
- :func:`verify_draft`: a draft that declares the evidence insufficient is not checked claim by claim; it fails
  verification with that reason (so it is escalated, never "verified"). Any other draft goes to the verifier.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

from .types import DifferentialItem, Draft, Evidence, Verification
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


DISAGREEMENT_HEADING = "### The language model and the knowledge-based ranking disagree"


_SPAN = re.compile(r":\d+-\d+$")


def _bare(token: str) -> str:
    """An evidence id without a character-span suffix ("B:doc#0:12-80" -> "B:doc#0")."""
    return _SPAN.sub("", token.strip().strip("[]").strip())


def item_support(item: DifferentialItem, v: Verification) -> str:
    """How the verifier judged the claims of one diagnosis: "supported", "partly supported", "not supported", or
    "no evidence" (the diagnosis cites nothing, e.g. proposed by the model only)."""
    cited = set(item.citations)
    if not cited:
        return "no evidence"
    cited = {_bare(x) for x in cited}
    verdicts = [c.verdict for c in v.claims if cited & {_bare(x) for x in c.citations}]
    if not verdicts:
        return "supported" if v.passed else "not checked"
    n = sum(x == "SUPPORTED" for x in verdicts)
    return "supported" if n == len(verdicts) else "partly supported" if n else "not supported"


def apply_support(draft: Draft, v: Verification) -> Draft:
    """The draft with each diagnosis's verdict (:func:`item_support`); a diagnosis none of whose claims the
    evidence supports moves to the end of the differential with the reason. Its text is re-written from the items
    when the order changed (the model's answers; an extractive answer only quotes its evidence)."""
    if not draft.differential:
        return draft
    items = []
    for it in draft.differential:
        sup = item_support(it, v)
        note = it.note
        if sup == "no evidence" and "model" in it.origins and "model only, no evidence" not in note:
            note = "; ".join(x for x in ("model only, no evidence", note) if x)   # e.g. its citations were cleaned
        if sup == "not supported":
            note = "; ".join(x for x in ("not supported by the cited evidence", note) if x)
        items.append(it.model_copy(update={"support": sup, "note": note}))
    kept = [it for it in items if it.support != "not supported"]
    dropped = [it for it in items if it.support == "not supported"]
    order = kept + dropped
    changed = [it.diagnosis for it in order] != [it.diagnosis for it in items]
    order = [it.model_copy(update={"rank": i + 1}) for i, it in enumerate(order)]
    out = draft.model_copy(update={"differential": order})
    if changed:
        from .generator import render  # noqa: PLC0415

        tail = ""
        if DISAGREEMENT_HEADING in draft.text:
            tail = "\n" + draft.text[draft.text.index(DISAGREEMENT_HEADING):]
        out.text = render(order, draft.next_steps) + tail
    return out


__all__ = ["apply_support", "clean_draft", "item_support", "verify_draft", "valid_citation", "INSUFFICIENT_REASON"]

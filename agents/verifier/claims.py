"""Claims of an answer: list items and sentences, each with the citations written in it.

Headers, disclaimers, "Insufficient evidence ..." lines, questions (a quoted reference page's "What are the
symptoms of X?" asserts nothing) and table rules are skipped (with the reason). Citations written right after a
sentence's full stop belong to that sentence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from agents.textutil import is_question
from agents.types import Draft

from .citations import Citation, parse_citations, strip_citations

_HEADER = re.compile(r"^(?:#{1,6}\s|\*\*[^*]{1,80}\*\*:?\s*$|__[^_]{1,80}__:?\s*$|[-=_*]{3,}\s*$)")
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d{1,2}[.)]|[a-z][.)])\s+")
_DISCLAIMER = re.compile(r"not (?:a )?substitute|clinical judg(?:e)?ment|medical advice|decision[- ]support|"
                         r"for (?:educational|informational) purposes|does not replace|disclaimer|"
                         r"consult (?:a|your|with a) (?:qualified |licensed )?(?:clinician|physician|doctor|"
                         r"health ?care)|must be (?:confirmed|reviewed) by|not a diagnosis", re.I)
_INSUFFICIENT = re.compile(r"^\W*(?:insufficient evidence|not enough evidence|the evidence (?:is|was) "
                           r"insufficient)", re.I)
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|vs|etc|approx|dr|mr|mrs|ms|st|no|fig|al)\.$", re.I)
_CLAIM_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\[(\"'A-Z0-9])")
_LEADING_CITES = re.compile(r"^((?:\s*\[[^\[\]\n]{2,600}\])+)\s*")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass
class Claim:
    text: str                        # as written (with citations)
    clean: str                       # without citation brackets
    citations: list[Citation] = field(default_factory=list)


def split_sentences(text: str) -> list[str]:
    """Sentences of an evidence text (at least 3 characters each)."""
    return [s.strip() for s in _SENT_SPLIT.split(text) if len(s.strip()) >= 3]


def _sentences_of_line(line: str) -> list[str]:
    parts = _CLAIM_SPLIT.split(line)
    merged: list[str] = []
    for p in parts:
        if merged and _ABBREV.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {p}"
            continue
        m = _LEADING_CITES.match(p)
        if m and merged and "]" in m.group(1):
            # citations written after the previous sentence's full stop belong to it
            merged[-1] = f"{merged[-1]} {m.group(1).strip()}"
            p = p[m.end():]
        if p.strip():
            merged.append(p.strip())
    return merged


def split_claims(text: str, known: set[str]) -> tuple[list[Claim], list[str]]:
    """Claims of an answer and the skipped lines (with the reason in front)."""
    claims: list[Claim] = []
    skipped: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("|") and line.endswith("|") and set(line) <= set("|-: "):
            continue
        if _HEADER.match(line):
            skipped.append(f"header: {line}")
            continue
        line = _BULLET.sub("", line).replace("**", "").replace("__", "").strip()
        if not line:
            continue
        cites_in_line = parse_citations(line, known)
        if line.endswith(":") and not cites_in_line and len(line.split()) <= 10:
            skipped.append(f"header: {line}")
            continue
        for sent in _sentences_of_line(line):
            clean = strip_citations(sent, known)
            if _INSUFFICIENT.search(clean):
                skipped.append(f"insufficient-evidence statement: {clean}")
                continue
            if _DISCLAIMER.search(clean):
                skipped.append(f"disclaimer: {clean}")
                continue
            if is_question(clean):
                skipped.append(f"question: {clean}")
                continue
            if not re.search(r"[A-Za-z]{2,}", clean):
                if parse_citations(sent, known) and claims:  # a stray citation group: attach to previous claim
                    claims[-1].citations.extend(parse_citations(sent, known))
                continue
            claims.append(Claim(sent, clean, parse_citations(sent, known)))
    return claims, skipped


def compose_text(draft: Draft) -> str:
    """An answer text from the structured draft, when the draft has no text."""
    lines: list[str] = []
    for d in draft.differential:
        cites = "".join(f"[{c}]" for c in d.citations if c not in d.rationale)
        body = d.rationale.strip() or d.diagnosis
        if cites:
            body = body.rstrip(".") + f" {cites}."
        lines.append(f"- {body}")
    for s in draft.next_steps:
        lines.append(f"- {s}")
    return "\n".join(lines)


__all__ = ["Claim", "split_claims", "split_sentences", "compose_text"]

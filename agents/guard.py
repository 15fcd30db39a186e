"""Input guard: sentences in a presentation that address the assistant instead of describing the patient
("ignore previous instructions…", "you are now…", "cite [X]") are removed before any agent sees the text.
They are not clinical content; the original message stays in the audit trail and the result says what was
removed."""
from __future__ import annotations

import re

_PATTERNS = [
    r"\b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}\b(?:instruction|instructions|prompt|prompts|rules|"
    r"guidelines|context|above|previous|prior|earlier)\b",
    r"\byou\s+(?:are|will)\s+now\b", r"\bact\s+as\b", r"\bpretend\s+(?:to\s+be|you)\b", r"\bsystem\s+prompt\b",
    r"\bnew\s+instructions?\b", r"\bjailbreak\b", r"\bdeveloper\s+mode\b",
    r"\b(?:state|say|answer|respond|reply|output|write|claim)\s+(?:only\s+)?(?:that|with|the\s+following)\b",
    r"\bcite\s*\[", r"\bmark\s+(?:it|this|the\s+answer)\s+(?:as\s+)?verified\b",
]
_INJECTION = re.compile("|".join(_PATTERNS), re.I)
_SENT = re.compile(r"[^.!?\n]+[.!?]*")


def strip_instructions(text: str) -> tuple[str, list[str]]:
    """Return (text without instruction-like sentences, the removed sentences)."""
    kept, removed = [], []
    for m in _SENT.finditer(text):
        sent = m.group(0)
        if _INJECTION.search(sent):
            removed.append(sent.strip())
        else:
            kept.append(sent)
    if not removed:
        return text, []
    clean = re.sub(r"\s{2,}", " ", "".join(kept)).strip()
    return clean, removed

"""Small text helpers shared by agents: sentence splitting with offsets, content terms, fencing untrusted text.

Word normalisation (stop words, stemming) lives in :mod:`knowledge.text`; :func:`terms` is re-exported here.
"""
from __future__ import annotations

import re

from knowledge.text import terms

_SENT = re.compile(r"(?:[^.!?\n]|\.(?=\d))+(?:[.!?]+|\n|$)")   # "3.6" does not end a sentence


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of sentences in ``text`` (trimmed of surrounding whitespace)."""
    out = []
    for m in _SENT.finditer(text):
        s, e = m.start(), m.end()
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e - s >= 3:
            out.append((s, e))
    return out


def fence(text: str) -> str:
    """Neutralise our own fence markers inside untrusted text before it goes into a prompt."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


__all__ = ["sentences", "terms", "fence"]

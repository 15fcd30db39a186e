"""Small text helpers shared by agents: sentence splitting with offsets, content terms, fencing untrusted text."""
from __future__ import annotations

import re

_SENT = re.compile(r"(?:[^.!?\n]|\.(?=\d))+(?:[.!?]+|\n|$)")   # "3.6" does not end a sentence
_WORD = re.compile(r"[a-z0-9][a-z0-9\-']*")
STOP = frozenset("""a an and are as at be been being by can could do does for from had has have having he her his
how i if in into is it its may might more most no not of on or other our she should so some such than that the their
them then there these they this those to too very was we were what when where which while who whom why will with
would you your also about after before over under between during through per each any all both either one two
patient patients people person often usually sometimes common commonly include includes including called known
cause causes caused symptom symptoms sign signs disease diseases condition conditions""".split())


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


def stem(w: str) -> str:
    for suf in ("ing", "ies", "es", "ed", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)] + ("y" if suf == "ies" else "")
    return w


def terms(text: str) -> set[str]:
    """Content terms (lowercased, light stemming, stop words removed)."""
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in STOP and len(w) > 2}


def fence(text: str) -> str:
    """Neutralise our own fence markers inside untrusted text before it goes into a prompt."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")

"""Normalisation of concept names for look-up and cross-source matching."""
from __future__ import annotations

import re
import unicodedata

_POSSESSIVE = re.compile(r"(?<=\w)['\u2019\u02bc]s\b")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_ROMAN = {"ii": "2", "iii": "3", "iv": "4", "vi": "6", "vii": "7", "viii": "8", "ix": "9"}
_ROMAN_RE = re.compile(r"\b(ii|iii|iv|vi|vii|viii|ix)\b")
# single-letter numerals only where they are clearly numbers ("type I", "stage V", "factor X")
_ROMAN_AFTER = re.compile(r"\b(type|stage|grade|class|phase|factor|group|form)\s+(i|v|x)\b")
_SINGLE = {"i": "1", "v": "5", "x": "10"}


def normalise(text: str) -> str:
    """Case-, accent-, punctuation- and whitespace-insensitive key of a name.

    ``"Asthma."``, ``" asthma "`` -> ``"asthma"``; ``"type-2 diabetes"`` -> ``"type 2 diabetes"``;
    ``"Alzheimer's disease"`` -> ``"alzheimer disease"`` (possessive dropped, as DO/HPO label it);
    ``"type II diabetes"`` -> ``"type 2 diabetes"`` (Roman numerals as digits).
    """
    if not text:
        return ""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = _POSSESSIVE.sub("", text.lower())
    text = _NON_ALNUM.sub(" ", text).strip()
    if "i" in text or "v" in text or "x" in text:
        text = _ROMAN_RE.sub(lambda m: _ROMAN[m.group(1)], text)
        text = _ROMAN_AFTER.sub(lambda m: f"{m.group(1)} {_SINGLE[m.group(2)]}", text)
    return text


def uninvert(name: str) -> str | None:
    """MeSH-style inverted heading to natural order: ``"Aging, Premature"`` -> ``"Premature Aging"``."""
    if name.count(",") != 1:
        return None
    head, tail = (p.strip() for p in name.split(","))
    if not head or not tail:
        return None
    return f"{tail} {head}"

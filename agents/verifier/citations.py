"""Inline citations of an answer.

Citations look like ``[id]``, ``[id:start-end]`` (a character span in the source document), ``[id1; id2]`` or
``[id1][id2]``. A bracketed token is a citation when it is a known evidence id (optionally with a span suffix)
or has the shape of one (``G:``/``B:``/``O:`` prefix). Shaped tokens that are not in the supplied evidence are
*fabricated*. Other brackets (``[1]``, ``[sic]``) are left alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ID_SHAPE = re.compile(r"^[GBO]:[^\s\[\];,]+$")
SPAN_SUFFIX = re.compile(r"^(?P<base>.+?):(?P<a>\d+)-(?P<b>\d+)$")
BRACKET = re.compile(r"\[([^\[\]\n]{2,600})\]")
SPLIT_IDS = re.compile(r"\s*[;,]\s*")

TokenKind = Literal["valid", "fabricated", "other"]


@dataclass
class Citation:
    id: str
    span: tuple[int, int] | None = None
    raw: str = ""


def resolve(token: str, known: set[str]) -> tuple[TokenKind, Citation | None]:
    """Classify one bracketed token: ("valid", Citation) / ("fabricated", None) / ("other", None)."""
    tok = token.strip()
    if tok in known:
        return "valid", Citation(tok, None, tok)
    m = SPAN_SUFFIX.match(tok)
    if m and m.group("base") in known:
        a, b = int(m.group("a")), int(m.group("b"))
        return "valid", Citation(m.group("base"), (min(a, b), max(a, b)), tok)
    if ID_SHAPE.match(tok):
        return "fabricated", None
    return "other", None


def parse_citations(text: str, known: set[str]) -> list[Citation]:
    """Valid citations in ``text``, in order of appearance (duplicates kept once)."""
    out: list[Citation] = []
    seen: set[str] = set()
    for m in BRACKET.finditer(text):
        for tok in SPLIT_IDS.split(m.group(1)):
            kind, cit = resolve(tok, known)
            if kind == "valid" and cit is not None and cit.raw not in seen:
                seen.add(cit.raw)
                out.append(cit)
    return out


def clean_citations(text: str, known: set[str]) -> tuple[str, list[str]]:
    """Remove citations of unknown ids from ``text``. Returns (cleaned text, fabricated tokens)."""
    fabricated: list[str] = []

    def repl(m: re.Match) -> str:
        toks = [t.strip() for t in SPLIT_IDS.split(m.group(1)) if t.strip()]
        kinds = [resolve(t, known)[0] for t in toks]
        if "fabricated" not in kinds:
            return m.group(0)
        keep = [t for t, k in zip(toks, kinds) if k != "fabricated"]
        fabricated.extend(t for t, k in zip(toks, kinds) if k == "fabricated")
        return f"[{'; '.join(keep)}]" if keep else "\x00"

    out = BRACKET.sub(repl, text)
    if "\x00" in out:
        out = re.sub(r"[ \t]*\x00", "", out)
        out = re.sub(r"[ \t]+([.,;:!?])", r"\1", out)
    return out, fabricated


def strip_citations(text: str, known: set[str] | None = None) -> str:
    """``text`` without citation brackets (any bracket whose tokens all look like evidence ids)."""
    def repl(m: re.Match) -> str:
        toks = [t.strip() for t in SPLIT_IDS.split(m.group(1)) if t.strip()]
        if toks and all(ID_SHAPE.match(t) or (known and resolve(t, known)[0] == "valid") for t in toks):
            return ""
        return m.group(0)

    out = BRACKET.sub(repl, text)
    out = re.sub(r"[ \t]+([.,;:!?])", r"\1", out)
    return re.sub(r"[ \t]{2,}", " ", out).strip()


__all__ = ["Citation", "resolve", "parse_citations", "clean_citations", "strip_citations"]

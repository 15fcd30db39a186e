"""Where the patient has been: travel and origin read from the presentation, as broad world regions.

"Back from Thailand 5 days ago", "returned from a safari in Kenya", "a trip to rural Mexico", "recently immigrated
from Guatemala", "traveled out of the country in the last 4 weeks: West Africa" — a cue that says the patient was
somewhere, then a place of the gazetteer ``places.tsv`` (next to this module: place name -> region, a country or a
sub-region in two regions on two lines) within the same clause. The regions are the eight of the knowledge graph's
endemic-regions table (``knowledge.kg.endemic.REGIONS``); the ranker weighs down a geographically restricted disease
that is not acquired in any of them. A denied trip ("denies recent travel", "no travel outside Canada") gives
nothing, and a place without a cue ("Thailand" in "a Thai restaurant") is not a place the patient has been.
"""
from __future__ import annotations

import csv
import functools
import re
from pathlib import Path

from agents.types import Place

PLACES = Path(__file__).with_name("places.tsv")

# a cue that the patient was (or comes from) somewhere; the place follows within the clause
_CUE = re.compile(
    r"\b(?:back|returned|returning|returns|came\s+back|home)\s+(?:home\s+)?from\b"
    r"|\b(?:travel(?:l)?(?:ed|ing)?|trip|trips|journey|holiday|holidays|vacation|vacationing|safari|trek|trekking|"
    r"hiking|camping|mission|deployment|deployed|stay|stayed|staying|visit|visited|visiting|lived|living|lives|"
    r"worked|working|works|volunteer(?:ed|ing)?|born|raised|immigrated|emigrated|moved|migrated|arrived|refugee)\b"
    r"(?:\s+(?:\w+\s+){0,4}?(?:to|in|from|through|around|across|at|out\s+of\s+the\s+country[^:]{0,40}:))"
    r"|\b(?:is|was|are|originally)\s+(?:originally\s+)?from\b|\bnative\s+of\b|\ba\s+(?:recent\s+)?(?:immigrant|"
    r"refugee|visitor|traveller|traveler)\s+from\b",
    re.I)
_DENIED = re.compile(r"\b(?:no|denies|denied|denying|without|never|not)\b(?:\s+\w+){0,3}\s*$", re.I)
_CLAUSE_END = re.compile(r"[.;!?\n]|\b(?:but|and\s+(?:has|is|was|reports|presents|complains)|who|with)\b", re.I)
_WINDOW = 90


@functools.lru_cache(maxsize=4)
def load_places(path: str = str(PLACES)) -> dict[str, tuple[str, ...]]:
    """Place name (lower case) -> the regions it lies in."""
    out: dict[str, set[str]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        lines = [line for line in fh if line.strip() and not line.startswith("#")]
        for row in csv.DictReader(lines, delimiter="\t"):
            name = " ".join((row.get("place") or "").lower().split())
            region = (row.get("region") or "").strip()
            if name and region:
                out.setdefault(name, set()).add(region)
    return {k: tuple(sorted(v)) for k, v in out.items()}


@functools.lru_cache(maxsize=4)
def _place_pattern(path: str = str(PLACES)) -> re.Pattern:
    names = sorted(load_places(path), key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:the\s+)?(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])", re.I)


def find_places(text: str, path: Path | str = PLACES) -> list[Place]:
    """The places the text says the patient has been in or comes from, in text order, each with its regions."""
    places = load_places(str(path))
    pattern = _place_pattern(str(path))
    out: dict[tuple[int, int], Place] = {}
    for cue in _CUE.finditer(text):
        if _DENIED.search(text[max(0, cue.start() - 40):cue.start()]):
            continue
        window = text[cue.end():cue.end() + _WINDOW]
        stop = _CLAUSE_END.search(window)
        if stop:
            window = window[:stop.start()]
        for m in pattern.finditer(window):
            start, end = cue.end() + m.start(1), cue.end() + m.end(1)
            name = " ".join(m.group(1).lower().split())
            out.setdefault((start, end), Place(text=text[start:end], start=start, end=end,
                                               regions=list(places[name])))
    return [out[k] for k in sorted(out)]


__all__ = ["PLACES", "load_places", "find_places"]

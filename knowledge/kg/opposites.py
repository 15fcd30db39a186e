"""Opposite findings: pairs of symptom/phenotype concepts that cannot both describe one measurement or sign of a
patient at one time ("Decreased thyroid-stimulating hormone level" and "Elevated circulating thyroid-stimulating
hormone concentration", "Hypokalemia" and "Hyperkalemia", "Tachycardia" and "Bradycardia").

Why: a finding the patient has argues against a disease that expects its opposite about as strongly as a finding
the patient is said not to have. Without the pairs, a suppressed TSH and a raised free T4 would count for nothing
against hypothyroidism, whose profile names the raised TSH and the low T4.

Two ways a pair is made:

* **by name**, for the thousands of laboratory and measurement terms HPO writes in a regular way: the name with its
  one direction word ("increased", "elevated", "raised", "high" / "decreased", "reduced", "low" ...) or its
  "hyper"/"hypo" prefix taken off, and filler words ("circulating", "concentration", "level", "serum", "plasma")
  dropped, must be the same for one "up" and one "down" term ("Increased circulating ACTH level" /
  "Decreased circulating ACTH concentration"; "Hypercalcemia" / "Hypocalcemia");
* **from a reviewed list** (``opposite_findings.tsv`` next to this module) for the opposites the names do not show:
  "Tachycardia" / "Bradycardia", "Leukocytosis" / "Leukopenia", "Weight loss" / "Weight gain" ...

Only the finding concepts of the graph are paired, never diseases. A disease whose own profile names both terms of a
pair (a thyroiditis with a hyper- and a hypothyroid phase) is not argued against by either: that rule lives in the
ranker (``agents/ranker.py``), which uses these pairs.
"""
from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

PATH = Path(__file__).with_name("opposite_findings.tsv")

_UP = r"increased|elevated|raised|high|higher|abnormally high|excessive|excess"
_DOWN = r"decreased|reduced|low|lower|abnormally low|diminished|deficient"
_DIRECTION = re.compile(rf"\b({_UP}|{_DOWN})\b", re.I)
_IS_UP = re.compile(rf"^(?:{_UP})$", re.I)
_PREFIX = re.compile(r"^(hyper|hypo)(?=[a-z]{4})")
_FILLER = re.compile(r"\b(circulating|concentrations?|levels?|serum|plasma|blood|in (?:the )?(?:blood|serum|plasma))\b")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def direction_key(name: str) -> tuple[str, str] | None:
    """``(what is measured, "up" | "down")`` for a finding name that says a direction once, else None.

    >>> direction_key("Increased circulating free T4 concentration")
    ('free t4', 'up')
    >>> direction_key("Hypokalemia")
    ('kalemia', 'down')
    >>> direction_key("Fever") is None
    True
    """
    n = (name or "").lower().strip()
    hits = list(_DIRECTION.finditer(n))
    if len(hits) == 1:
        way = "up" if _IS_UP.match(hits[0].group(1)) else "down"
        rest = n[:hits[0].start()] + " " + n[hits[0].end():]
    elif not hits and (m := _PREFIX.match(n)):
        way = "up" if m.group(1) == "hyper" else "down"
        rest = n[m.end():]
    else:
        return None
    rest = _NON_WORD.sub(" ", _FILLER.sub(" ", rest)).strip()
    return (rest, way) if rest else None


def read_pairs(path: Path = PATH) -> list[tuple[str, str]]:
    """The reviewed pairs of finding names (``#`` lines are comments; two tab-separated names per row)."""
    out: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as fh:
        for i, row in enumerate(csv.reader((ln for ln in fh if ln.strip() and not ln.startswith("#")),
                                           delimiter="\t"), 1):
            if len(row) != 2 or not row[0].strip() or not row[1].strip():
                raise ValueError(f"{path.name}: row {i}: expected two tab-separated finding names, got {row!r}")
            out.append((row[0].strip(), row[1].strip()))
    return out


def opposite_findings(names: Mapping[str, str],
                      pairs: Iterable[tuple[str, str]] | None = None) -> dict[str, frozenset[str]]:
    """Finding id -> the ids of its opposite findings, for the finding concepts ``names`` (id -> name).

    ``pairs``: pairs of names to oppose besides those the names show (default: the reviewed list); a name matches
    every concept carrying it, case-insensitively. The relation is symmetric."""
    by_key: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"up": [], "down": []})
    by_name: dict[str, list[str]] = defaultdict(list)
    for cid, name in names.items():
        by_name[(name or "").lower().strip()].append(cid)
        k = direction_key(name)
        if k is not None:
            by_key[k[0]][k[1]].append(cid)
    out: dict[str, set[str]] = defaultdict(set)

    def oppose(a: Iterable[str], b: Iterable[str]) -> None:
        a, b = list(a), list(b)
        for x in a:
            out[x].update(b)
        for y in b:
            out[y].update(a)

    for ways in by_key.values():
        if ways["up"] and ways["down"]:
            oppose(ways["up"], ways["down"])
    for a, b in (read_pairs() if pairs is None else pairs):
        oppose(by_name.get(a.lower(), ()), by_name.get(b.lower(), ()))
    return {k: frozenset(v - {k}) for k, v in out.items() if v - {k}}

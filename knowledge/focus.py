"""Which knowledge-graph diseases a reference page is about, from its focus (the page's title).

MedQuAD's foci are page titles, not concept names. About a third of them name no KG concept as written, although
many name diseases the graph holds: an abbreviation in brackets ("Omsk Hemorrhagic Fever (OHF)"), an alias in
brackets ("Bile Duct Cancer (Cholangiocarcinoma)", "Gum (Periodontal) Disease"), a collection prefix ("Parasites -
Schistosomiasis"), an inverted heading ("Hypertrichosis lanuginosa, acquired"), or two diseases on one page
("Diverticulosis and Diverticulitis", "Thymoma and Thymic Carcinoma"). :func:`resolve_focus` tries the title as
written, then those readings of it in a fixed order, and returns the diseases of the first reading that names one —
or, for a consumer page about several conditions, each condition named.

The rare and genetic disease collections (GARD, GHR) are never split at "and": there a title such as "Cerebellar
ataxia and hypogonadotropic hypogonadism" is one syndrome, not two diseases. The commonness prior reads the titles
of consumer health pages with it (:mod:`knowledge.prior`), where a page counts as a fact about the disease; the
disease pages and the retrieval votes keep the title as written (reading every title this way made them rank worse:
docs/results.md).
"""
from __future__ import annotations

import re
from typing import Any

from .kg.normalize import uninvert

RARE_COLLECTIONS = ("GARD", "GHR")     # rare and genetic disease references: a title is one disease

_PAREN = re.compile(r"\s*\(([^()]*)\)")
_ALIAS_LEAD = re.compile(r"^(?:also known as|aka|or|including)\s+", re.I)
_ABBREVIATION = re.compile(r"^[A-Z0-9][A-Z0-9.\-/ ]{0,7}$")          # "OHF", "P.A.D.", "HeV" is not
_SPLIT = re.compile(r"\s*,\s*(?:and|or)\s+|\s*,\s*|\s+(?:and|or)\s+", re.I)
_PART_LEAD = re.compile(r"^(?:other|the|some)\s+", re.I)
# a part that names a group of conditions ("Foot Injuries" in "Foot Injuries and Disorders", "Pleural Disorders")
_GROUP_PART = re.compile(r"\b(?:injuries|disorders|diseases|problems|conditions|malignancies|tumou?rs|neoplasms)$",
                         re.I)
MIN_PART = 4
# a title about the means, not the conditions: its last word governs every part ("Tetanus, Diphtheria, and
# Pertussis Vaccines" is about no disease)
_NOT_A_DISEASE = re.compile(r"\b(?:vaccines?|vaccinations?|medicines?|medications?|drugs|screening|tests?|testing|"
                            r"surgery|transplant(?:ation|s)?|nutrition|safety)\s*$", re.I)


def readings(title: str, organisation: str | None = None) -> list[str]:
    """The ways ``title`` may name one disease, in the order they are tried: as written; without a bracketed
    part; with a bracketed word in place of the word before it ("Gum (Periodontal) Disease" -> "Periodontal
    Disease"); a bracketed alias at the end on its own (not a bare abbreviation); after a collection prefix
    ("Parasites - Hookworm" -> "Hookworm"; not in the rare-disease collections, where " - " joins the features of
    one syndrome); each of these un-inverted ("X, acquired" -> "acquired X")."""
    title = " ".join((title or "").split())
    out = [title]
    marks = list(_PAREN.finditer(title))
    if marks:
        out.append(" ".join(_PAREN.sub(" ", title).split()))
        for m in marks:
            inner = _ALIAS_LEAD.sub("", m.group(1).strip())
            if not inner:
                continue
            rest = title[m.end():].strip()
            if rest:                                   # in the middle: it replaces the word before it
                head = title[:m.start()].rsplit(" ", 1)
                out.append(" ".join(((head[0] if len(head) > 1 else ""), inner, rest)).strip())
            elif not _ABBREVIATION.match(inner):       # at the end: an alias of the whole title
                out.append(inner)
    for v in list(out) if organisation not in RARE_COLLECTIONS else ():
        if " - " in v:
            out.append(v.rsplit(" - ", 1)[1].strip())
    for v in list(out):
        u = uninvert(v)
        if u:
            out.append(u)
    seen: dict[str, None] = {}
    for v in out:
        v = v.strip(" -,")
        if len(v) >= MIN_PART:
            seen.setdefault(v, None)
    return list(seen)


def parts(title: str) -> list[str]:
    """The conditions a multi-topic title names, split at commas, "and" and "or" ("Diabetes, Heart Disease, and
    Stroke" -> three); bracketed parts, leading "Other"/"the" and parts naming a group ("Other Pleural Disorders")
    are dropped. A title that does not split: []."""
    bare = " ".join(_PAREN.sub(" ", title or "").split())
    bare = bare.rsplit(" - ", 1)[-1]
    split = [_PART_LEAD.sub("", p.strip()) for p in _SPLIT.split(bare)]
    if len(split) < 2:
        return []
    return [p for p in split if len(p) >= MIN_PART and not _GROUP_PART.search(p)]


def _first(kg: Any, names: list[str], categories: tuple[str, ...], as_written: bool) -> Any:
    """The best concept the first name that names one names: the title as written by any name (:meth:`lookup`),
    every other reading by its exact names only (no abbreviation, no related or narrower synonym: "Cold" in "Cold
    and Cough Medicines" is no COLD)."""
    for i, name in enumerate(names):
        hits = (kg.lookup(name, categories=categories) if as_written and i == 0
                else kg.exact_matches(name, categories=categories))
        if hits:
            return hits[0]
    return None


def resolve_focus(kg: Any, title: str, organisation: str | None = None,
                  categories: tuple[str, ...] = ("disease",)) -> list[Any]:
    """The KG concepts (of ``categories``) a page titled ``title`` is about: the first of :func:`readings` that
    names one, else — for a page outside the rare-disease collections — every part of a multi-topic title that
    names one by an exact name (in title order, each once; not when its last word makes it a page about vaccines,
    medicines, tests ...). [] when the title names no disease (a drug, a test, "Farm Health and
    Safety")."""
    hit = _first(kg, readings(title, organisation), categories, as_written=True)
    if hit is not None:
        return [hit]
    if organisation in RARE_COLLECTIONS or _NOT_A_DISEASE.search(title or ""):
        return []
    out: dict[str, Any] = {}
    for part in parts(title):
        hit = _first(kg, readings(part, organisation), categories, as_written=False)
        if hit is not None:
            out.setdefault(hit.id, hit)
    return list(out.values())

"""Findings said in everyday words ("my neck hurts", "blood in my pee", "I can't sleep") as knowledge-graph findings.

Patients, and clinicians quoting them, describe findings in words no ontology lists: the vocabulary knows "neck
pain", "hematuria" and "insomnia", not "my neck hurts", "blood in my pee" or "I can't fall asleep". The lay phrase
table (``lay_phrases.tsv``, tab-separated: concept id, the concept's name in the knowledge graph, form, pattern) maps
such expressions to the concept the vocabulary would have found for the clinical word. Forms:

``phrase``
    the (case-insensitive) pattern is the whole finding;
``pain``
    the pattern names a body part; "my P hurts/aches/is sore", "pain/ache/discomfort in my P", "sore/aching P" and
    "P ache/pain" give the finding;
``swelling``
    the pattern names a body part; "swelling in my P", "swollen/puffy P", "my P is swollen / swells" and "P
    swelling" give the finding;
``region``
    the pattern names a region where pain is felt ("epigastrium", "left hypochondrium"); the region's words are the
    finding when a word for pain or tenderness comes before them in the same clause, so each place of a list is
    read: "pain (burning) in the lower chest, the left hypochondrium and the epigastrium" gives left upper
    quadrant pain and epigastric pain.

Negation, history and family come from the sentence around the phrase (medspaCy ConText), as for any vocabulary
match: "no blood in my pee" is a negated hematuria. A phrase is read as a whole (its words are not matched again),
and the longest of overlapping phrases wins. The integration tests check that every id exists in the knowledge graph
under the name given.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from .findings import Finding, PhraseRule, read_phrase_table, resolve_overlaps

LAY_TABLE = Path(__file__).with_name("lay_phrases.tsv")
FORMS = ("phrase", "pain", "swelling", "region")
# a region is a site of pain when a pain word comes before it in its clause (no sentence or clause break between)
_PAIN_BEFORE = re.compile(r"\b(?:pains?|painful|tender(?:ness)?|discomfort|aches?|aching|cramps?|cramping|"
                          r"colic(?:ky)?)\b[^.;:!?\n]{0,160}$", re.I)

_I = re.IGNORECASE
_OWNER = r"(?:my|the|his|her|their|your|both|both\s+of\s+my)\s+"
_SIDE = r"(?:(?:left|right|lower|upper|whole|entire|inner|outer)\s+)?"
_ADV = r"(?:(?:\w+ly|really|so|very|quite|also|still|always|often|sometimes|a\s+bit|a\s+lot|more|too)\s+)"
_BE = r"(?:is|are|was|were|feels?|felt|has\s+been|have\s+been|gets?|got|became|become|looks?|seems?|seem)"


def load_lay_table(path: Path | str = LAY_TABLE) -> list[PhraseRule]:
    """The rows of a lay phrase table (see :func:`.findings.read_phrase_table`)."""
    return read_phrase_table(path, FORMS)


def expand(form: str, part: str) -> str:
    """The regular expression a ``pain`` or ``swelling`` row stands for (``part`` names the body part)."""
    p = f"(?:{part})"
    if form == "pain":
        return "|".join((
            rf"\b{_OWNER}{_SIDE}{p}\s+{_ADV}{{0,2}}(?:hurts?|hurting|aches?|aching|throbs?|throbbing|"
            rf"{_BE}\s+{_ADV}{{0,2}}(?:sore|painful|tender|aching|achy|hurting|killing\s+me))\b",
            rf"\b(?:pains?|aches?|aching|agony|discomfort|soreness|tenderness)\s+(?:in|on|around|at)\s+"
            rf"{_OWNER}{_SIDE}{p}\b",
            rf"\b(?:sore|painful|aching|achy|throbbing)\s+{_SIDE}{p}\b",
            rf"\b{p}\s?(?:aches?|pains?)\b",
        ))
    if form == "swelling":
        return "|".join((
            rf"\b(?:swelling|swollenness|puffiness|oedema|edema)\s+(?:in|of|on|around)\s+{_OWNER}{_SIDE}{p}\b",
            rf"\b(?:swollen|puffy|bulging)\s+{_SIDE}{p}\b",
            rf"\b{_OWNER}{_SIDE}{p}\s+{_ADV}{{0,2}}(?:swell(?:s|ed|ing)?(?:\s+up)?|(?:ha(?:ve|s|d)\s+)?swollen|"
            rf"{_BE}\s+{_ADV}{{0,2}}(?:swollen|puffy|bulging))\b",
            rf"\b{p}\s+swelling\b",
        ))
    if form == "region":
        return rf"\b(?:{part})\b"
    return part


@lru_cache(maxsize=4)
def _compiled(path: str) -> list[tuple[PhraseRule, re.Pattern]]:
    return [(rule, re.compile(expand(rule.form, rule.pattern), _I)) for rule in load_lay_table(path)]


def find_lay_phrases(text: str, path: Path | str = LAY_TABLE) -> list[Finding]:
    """Findings said in everyday words, in text order, overlaps resolved (the longest wins)."""
    found: list[Finding] = []
    for rule, pat in _compiled(str(path)):
        for m in pat.finditer(text):
            if m.end() <= m.start():
                continue
            if rule.form == "region" and not _PAIN_BEFORE.search(text, max(0, m.start() - 200), m.start()):
                continue
            found.append(Finding(start=m.start(), end=m.end(), text=text[m.start():m.end()], analyte=rule.name,
                                 key=rule.concept_id, name=rule.name, concept_ids=(rule.concept_id,),
                                 measured=False, negated=False))
    return resolve_overlaps(found)


__all__ = ["FORMS", "LAY_TABLE", "expand", "find_lay_phrases", "load_lay_table"]

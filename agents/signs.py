"""Classic signs: the findings clinicians name after the disease they point to, as one more ranking of the differential.

Koplik spots say measles, Janeway lesions infective endocarditis, Reed-Sternberg cells Hodgkin lymphoma, a positive
Murphy's sign cholecystitis. Most of these signs are in no vocabulary of the knowledge graph, and the few that are
(Auspitz sign, Heberden's node, asterixis) have no edge to the disease they point to. The curated table
``agents/data/classic_signs.yaml`` (each sign with its patterns, diseases and source; reviewable) is read here:
:meth:`ClassicSigns.find` gives the signs a presentation states and does not deny, :meth:`ClassicSigns.rank` their
diseases as a ranking (a disease two signs name first, then one a named sign points to before one only an everyday
complex of symptoms does, then in order of mention). HKI fuses it like the other
rankings (``RetrievalParams.sign_weight``; the ``no-signs`` ablation leaves it out), with the age/sex fit.

Denied signs do not count: "no Kernig sign", "without asterixis", "Murphy's sign is negative" (a denial word earlier
in the clause, or "negative/absent" right after the sign). A sign with ``with_any`` patterns counts only when one of
them is stated, and not denied, somewhere in the presentation (pain behind the eyes points to dengue beside a fever).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .curated import NamedConcept, check_patterns, clean_text, read_curated, resolve_concepts, union_pattern
from .mee.vitals import read_vitals
from .textutil import CLAUSE_VERBS

log = logging.getLogger(__name__)

DATA_FILE = Path(__file__).resolve().parent / "data" / "classic_signs.yaml"

# a denial earlier in the clause ("no", "without", "negative for", "absence of", "denies"; "but", "with", "and
# positive", "and has" — the patient's own verb, textutil.CLAUSE_VERBS — end its reach: "no Kernig sign but a
# positive Brudzinski sign", "has not had a period for eight months and has a milky discharge") ...
_DENIED_BEFORE = re.compile(r"\b(?:no|not|without|negative|absent|absence\s+of|denies|denied|free\s+of|nor|"
                            r"rules?\s+out|ruled\s+out)\b"
                            r"(?:(?!\b(?:but|however|although|though|yet|with|and\s+(?:a\s+)?positive|"
                            rf"and\s+(?:{'|'.join(CLAUSE_VERBS)}))\b)"
                            r"[^.;:!?\n]){0,60}\Z", re.I)   # \Z: "$" would also match before a line's end
# ... or right after the sign ("Murphy's sign is negative", "Kernig sign: absent")
# ("anti-Yo antibodies were not detected": the word antibodies may stand between the sign and the denial)
_DENIED_AFTER = re.compile(r"^\s*(?:(?:auto)?antibod(?:y|ies)\s+)?(?:(?:is|was|were|are)\s+)?(?::\s*)?"
                           r"(?:negative|absent|undetectable|not\s+(?:present|elicited|seen|detected|found|identified))\b",
                           re.I)


def _denied(text: str, m: re.Match) -> bool:
    return bool(_DENIED_BEFORE.search(text, max(0, m.start() - 80), m.start())
                or _DENIED_AFTER.match(text[m.end(): m.end() + 40]))


class SignsError(ValueError):
    """The sign file cannot be read or does not follow the format."""


class VitalRange(BaseModel):
    """A measured vital sign as a sign: the reading the vital-sign reader (:func:`agents.mee.vitals.read_vitals`)
    finds for ``analyte``, at or above ``min`` (its value: the systolic pressure) or ``min2`` (its second value: the
    diastolic pressure)."""
    model_config = ConfigDict(extra="forbid")

    analyte: str
    min: float | None = None
    min2: float | None = None

    def holds(self, reading: Any) -> bool:
        return reading.analyte == self.analyte and (
            (self.min is not None and reading.value >= self.min)
            or (self.min2 is not None and reading.value2 is not None and reading.value2 >= self.min2))


class SignSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    sign: str
    patterns: list[str] = Field(default_factory=list)
    # ... or, instead of patterns, a measured vital sign in a range (a blood pressure in the severe range)
    vital: VitalRange | None = None
    diagnoses: list[NamedConcept] = Field(min_length=1)
    citation: str
    # the sign counts only beside one of these, stated and not denied anywhere in the presentation: pain behind the
    # eyes points to dengue in a febrile patient, not in one with a headache alone
    with_any: list[str] = Field(default_factory=list)
    # a complex of everyday symptoms rather than a sign a clinician elicits or names (a cold's blocked nose and sore
    # throat): its diseases rank after those a named sign stated with it points to (Koplik spots beside a runny nose
    # say measles first)
    everyday: bool = False

    _clean = field_validator("sign", "citation")(classmethod(lambda cls, v: clean_text(v)))

    @model_validator(mode="after")
    def _stated_somehow(self) -> SignSpec:
        if not self.patterns and self.vital is None:
            raise ValueError(f"sign {self.id}: needs patterns or a vital range")
        return self


class SignFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    signs: list[SignSpec] = Field(min_length=1)


def load_signs(path: str | Path | None = None) -> list[SignSpec]:
    """The signs of the file (default: the packaged ``data/classic_signs.yaml``), checked against the format: ids
    unique, every pattern compiles."""
    p = Path(path) if path is not None else DATA_FILE
    signs = read_curated(p, SignFile, "classic signs", SignsError, lambda f: [s.id for s in f.signs]).signs
    check_patterns(((s.id, s.patterns + s.with_any) for s in signs), "classic signs", SignsError)
    return signs


@dataclass(frozen=True)
class SignMention:
    """A sign the presentation states: which, where, in which words."""

    spec: SignSpec
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class SignHit:
    """A disease of the sign ranking and the signs that named it."""

    concept_id: str
    rank: int
    signs: tuple[str, ...]        # the signs as shown ("Koplik spots")
    words: tuple[str, ...]        # the presentation's words for them
    ids: tuple[str, ...] = ()     # the signs' ids in the table
    citations: tuple[str, ...] = ()


class ClassicSigns:
    """The sign table resolved against one knowledge graph. ``problems`` lists what does not check out (a diagnosis
    id missing from the graph, or named otherwise there); the data test fails on any of them. A diagnosis whose id
    does not check out is left out at run time."""

    def __init__(self, signs: Sequence[SignSpec], kg: Any = None):
        self.kg = kg
        self.signs = list(signs)
        self.problems: list[str] = []
        self._patterns = [(s, union_pattern(s.patterns)) for s in self.signs if s.patterns]
        self._vitals = [s for s in self.signs if s.vital is not None]
        self._with = {s.id: union_pattern(s.with_any) for s in self.signs if s.with_any}
        self._diagnoses: dict[str, list[str]] = {}
        for s in self.signs:
            self._diagnoses[s.id] = resolve_concepts(kg, s.diagnoses, f"sign {s.id}", self.problems)

    @classmethod
    def from_kg(cls, kg: Any, path: str | Path | None = None) -> ClassicSigns:
        signs = cls(load_signs(path), kg)
        for p in signs.problems:
            log.warning("classic signs: %s", p)
        return signs

    def find(self, text: str) -> list[SignMention]:
        """The signs ``text`` states and does not deny, in order of mention (one mention per sign)."""
        out: list[SignMention] = []
        seen: set[str] = set()
        for spec, pat in self._patterns:
            company = self._with.get(spec.id)
            if company is not None and not any(c.end() > c.start() and not _denied(text, c)
                                               for c in company.finditer(text or "")):
                continue        # the finding the sign needs beside it is not stated
            for m in pat.finditer(text or ""):
                if m.end() <= m.start() or _denied(text, m):
                    continue
                if spec.id not in seen:
                    seen.add(spec.id)
                    out.append(SignMention(spec, m.start(), m.end(), m.group(0)))
                break
        readings = read_vitals(text or "") if self._vitals else []
        for spec in self._vitals:
            r = next((r for r in readings if spec.vital.holds(r)), None)
            if r is not None and spec.id not in seen:
                seen.add(spec.id)
                out.append(SignMention(spec, r.start, r.end, r.text))
        return sorted(out, key=lambda x: x.start)

    def rank(self, text: str, k: int = 10) -> list[SignHit]:
        """The diseases the stated signs point to: one that more signs name first, then one a named sign (not only
        an everyday complex of symptoms, ``everyday``) points to, then in order of mention."""
        named: dict[str, list[SignMention]] = {}
        for m in self.find(text):
            for did in self._diagnoses.get(m.spec.id, []):
                named.setdefault(did, []).append(m)
        order = sorted(named, key=lambda d: (-len(named[d]), all(m.spec.everyday for m in named[d]),
                                             named[d][0].start))[:k]
        return [SignHit(d, i, tuple(m.spec.sign for m in named[d]), tuple(m.text for m in named[d]),
                        tuple(m.spec.id for m in named[d]), tuple(m.spec.citation for m in named[d]))
                for i, d in enumerate(order, 1)]

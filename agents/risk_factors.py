"""Exposures and risk factors read from the history: what raises a fitting disease in the differential.

"Unprotected sex four weeks ago" makes acute HIV infection likelier when the findings already fit it; "injects heroin"
does the same for infective endocarditis, "started haloperidol" for an acute dystonia. The curated table
``agents/data/risk_factors.yaml`` (each exposure with its patterns, diseases and source; reviewable) is read here:
:meth:`RiskFactors.find` gives the exposures a presentation states and does not deny (nor gives to a relative),
:meth:`RiskFactors.diseases` which diseases they point to. HKI multiplies the fused score of a candidate the findings
put forward by ``RetrievalParams.risk_factor_boost`` to the power of the exposures' weights (at most 2), never adds a
disease on their strength alone, and names the exposure in the candidate's reasons (the ``no-risk-factors`` ablation
leaves it out). The converse: a disease seldom diagnosed without its exposure (the table's ``needs_exposure``: carbon
monoxide poisoning without a source of the gas, Q fever without farm animals, long COVID without a past COVID-19) is
marked and moved down when no stated exposure raises it (:meth:`RiskFactors.demote_unexposed`), never dropped.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .curated import (NamedConcept, acquired_regions, check_patterns, clean_text, denied_before, read_curated,
                      resolve_concepts, same_as, union_pattern)
from .nlp import OTHER_PERSONS
from .subtypes import move_down
from .types import Candidate

log = logging.getLogger(__name__)

DATA_FILE = Path(__file__).resolve().parent / "data" / "risk_factors.yaml"

# the exposure is a relative's or someone else's ("her father smokes", "family history of alcoholism", "her partner is
# HIV-positive": the partner's infection, not a weakened immunity of the patient's own)
_SOMEONE_ELSE = re.compile(
    r"\b(?:father|mother|parents?|brother|sister|siblings?|sons?|daughters?|husband|wife|roommates?|grand\w+|"
    r"uncle|aunt|cousin|family\s+history|friends?|coworkers?|colleagues?|(?:his|her|their|a|the)\s+(?:sexual\s+)?(?:partner|boyfriend|girlfriend|spouse))\b"
    r"[^.;:!?\n]{0,40}\Z", re.I)
# ... unless that person is only the object of the patient's sentence and the patient takes it back: "lives with his
# partner and injects heroin", "married to her husband and is HIV-positive" (but "a partner who injects heroin" and
# "her father smokes and drinks" stay someone else's)
_OBJECT_OF = re.compile(r"\b(?:with|to|from|for|by)\s+(?:(?:his|her|their|a|the|my)\s+)?(?:\w+\s+)?\Z", re.I)
# "... and [he/she] [is/has ...]" right before the exposure, no relative clause ("who drinks") in between
_OWN_AGAIN = re.compile(r"^(?!.*\b(?:who|that|which|whose)\b).*\band\s+(?:(?:he|she|they)\s+)?"
                        r"(?:(?:is|has|was|also|still|currently|reports|admits)\s+)*\Z", re.I)


def _someone_elses(before: str) -> bool:
    """The exposure named right after ``before`` is a relative's or another person's (see ``_SOMEONE_ELSE``)."""
    m = _SOMEONE_ELSE.search(before)
    if m is None:
        return False
    return not (_OBJECT_OF.search(before[:m.start()]) and _OWN_AGAIN.search(m.group(0)))


# a disease of another person's that the patient's history states (an entity ConText gives to a relative or another
# person): a relative's disease is a family history, which makes the same disease likelier in the patient (Guttmacher
# et al. 2004); a contact's infection is an exposure to it (Heymann 2022). The disease's own subtypes up to this many
# is_a steps share it ("family history of diabetes" -> type 2 diabetes)
OTHERS_SUBTYPE_DEPTH = 2
INFECTIOUS_CLASS = "DOID:0050117"     # disease by infectious agent (Disease Ontology)
_RELATIVE_WORD = re.compile(
    r"\b(?:family|familial|father|mother|parents?|brothers?|sisters?|siblings?|sons?|daughters?|twin|uncles?|aunts?|"
    r"cousins?|grand\w+|relatives?|nephews?|nieces?|dad|mom|mum)\b", re.I)
_OTHER_PERSON_WORD = re.compile(r"\b(?:%s|partner|spouse|husband|wife|contacts?|children|child|kids?|someone|people|"
                                r"persons?)\b" % "|".join(map(re.escape, OTHER_PERSONS)), re.I)


_CLAUSE_BREAK = re.compile(r",|\b(?:and|but|while|whereas)\b", re.I)


class RiskFactorsError(ValueError):
    """The risk-factor file cannot be read or does not follow the format."""


class ExposureSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    exposure: str
    patterns: list[str] = Field(min_length=1)
    diseases: list[NamedConcept] = Field(min_length=1)
    citation: str
    # how much the exposure weighs beside the others: 1 a specific one few patients share (unprotected sex, injection
    # drug use), less for one most patients of a clinic share and that fits many presentations (smoking)
    weight: float = Field(1.0, gt=0.0, le=1.0)

    _clean = field_validator("exposure", "citation")(classmethod(lambda cls, v: clean_text(v)))


class RiskFactorFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    exposures: list[ExposureSpec] = Field(min_length=1)
    # diseases seldom diagnosed unless the history states one of the exposures that raise them (each is among the
    # diseases of at least one exposure)
    needs_exposure: list[NamedConcept] = Field(default_factory=list)

    @model_validator(mode="after")
    def _needs_an_exposure(self) -> RiskFactorFile:
        raised = {d.id for s in self.exposures for d in s.diseases}
        for d in self.needs_exposure:
            if d.id not in raised:
                raise ValueError(f"needs_exposure: {d.id} ({d.name}) is the disease of no exposure")
        return self


def load_risk_factor_file(path: str | Path | None = None) -> RiskFactorFile:
    """The whole file (default: the packaged ``data/risk_factors.yaml``), checked against the format: ids unique,
    every pattern compiles, every disease that needs an exposure has one."""
    p = Path(path) if path is not None else DATA_FILE
    data = read_curated(p, RiskFactorFile, "risk factors", RiskFactorsError, lambda f: [s.id for s in f.exposures])
    check_patterns(((s.id, s.patterns) for s in data.exposures), "risk factors", RiskFactorsError)
    return data


def load_risk_factors(path: str | Path | None = None) -> list[ExposureSpec]:
    """The exposures of the file (:func:`load_risk_factor_file`)."""
    return load_risk_factor_file(path).exposures


@dataclass(frozen=True)
class ExposureMention:
    """An exposure the presentation states: which, where, in which words."""

    spec: ExposureSpec
    start: int
    end: int
    text: str


class RiskFactors:
    """The exposure table resolved against one knowledge graph. ``problems`` lists what does not check out (a disease
    id missing from the graph, or named otherwise there); the data test fails on any of them. A disease whose id does
    not check out is left out at run time. The table lists a disease's subtypes where they share its risk factor (the
    graph's subtypes include inherited forms that do not: the dystonias under dystonia). ``needs``: the diseases
    seldom diagnosed without one of their exposures (the file's ``needs_exposure``)."""

    def __init__(self, specs: Sequence[ExposureSpec], kg: Any = None, needs: Sequence[NamedConcept] = ()):
        self.specs = list(specs)
        self.problems: list[str] = []
        self._patterns = [(s, union_pattern(s.patterns)) for s in self.specs]
        self._diseases: dict[str, list[str]] = {}
        self.kg = kg
        for s in self.specs:
            self._diseases[s.id] = resolve_concepts(kg, s.diseases, f"exposure {s.id}", self.problems)
        # each such disease, under every id the graph holds for it -> (those ids, the regions where it is acquired,
        # the exposures that raise it), resolved once
        self._needs: dict[str, tuple[frozenset[str], frozenset[str], str]] = {}
        for did in resolve_concepts(kg, needs, "needs_exposure", self.problems):
            ids = frozenset(same_as(kg, did))
            where = acquired_regions(kg, did)
            words = " or ".join(s.exposure for s in self.specs if did in self._diseases[s.id])
            for x in ids:
                self._needs[x] = (ids, where, f"seldom without {words}; none in the history")

    @classmethod
    def from_kg(cls, kg: Any, path: str | Path | None = None) -> RiskFactors:
        data = load_risk_factor_file(path)
        table = cls(data.exposures, kg, data.needs_exposure)
        for p in table.problems:
            log.warning("risk factors: %s", p)
        return table

    def find(self, text: str) -> list[ExposureMention]:
        """The exposures ``text`` states for the patient and does not deny, in order of mention (the first
        affirmed mention of each)."""
        text = text or ""
        out: list[ExposureMention] = []
        for spec, pat in self._patterns:
            for m in pat.finditer(text):
                if m.end() <= m.start():
                    continue
                before = text[max(0, m.start() - 80): m.start()]
                if denied_before(before) or _someone_elses(before):
                    continue
                out.append(ExposureMention(spec, m.start(), m.end(), m.group(0)))
                break
        return sorted(out, key=lambda x: x.start)

    def of_others(self, entities: Sequence[Any], text: str) -> dict[str, list[ExposureMention]]:
        """:func:`others_diseases` on the table's graph."""
        return others_diseases(entities, text, self.kg)

    def diseases(self, text: str) -> dict[str, list[ExposureMention]]:
        """Disease id -> the stated exposures that make it likelier (in order of mention)."""
        out: dict[str, list[ExposureMention]] = {}
        for m in self.find(text):
            for did in self._diseases.get(m.spec.id, []):
                out.setdefault(did, []).append(m)
        return out

    def unexposed(self, disease_id: str, exposed: Collection[str], regions: Collection[str] = ()) -> str | None:
        """Why ``disease_id`` is unlikely here — "seldom without <its exposures>; none in the history" — when the table
        says it needs an exposure, none of the ``exposed`` diseases (those a stated exposure raises: :meth:`diseases`,
        :func:`others_diseases`) is it under any of its ids, and none of the world ``regions`` the patient has been in
        (travel, origin: :attr:`Extraction.regions`) is one where it is acquired (the graph's ``endemic_regions``: a
        traveller back from West Africa needs no other exposure for Lassa fever); None otherwise."""
        need = self._needs.get(disease_id)
        if need is None:
            return None
        ids, where, why = need
        if (exposed and not ids.isdisjoint(exposed)) or (regions and not where.isdisjoint(regions)):
            return None
        return why

    def demote_unexposed(self, candidates: list[Candidate], exposed: Collection[str], factor: float,
                         regions: Collection[str] = ()) -> list[Candidate]:
        """The ranked candidates with each one that needs an exposure the history does not state (:meth:`unexposed`)
        marked (``demoted``) and its score multiplied by ``factor``, back in score order (stable; ``factor`` 1: marked
        only, order kept). None is dropped: the exposure may simply not have been asked about."""
        if not self._needs or not candidates:
            return candidates
        why = {c.concept_id: w for c in candidates if (w := self.unexposed(c.concept_id, exposed, regions))}
        return move_down(candidates, why, factor)


# the two exposures another person's disease gives (their diseases are the named disease and its subtypes)
RELATIVE_SPEC = ExposureSpec.model_construct(
    id="relative-with-the-disease", exposure="the same disease in a relative (a family history)", patterns=[],
    diseases=[], weight=0.5,
    citation="Guttmacher AE, Collins FS, Carmona RH. The family history - more important than ever. N Engl J Med. "
             "2004;351(22):2333-2336.")
CONTACT_SPEC = ExposureSpec.model_construct(
    id="contact-with-the-infection", exposure="a contact with the same infection", patterns=[], diseases=[],
    weight=1.0,
    citation="Heymann DL, ed. Control of Communicable Diseases Manual. 21st ed. American Public Health Association; "
             "2022 (modes of transmission).")


def others_diseases(entities: Sequence[Any], text: str, kg: Any) -> dict[str, list[ExposureMention]]:
    """Disease id -> the diseases of other people the presentation states that make it likelier: a relative's
    disease (a family history: "her mother has asthma", "family history of type 2 diabetes") and anyone's infection
    (a contact: "his roommate has tuberculosis", "her son has chickenpox"); each raises the same disease and its
    subtypes. ``entities``: the extraction's (an entity with ``family`` set is another person's); a denied one
    ("no family history of diabetes") counts for nothing, nor a non-infectious disease of someone who is not a
    relative (a coworker's diabetes)."""
    out: dict[str, list[ExposureMention]] = {}
    if kg is None:
        return out
    seen: set[str] = set()
    for e in entities:
        cid = getattr(e, "concept_id", None)
        if not (getattr(e, "family", False) and cid) or getattr(e, "negated", False) or cid in seen:
            continue
        concept = kg.concept(cid)
        if concept is None or concept.category != "disease":
            continue
        sentence = text[:e.start]
        sentence = sentence[max(sentence.rfind(x) for x in ".;\n") + 1:]
        relative = list(_RELATIVE_WORD.finditer(sentence))
        in_family_section = getattr(e, "section", None) == "family_history"     # "FH: asthma"
        if INFECTIOUS_CLASS in kg.ancestors(cid):
            spec, who = CONTACT_SPEC, relative + list(_OTHER_PERSON_WORD.finditer(sentence))
        elif relative or in_family_section:
            spec, who = RELATIVE_SPEC, relative
        else:
            continue
        start = max((m.start() for m in who), default=-1)
        # a denial in the person's clause: "no family history of asthma" (ConText ends the "no" at the family cue)
        clause = max((m.end() for m in _CLAUSE_BREAK.finditer(sentence, 0, max(start, 0))), default=0)
        if denied_before(sentence[clause:]):
            continue
        seen.add(cid)
        start = len(text[:e.start]) - len(sentence) + start if start >= 0 else e.start
        mention = ExposureMention(spec, start, e.end, text[start:e.end])
        for did in [cid, *kg.descendants(cid, OTHERS_SUBTYPE_DEPTH)]:
            out.setdefault(did, []).append(mention)
    return out

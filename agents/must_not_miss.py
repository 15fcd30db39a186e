"""Must-not-miss agent: the dangerous diagnoses compatible with the findings, listed beside the ranked differential.

A differential ranks what is likely; a clinician also asks what must not be missed: chest pain → myocardial
infarction, pulmonary embolism, aortic dissection, ...; headache after 50 → giant cell arteritis. The rules are data,
not code: ``agents/data/must_not_miss.yaml`` (curated, each with its reason and published source; the file's header
describes the format). This module loads them, resolves their trigger findings against the knowledge graph once,
and checks a presentation against them — deterministically, without an LLM.

Matching (:meth:`MustNotMiss.check`):

- the presentation's findings are the extraction's positive entities with a concept id (not negated, historical,
  family history or hypothetical; demographics aside);
- a finding matches a trigger through its own id, its cross-references (``xref``) and its ``is_a`` parents up to
  three levels ("pleuritic chest pain" is a "chest pain");
- a rule fires when one of its ``findings`` matches (and that finding is not one of its ``unless`` findings or a
  more specific kind of one: "right upper quadrant pain" does not fire the appendicitis rule), and one of its
  ``with`` findings too when it has them (with ``with_known``, a condition the patient is known to have counts as
  one: "a man with type 1 diabetes" who vomits), and the age and sex allow it; a ``where_acquired`` rule names only
  the diagnoses acquired in a world region the patient has been in (travel, origin: the graph's ``endemic_regions``;
  fever after a stay in Nigeria → malaria), the place listed among its triggers. An age or sex the presentation does not
  state does not exclude a rule: the item then says which condition is unsettled ("if age >= 50");
- a diagnosis several rules name is one item (its triggers and sources merged; the label and reason of its most
  specific rule). Items already in the differential stay listed, with their rank there: the list is never filtered
  by what the differential shows;
- the items come most specific rule first (more conditions met), then, on a tie, the one whose met trigger is the
  rarer finding (the fewer diseases the graph links to it: orthopnoea before breathlessness, though a patient who
  cannot lie flat meets both), then by how many findings fired it and the file's order;
- a diagnosis that a stated test result excludes (its ``ruled_out_by``: "urine pregnancy test negative" for an
  ectopic pregnancy) stays listed too, marked with the result and the words that state it, after the open items:
  the clinician sees that it was considered and why it is settled.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from knowledge.kg.mesh_nodes import is_mesh_disease
from knowledge.kg.normalize import normalise

from .curated import acquired_regions, check_patterns, same_as, union_pattern, with_ancestors
from .subtypes import patients_history, rule_out
from .textutil import terms
from .types import Candidate, DifferentialItem, Entity, Extraction, MustNotMissItem

log = logging.getLogger(__name__)

DATA_FILE = Path(__file__).resolve().parent / "data" / "must_not_miss.yaml"
ANCESTOR_DEPTH = 3        # how far up the is_a hierarchy a finding still matches a trigger
DIFFERENTIAL_DEPTH = 4    # how far up a differential diagnosis still counts as a must-not-miss diagnosis


class MustNotMissError(ValueError):
    """The rule file cannot be read or does not follow the format."""


# ---- the rule file ---------------------------------------------------------------------------------------------

class RuleOutSpec(BaseModel):
    """A stated test result that excludes a diagnosis (a negative pregnancy test, an ectopic pregnancy)."""

    model_config = ConfigDict(extra="forbid")

    result: str = Field(min_length=1)              # the result in words: "a negative pregnancy test"
    patterns: list[str] = Field(min_length=1)      # case-insensitive regular expressions that state it
    # other diagnoses the same result excludes, with their kinds (a normal CSF: meningitis of any cause)
    also_excludes: list[str] = Field(default_factory=list)

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        check_patterns([("ruled_out_by", v)], "must-not-miss rules", ValueError)
        return v


class DiagnosisSpec(BaseModel):
    """One dangerous diagnosis of a rule, as written in the file."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str                                       # the KG name of ``id`` (checked against the graph)
    label: str | None = None                        # how it is shown, when the clinical term differs
    also: list[str] = Field(default_factory=list)   # other KG ids of the same clinical entity
    kg_category: Literal["disease", "phenotype", "symptom"] = "disease"
    ruled_out_by: RuleOutSpec | None = None         # a stated result that excludes it

    @property
    def shown(self) -> str:
        return self.label or self.name


class RuleSpec(BaseModel):
    """One rule as written in the file (see the file's header)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str
    complaint: str
    findings: list[str] = Field(min_length=1)
    with_findings: list[str] = Field(default_factory=list, alias="with")
    with_known: bool = False   # a "with" finding may be a condition the patient is known to have (past history)
    unless: list[str] = Field(default_factory=list)   # findings (and their kinds) that do not fire the rule
    age_min: float | None = None
    age_max: float | None = None
    sex: Literal["female", "male"] | None = None
    # true: each diagnosis is listed only when the patient has been (travel, origin) in a region where it is acquired
    where_acquired: bool = False
    reason: str
    diagnoses: list[DiagnosisSpec] = Field(min_length=1)
    citation: str

    @field_validator("reason", "citation", "complaint")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("must not be empty")
        return v

    @model_validator(mode="after")
    def _ages(self) -> RuleSpec:
        if self.age_min is not None and self.age_max is not None and self.age_min > self.age_max:
            raise ValueError(f"age_min {self.age_min:g} is above age_max {self.age_max:g}")
        return self

    def conditions(self) -> list[str]:
        """The rule's demographic conditions in words ("age >= 50", "female")."""
        out = []
        if self.age_min is not None and self.age_max is not None:
            out.append(f"age {self.age_min:g}-{self.age_max:g}")
        elif self.age_min is not None:
            out.append(f"age >= {self.age_min:g}")
        elif self.age_max is not None:
            out.append(f"age <= {self.age_max:g}")
        if self.sex:
            out.append(self.sex)
        return out


class RuleFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    rules: list[RuleSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> RuleFile:
        seen: set[str] = set()
        for r in self.rules:
            if r.id in seen:
                raise ValueError(f"rule id {r.id!r} is used twice")
            seen.add(r.id)
        return self


def load_rules(path: str | Path | None = None) -> list[RuleSpec]:
    """The rules of the file (default: the packaged ``data/must_not_miss.yaml``), checked against the format."""
    p = Path(path) if path is not None else DATA_FILE
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
        return RuleFile.model_validate(raw).rules
    except (OSError, yaml.YAMLError) as exc:
        raise MustNotMissError(f"must-not-miss rules: cannot read {p.name}: {exc}") from exc
    except ValidationError as exc:
        raise MustNotMissError(f"must-not-miss rules: {p.name} does not follow the format: {exc}") from exc


# ---- resolved rules --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Rule:
    spec: RuleSpec
    order: int
    findings: frozenset[str]      # concept ids (with their cross-references)
    with_ids: frozenset[str]
    unless_ids: frozenset[str] = frozenset()


@dataclass
class _Hit:
    """A diagnosis while the rules are checked: everything that fired for it."""

    spec: DiagnosisSpec
    best: _Rule
    best_specificity: int
    breadth: int                  # diseases the best rule's most specific met trigger is linked to (fewer: first)
    order: tuple[int, int]
    triggers: dict[str, str]      # concept id -> finding text, in order of appearance
    rules: list[_Rule]
    places: list[str]             # the places that let a where_acquired rule name it ("been in Lagos")
    unsettled: list[str]          # conditions the presentation does not settle, when no rule fired without them
    settled: bool


class MustNotMiss:
    """The must-not-miss rules, resolved against one knowledge graph. ``problems`` lists what does not check out (an
    unknown trigger or id, a name that is not the id's KG name, a category that is not a disease); the data test
    fails on any of them. At run time a trigger that does not resolve cannot fire, but a diagnosis is listed as
    written even when its id does not check out: a changed knowledge graph must not silently remove a dangerous
    diagnosis from the list."""

    def __init__(self, rules: list[RuleSpec], kg: Any):
        self.kg = kg
        self.specs = list(rules)
        self.problems: list[str] = []
        self._resolved_terms: dict[str, frozenset[str]] = {}
        self._finding_keys: dict[str, frozenset[str]] = {}
        self._dx_keys: dict[str, frozenset[str]] = {}
        self._breadths: dict[str, int] = {}
        self.rules = [self._resolve(i, r) for i, r in enumerate(self.specs)]
        # diagnosis id -> (the excluding result in words, its patterns as one expression); every rule that names a
        # diagnosis gives it the same rule-out (the data tests check), so the first one written is taken
        self._rule_outs: dict[str, tuple[str, re.Pattern]] = {}
        # diagnosis id -> the ids the result excludes: the diagnosis's own (``also``) and its ``also_excludes``
        self._rule_out_ids: dict[str, frozenset[str]] = {}
        for r in self.specs:
            for d in r.diagnoses:
                if d.ruled_out_by is not None and d.id not in self._rule_outs:
                    self._rule_outs[d.id] = (d.ruled_out_by.result, union_pattern(d.ruled_out_by.patterns))
                    self._rule_out_ids[d.id] = frozenset({d.id, *d.also, *d.ruled_out_by.also_excludes})
        # diagnosis id -> the world regions where it is acquired (the graph's endemic_regions), for where_acquired rules
        self._acquired: dict[str, frozenset[str]] = {}
        for r in self.specs:
            for d in r.diagnoses:
                self._check_diagnosis(r.id, d)
                if r.where_acquired:
                    self._acquired[d.id] = acquired_regions(self.kg, d.id)
                    if not self._acquired[d.id]:
                        self.problems.append(f"rule {r.id}: {d.id} ({d.name}) has no endemic regions in the knowledge "
                                             "graph, so no place can make it fire")

    @classmethod
    def from_kg(cls, kg: Any, path: str | Path | None = None) -> MustNotMiss:
        """Load the rule file and resolve it against ``kg``; unresolved parts are logged (and left out)."""
        mnm = cls(load_rules(path), kg)
        for p in mnm.problems:
            log.warning("must-not-miss rules: %s", p)
        return mnm

    # ---- resolution --------------------------------------------------------------------------------------------
    def resolve_term(self, term: str) -> frozenset[str]:
        """Concept ids a trigger names, with their cross-references: a KG id as written, else the concepts whose
        preferred name is ``term`` (or, when none is, those with ``term`` as a synonym)."""
        term = term.strip()
        if term in self._resolved_terms:
            return self._resolved_terms[term]
        ids: list[str] = []
        if ":" in term and self.kg.concept(term) is not None:
            ids = [term]
        else:
            key = normalise(term)
            hits = [c for c in self.kg.lookup(term) if c.category != "drug"]
            named = [c for c in hits if normalise(c.name) == key]
            got = named or [c for c in hits if key in {normalise(s) for s in c.synonyms}]
            # a disease the graph took from MeSH under a finding's name ("Hypotension", "Amaurosis Fugax") is not
            # what the extractor reads the word as (agents/mee/lexicon.py): the trigger is the finding
            findings = [c for c in got if not is_mesh_disease(c.id, c.category)]
            ids = [c.id for c in (findings or got)]
        out = set(ids)
        for cid in ids:
            out |= self.kg.equivalents(cid)
        self._resolved_terms[term] = frozenset(out)
        return self._resolved_terms[term]

    def _resolve(self, order: int, spec: RuleSpec) -> _Rule:
        groups = []
        for terms_ in (spec.findings, spec.with_findings, spec.unless):
            ids: set[str] = set()
            for t in terms_:
                got = self.resolve_term(t)
                if not got:
                    self.problems.append(f"rule {spec.id}: trigger {t!r} matches no concept of the knowledge graph")
                elif len({min(self._closure(c)) for c in got}) > 1:
                    self.problems.append(f"rule {spec.id}: trigger {t!r} names unrelated concepts "
                                         f"({', '.join(sorted(got))}); give a concept id")
                ids |= got
            groups.append(frozenset(ids))
        return _Rule(spec, order, groups[0], groups[1], groups[2])

    def _closure(self, cid: str) -> set[str]:
        return same_as(self.kg, cid)

    def _check_diagnosis(self, rule_id: str, d: DiagnosisSpec) -> None:
        c = self.kg.concept(d.id)
        if c is None:
            self.problems.append(f"rule {rule_id}: diagnosis {d.id} ({d.name}) is not in the knowledge graph")
            return
        if normalise(c.name) != normalise(d.name):
            self.problems.append(f"rule {rule_id}: {d.id} is named {c.name!r} in the knowledge graph, not {d.name!r}")
        if c.category != d.kg_category:
            self.problems.append(f"rule {rule_id}: {d.id} ({c.name}) is a {c.category}, not a {d.kg_category}")
        for other in d.also:
            if self.kg.concept(other) is None:
                self.problems.append(f"rule {rule_id}: {other} (also of {d.id}) is not in the knowledge graph")
        for other in d.ruled_out_by.also_excludes if d.ruled_out_by is not None else ():
            if self.kg.concept(other) is None:
                self.problems.append(f"rule {rule_id}: {other} (excluded with {d.id}) is not in the knowledge graph")

    # ---- matching ----------------------------------------------------------------------------------------------
    @staticmethod
    def findings_of(extraction: Extraction | None) -> list[Entity]:
        """The findings rules look at: positive, current, with a concept id."""
        if extraction is None:
            return []
        return [e for e in extraction.entities
                if e.concept_id and e.category != "demographic"
                and not (e.negated or e.historical or e.family or e.hypothetical)]

    def _breadth(self, cid: str) -> int:
        """How many diseases the graph links to the finding ``cid`` (or a cross-reference of it): orthopnoea a few
        dozen, breathlessness hundreds. A rule whose trigger is a rarer finding points at its diagnosis more than one
        whose trigger is a common complaint."""
        if cid not in self._breadths:
            triples = self.kg.diseases_with_finding(cid) if hasattr(self.kg, "diseases_with_finding") else []
            self._breadths[cid] = len({t.subject for t in triples})
        return self._breadths[cid]

    def _keys(self, cid: str, depth: int, cache: dict[str, frozenset[str]]) -> frozenset[str]:
        """``cid``, its cross-references and their is_a ancestors up to ``depth`` levels (with cross-references)."""
        if cid not in cache:
            cache[cid] = with_ancestors(self.kg, cid, depth)
        return cache[cid]

    def check(self, extraction: Extraction | None, differential: Iterable[DifferentialItem] = (),
              text: str = "") -> list[MustNotMissItem]:
        """The must-not-miss items for a presentation, most specific first; each marked with its rank when the
        differential already has it, and, when ``text`` (the presentation) states a result that excludes it, with
        that result (such items come last)."""
        findings = self.findings_of(extraction)
        if not findings:
            return []
        # the patient's known conditions (past history, not another person's) for the rules whose "with" they meet
        known = [(e, self._keys(e.concept_id, ANCESTOR_DEPTH, self._finding_keys)) for e in extraction.entities
                 if e.category != "demographic" and patients_history(e, text)]
        age = extraction.age_years if extraction is not None else None
        sex = extraction.sex if extraction is not None else None
        places = extraction.places if extraction is not None else []
        keyed = [(e, self._keys(e.concept_id, ANCESTOR_DEPTH, self._finding_keys)) for e in findings]
        hits: dict[str, _Hit] = {}
        for rule in self.rules:
            spec = rule.spec
            unsettled = self._unsettled(spec, age, sex)
            if unsettled is None:
                continue
            met = [(e, keys & rule.findings) for e, keys in keyed if keys & rule.findings and not keys & rule.unless_ids]
            main = [e for e, _ in met]
            extra = [e for e, keys in keyed if keys & rule.with_ids] if spec.with_findings else []
            if spec.with_known and not extra:
                extra = [e for e, keys in known if keys & rule.with_ids]
            if not main or (spec.with_findings and not extra):
                continue
            specificity = 1 + bool(spec.with_findings) + len(spec.conditions()) + spec.where_acquired
            # how specific the rule's own trigger is that the patient met (orthopnoea, not breathlessness, for a
            # patient who cannot lie flat: the breathlessness rule fires on the same finding through its parent)
            breadth = min(self._breadth(t) for _, triggers in met for t in triggers)
            fired = {e.concept_id: e.text for e in [*main, *extra]}
            for j, d in enumerate(spec.diagnoses):
                where: list[str] = []
                if spec.where_acquired:
                    regions = self._acquired.get(d.id, frozenset())
                    where = [f"been in {p.text}" for p in places if regions.intersection(p.regions)]
                    if not where:
                        continue
                h = hits.get(d.id)
                if h is None:
                    hits[d.id] = _Hit(d, rule, specificity, breadth, (rule.order, j), dict(fired), [rule], where,
                                      list(unsettled), not unsettled)
                    continue
                for k, v in fired.items():
                    h.triggers.setdefault(k, v)
                h.places = list(dict.fromkeys(h.places + where))
                h.rules.append(rule)
                # the most specific rule names and explains the item; on a tie, the one with the rarer met trigger
                if (-specificity, breadth) < (-h.best_specificity, h.breadth):
                    h.spec, h.best, h.best_specificity, h.breadth = d, rule, specificity, breadth
                h.settled = h.settled or not unsettled
                h.unsettled = [] if h.settled else list(dict.fromkeys(h.unsettled + unsettled))
        ranks = self._ranks(list(differential), list(hits.values()))
        stated = self.excluded(text)
        excluded = {h.spec.id: stated[h.spec.id] for h in hits.values() if h.spec.id in stated}
        ordered = sorted(hits.values(), key=lambda h: (h.spec.id in excluded, not h.settled, -h.best_specificity,
                                                       h.breadth, -len(h.triggers), h.order))
        out = []
        for h in ordered:
            rank = ranks.get(h.spec.id)
            out.append(MustNotMissItem(
                concept_id=h.spec.id, name=h.spec.shown, reason=h.best.spec.reason,
                triggers=list(dict.fromkeys([*h.triggers.values(), *h.places])), trigger_ids=list(h.triggers),
                conditions=[f"if {c}" for c in h.unsettled],
                citation="; ".join(dict.fromkeys([h.best.spec.citation] + [r.spec.citation for r in h.rules])),
                rules=[r.spec.id for r in h.rules], in_differential=rank is not None, rank=rank,
                ruled_out=excluded.get(h.spec.id)))
        return out

    def excluded(self, text: str) -> dict[str, str]:
        """Diagnosis id -> '<result> ("<the words that state it>")' for every diagnosis of the rules that a result
        stated in ``text`` excludes, whether or not a rule fires for the presentation."""
        out: dict[str, str] = {}
        if not text:
            return out
        for did, (result, pattern) in self._rule_outs.items():
            m = pattern.search(text)
            if m:
                out[did] = f'{result} ("{" ".join(m.group(0).split())}")'
        return out

    def demote(self, candidates: list[Candidate], text: str, factor: float) -> list[Candidate]:
        """The ranked candidates with each one a stated result excludes (:meth:`excluded`: the diagnosis, another
        id of it or a more specific kind of it, ``is_a`` up to ``DIFFERENTIAL_DEPTH`` steps) marked "ruled out by
        ..." (``demoted``), its score multiplied by ``factor`` and, when ``factor`` < 1, placed after every open
        candidate (a settled diagnosis does not stay first because it fitted best; 1: marked only, order kept). The
        candidate is never dropped here: the clinician sees what was considered and why it fell."""
        gone = self.excluded(text)
        if not gone or not candidates:
            return candidates
        owners = {i: did for did in gone for i in self._rule_out_ids.get(did, {did})}
        why: dict[str, str] = {}
        for c in candidates:
            known = self.kg.concept(c.concept_id) is not None   # not a name only the model gave
            keys = self._keys(c.concept_id, DIFFERENTIAL_DEPTH, self._dx_keys) if known else frozenset()
            did = next((owners[k] for k in sorted(keys) if k in owners), None)
            if did is not None:
                why[c.concept_id] = f"ruled out by {gone[did]}"
        return rule_out(candidates, why, factor)

    @staticmethod
    def _unsettled(spec: RuleSpec, age: float | None, sex: str | None) -> list[str] | None:
        """None when the age or sex excludes the rule; else the conditions the presentation does not state."""
        unsettled = []
        if spec.age_min is not None or spec.age_max is not None:
            if age is None:
                unsettled += [c for c in spec.conditions() if c.startswith("age")]
            elif (spec.age_min is not None and age < spec.age_min) or (spec.age_max is not None and age > spec.age_max):
                return None
        if spec.sex:
            if sex is None:
                unsettled.append(spec.sex)
            elif sex != spec.sex:
                return None
        return unsettled

    def _ranks(self, differential: list[DifferentialItem], hits: list[_Hit]) -> dict[str, int]:
        """Must-not-miss id -> rank of the first differential item that is that diagnosis (by id, cross-reference
        or a more specific kind of it, e.g. "acute myocardial infarction"; by name when the item has no id)."""
        out: dict[str, int] = {}
        for item in sorted(differential, key=lambda d: d.rank):
            keys = self._keys(item.concept_id, DIFFERENTIAL_DEPTH, self._dx_keys) if item.concept_id else frozenset()
            words = terms(item.diagnosis)
            for h in hits:
                d = h.spec
                if d.id in out:
                    continue
                if keys & {d.id, *d.also} or (words and words in (terms(d.name), terms(d.shown))):
                    out[d.id] = item.rank
        return out


__all__ = ["DATA_FILE", "DiagnosisSpec", "MustNotMiss", "MustNotMissError", "RuleOutSpec", "RuleSpec", "load_rules"]

"""Findings that argue against a diagnosis: what the patient has that a candidate disease does not explain.

The knowledge-based rankings lift a disease for the findings it expects; they do not know what a disease makes
unlikely. A fever beside sneezing argues against allergic rhinitis, a fever beside a headache against migraine, a rash
all over the body against shingles; and the converse, a rule that ``always`` fires unless a finding is stated: a
cancer with none of its warning features (no weight loss, lump, bleeding ...) is not where a clinician starts, nor
eclampsia without a seizure. The curated table ``agents/data/against_findings.yaml`` (each rule with its finding,
diseases, reason and published source; reviewable) is read here. :meth:`AgainstFindings.demote` marks every
candidate a stated finding argues against ("against: a fever — ..."), multiplies its score by the factor once per
rule (at most twice) and puts the list back in score order; it never drops one: the disease may still be the answer.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .curated import NamedConcept, check_patterns, clean_text, denied_before, read_curated, resolve_concepts, \
    same_as, union_pattern, with_ancestors
from .subtypes import move_down
from .types import Candidate, Extraction

log = logging.getLogger(__name__)

DATA_FILE = Path(__file__).resolve().parent / "data" / "against_findings.yaml"
FINDING_DEPTH = 3      # how far up the is_a hierarchy a patient's finding still matches a rule's finding
DISEASE_DEPTH = 4      # how far up a candidate still counts as a kind of a rule's disease
MAX_RULES = 2          # the factor applies once per rule, at most this many times


class AgainstFindingsError(ValueError):
    """The table cannot be read or does not follow the format."""


class AgainstSpec(BaseModel):
    """One rule as written in the file (see its header)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    finding: str
    findings: list[NamedConcept] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    unless: list[NamedConcept] = Field(default_factory=list)   # findings that, present too, stop the rule
    unless_patterns: list[str] = Field(default_factory=list)   # or words that, stated and not denied, stop it
    always: bool = False             # fires on every presentation that states none of its ``unless`` findings/words
    diseases: list[NamedConcept] = Field(min_length=1)
    kinds: bool = True                                          # the diseases' kinds too (is_a up to kind_depth)
    kind_depth: int = Field(DISEASE_DEPTH, ge=1, le=30)
    counts: int = Field(1, ge=1, le=MAX_RULES)  # as how many rules it counts: 2 for a finding the disease's definition
                                                # excludes (a deficit that persists is no transient attack)
    reason: str
    citation: str

    _clean = field_validator("finding", "reason", "citation")(classmethod(lambda cls, v: clean_text(v)))

    @model_validator(mode="after")
    def _stated_somehow(self) -> AgainstSpec:
        if self.always:
            if self.findings or self.patterns:
                raise ValueError(f"rule {self.id}: a rule that always fires takes no findings or patterns")
            if not self.unless and not self.unless_patterns:
                raise ValueError(f"rule {self.id}: a rule that always fires needs unless findings or patterns")
        elif not self.findings and not self.patterns:
            raise ValueError(f"rule {self.id}: give findings, patterns or both")
        return self


class AgainstFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    rules: list[AgainstSpec] = Field(min_length=1)


def load_against(path: str | Path | None = None) -> list[AgainstSpec]:
    """The rules of the file (default: the packaged ``data/against_findings.yaml``), checked against the format: ids
    unique, every pattern compiles."""
    p = Path(path) if path is not None else DATA_FILE
    specs = read_curated(p, AgainstFile, "findings against", AgainstFindingsError, lambda f: [s.id for s in f.rules]).rules
    check_patterns(((s.id, [*s.patterns, *s.unless_patterns]) for s in specs), "findings against",
                   AgainstFindingsError)
    return specs


@dataclass(frozen=True)
class AgainstHit:
    """A rule the presentation fires: which, and the patient's words for the finding."""

    spec: AgainstSpec
    words: str

    @property
    def why(self) -> str:
        said = f' ("{self.words}")' if self.words else ""
        return f"against: {self.spec.finding}{said}: {self.spec.reason}"


class AgainstFindings:
    """The table resolved against one knowledge graph. ``problems`` lists what does not check out (an id missing from
    the graph, or named otherwise there); the data test fails on any of them; such a concept is left out at run time.
    Without a graph (``kg`` None) findings and diseases match by their ids as written, without kinds."""

    def __init__(self, specs: Sequence[AgainstSpec], kg: Any = None):
        self.kg = kg
        self.specs = list(specs)
        self.problems: list[str] = []
        self._findings: dict[str, frozenset[str]] = {}
        self._unless: dict[str, frozenset[str]] = {}
        self._diseases: dict[str, list[str]] = {}
        self._patterns: dict[str, re.Pattern] = {}
        self._unless_patterns: dict[str, re.Pattern] = {}
        for s in self.specs:
            ids: set[str] = set()
            for cid in resolve_concepts(kg, s.findings, f"rule {s.id}", self.problems):
                ids |= self._closure(cid)
            self._findings[s.id] = frozenset(ids)
            stop: set[str] = set()
            for cid in resolve_concepts(kg, s.unless, f"rule {s.id}", self.problems):
                stop |= self._closure(cid)
            self._unless[s.id] = frozenset(stop)
            self._diseases[s.id] = resolve_concepts(kg, s.diseases, f"rule {s.id}", self.problems)
            if s.patterns:
                self._patterns[s.id] = union_pattern(s.patterns)
            if s.unless_patterns:
                self._unless_patterns[s.id] = union_pattern(s.unless_patterns)
        self._keys_cache: dict[tuple[str, int], frozenset[str]] = {}

    @classmethod
    def from_kg(cls, kg: Any, path: str | Path | None = None) -> AgainstFindings:
        table = cls(load_against(path), kg)
        for p in table.problems:
            log.warning("findings against: %s", p)
        return table

    def _closure(self, cid: str) -> set[str]:
        return same_as(self.kg, cid)

    def _keys(self, cid: str, depth: int) -> frozenset[str]:
        """``cid``, its cross-references and their is_a ancestors up to ``depth`` levels (with cross-references)."""
        key = (cid, depth)
        if key not in self._keys_cache:
            self._keys_cache[key] = with_ancestors(self.kg, cid, depth)
        return self._keys_cache[key]

    def fired(self, extraction: Extraction | None, text: str = "") -> list[AgainstHit]:
        """The rules the presentation fires: one of its findings is a current finding of the patient (not denied,
        hedged, historical, a relative's or hypothetical), or the text states it in words the patterns catch and does
        not deny it -- or, for a rule that ``always`` fires, any presentation; and none of its ``unless`` findings is a
        current finding (a kind of one included) and no ``unless_patterns`` words are stated undenied."""
        entities = [e for e in (extraction.entities if extraction is not None else [])
                    if e.concept_id and e.category != "demographic"
                    and not (e.negated or e.historical or e.family or e.hypothetical or e.uncertain)]
        keyed = [(e, self._keys(e.concept_id, FINDING_DEPTH)) for e in entities]
        out: list[AgainstHit] = []
        for s in self.specs:
            stop = self._unless.get(s.id)
            if stop and any(keys & stop for _e, keys in keyed):
                continue
            if _stated(self._unless_patterns.get(s.id), text):
                continue
            if s.always:
                out.append(AgainstHit(s, ""))
                continue
            ids = self._findings.get(s.id, frozenset())
            e = next((e for e, keys in keyed if keys & ids), None) if ids else None
            if e is not None:
                out.append(AgainstHit(s, " ".join(e.text.split())))
                continue
            m = _stated(self._patterns.get(s.id), text)
            if m is not None:
                out.append(AgainstHit(s, " ".join(m.group(0).split())))
        return out

    def against(self, candidate_id: str, hits: Sequence[AgainstHit]) -> list[AgainstHit]:
        """The fired rules that argue against ``candidate_id`` (a rule's disease, another id of it, or a kind of it when
        the rule takes ``kinds``)."""
        if not hits or (self.kg is not None and self.kg.concept(candidate_id) is None):
            return []
        own = self._closure(candidate_id)
        return [h for h in hits if (self._keys(candidate_id, h.spec.kind_depth) if h.spec.kinds else own)
                .intersection(self._diseases.get(h.spec.id, ()))]

    def demote(self, candidates: list[Candidate], extraction: Extraction | None, text: str,
               factor: float) -> list[Candidate]:
        """The ranked candidates with each one a stated finding argues against marked (``demoted``: "against: ...")
        and its score multiplied by ``factor`` once per rule (a rule's ``counts`` times; at most :data:`MAX_RULES` times
        in all), back in score order
        (stable; ``factor`` 1: marked only, order kept). None is dropped."""
        if not candidates:
            return candidates
        hits = self.fired(extraction, text)
        if not hits:
            return candidates
        found = {c.concept_id: f for c in candidates if (f := self.against(c.concept_id, hits))}
        why = {cid: "; ".join(h.why for h in f) for cid, f in found.items()}
        return move_down(candidates, why, {cid: factor ** min(sum(h.spec.counts for h in f), MAX_RULES)
                                           for cid, f in found.items()})


def _stated(pattern: re.Pattern | None, text: str) -> re.Match | None:
    """The first match of ``pattern`` in ``text`` that no denial right before it takes back ("no lump")."""
    for m in pattern.finditer(text or "") if pattern is not None else ():
        if m.end() > m.start() and not denied_before(text[max(0, m.start() - 80): m.start()]):
            return m
    return None


__all__ = ["AgainstFindings", "AgainstFindingsError", "AgainstHit", "AgainstSpec", "load_against"]

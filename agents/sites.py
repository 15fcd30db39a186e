"""Where the pain is: the diseases of the organs under a painful region, as one more ranking of the differential.

"Pain that moved to the right iliac fossa, tender at McBurney's point" says appendix before it says any disease, and
a clinician's differential starts from the organs under the hand. The knowledge graph's finding edges rarely carry
that: no source links appendicitis to right-lower-quadrant pain, or cholecystitis to right-upper-quadrant pain. The
Disease Ontology does say where each disease is (its anatomy facet, ``located_in`` edges to UBERON organs), so a
short curated table of regions and the organs beneath them (``agents/data/pain_sites.yaml``, cited, reviewable)
turns a localised pain into the diseases of those organs.

:meth:`PainSites.rank` gives those diseases as a ranking: the diseases of every organ under the regions the
presentation's positive findings name (a disease under two of them first; then one that suits the patient's age
and sex; then one that explains any other finding of the presentation), ordered by the commonness prior (a common
disease of the organ before a rare one) and cut to ``k``. HKI fuses it like the other rankings, with its own weight
(``RetrievalParams.site_weight``; the ``no-sites`` ablation leaves it out); the age/sex fit of the fusion applies
too. A disease's site comes from its own ``located_in`` edges, else from its nearest is_a ancestor's.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from knowledge.kg.normalize import normalise

from .curated import NamedConcept, clean_text, concept_problem, read_curated
from .types import Extraction

log = logging.getLogger(__name__)

DATA_FILE = Path(__file__).resolve().parent / "data" / "pain_sites.yaml"
FINDING_DEPTH = 2      # a finding matches a trigger through its is_a ancestors up to this many levels
SITE_DEPTH = 2         # a disease without its own site takes its nearest ancestor's, up to this many levels


class PainSitesError(ValueError):
    """The region file cannot be read or does not follow the format."""


class SiteRuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    region: str
    findings: list[str] = Field(min_length=1)
    organs: list[NamedConcept] = Field(min_length=1)   # UBERON ids with their names
    citation: str

    _clean = field_validator("region", "citation")(classmethod(lambda cls, v: clean_text(v)))


class SiteFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    rules: list[SiteRuleSpec] = Field(min_length=1)


def load_site_rules(path: str | Path | None = None) -> list[SiteRuleSpec]:
    """The rules of the file (default: the packaged ``data/pain_sites.yaml``), checked against the format."""
    p = Path(path) if path is not None else DATA_FILE
    return read_curated(p, SiteFile, "pain sites", PainSitesError, lambda f: [r.id for r in f.rules]).rules


@dataclass(frozen=True)
class SiteHit:
    """A disease of the site ranking: where it is and which region of the presentation put it there."""

    concept_id: str
    rank: int
    organ: str           # UBERON id of its site
    organ_name: str
    region: str          # the region the pain is in ("right lower quadrant")
    finding: str         # the presentation's words for it


@dataclass(frozen=True)
class _Rule:
    spec: SiteRuleSpec
    triggers: frozenset[str]
    diseases: tuple[tuple[str, str], ...]     # (disease id, organ id), most common first


class PainSites:
    """The region rules resolved against one knowledge graph. ``commonness(ids) -> scores`` orders a region's
    diseases (higher: more common); without it, the better-connected disease first. ``problems`` lists what does not
    check out (an unknown trigger, an organ id missing or misnamed); the data test fails on any of them."""

    def __init__(self, rules: Sequence[SiteRuleSpec], kg: Any,
                 commonness: Callable[[list[str]], list[float]] | None = None):
        self.kg = kg
        self.problems: list[str] = []
        self._site_of = self._sites()
        self.rules = [self._resolve(r, commonness) for r in rules]

    @classmethod
    def from_kg(cls, kg: Any, commonness: Callable[[list[str]], list[float]] | None = None,
                path: str | Path | None = None) -> PainSites:
        sites = cls(load_site_rules(path), kg, commonness)
        for p in sites.problems:
            log.warning("pain sites: %s", p)
        return sites

    # ---- resolution --------------------------------------------------------------------------------------------
    def _sites(self) -> dict[str, set[str]]:
        """disease id -> the UBERON ids of its site (its own located_in edges, else its nearest ancestor's)."""
        g = self.kg.graph
        own: dict[str, set[str]] = {}
        for u, v, d in g.edges(data=True):
            if d.get("relation") == "located_in":
                own.setdefault(u, set()).add(v)
        out: dict[str, set[str]] = {}
        for nid, a in g.nodes(data=True):
            if a.get("category") != "disease":
                continue
            if nid in own:
                out[nid] = own[nid]
                continue
            frontier = [nid]
            for _ in range(SITE_DEPTH):
                frontier = [p for x in frontier for p in self.kg.parents(x)]
                got = set().union(*(own.get(p, set()) for p in frontier)) if frontier else set()
                if got:
                    out[nid] = got
                    break
        return out

    def _term(self, term: str) -> set[str]:
        if ":" in term and self.kg.concept(term) is not None:
            ids = [term]
        else:
            key = normalise(term)
            hits = [c for c in self.kg.lookup(term) if c.category in ("symptom", "phenotype")]
            ids = [c.id for c in hits if normalise(c.name) == key] or \
                  [c.id for c in hits if key in {normalise(s) for s in c.synonyms}]
        out = set(ids)
        for cid in ids:
            out |= self.kg.equivalents(cid)
        return out

    def _resolve(self, spec: SiteRuleSpec, commonness: Callable[[list[str]], list[float]] | None) -> _Rule:
        triggers: set[str] = set()
        for t in spec.findings:
            got = self._term(t)
            if not got:
                self.problems.append(f"rule {spec.id}: trigger {t!r} matches no finding of the knowledge graph")
            triggers |= got
        organs: dict[str, str] = {}
        for o in spec.organs:
            problem = concept_problem(self.kg, o, f"rule {spec.id}")
            if problem:
                self.problems.append(problem)
            if self.kg.concept(o.id) is not None:
                organs[o.id] = o.name
        pairs = [(did, spec_order(sites, organs)[0]) for did, sites in self._site_of.items()
                 if sites & organs.keys()]
        if not pairs:
            self.problems.append(f"rule {spec.id}: no disease of the knowledge graph is located in its organs")
        ids = [d for d, _ in pairs]
        if commonness is not None and ids:
            score = dict(zip(ids, commonness(ids)))
        else:
            score = {d: float(self.kg.graph.degree(d)) for d in ids}
        pairs.sort(key=lambda x: (-score[x[0]], x[0]))
        return _Rule(spec, frozenset(triggers), tuple(pairs))

    # ---- matching ----------------------------------------------------------------------------------------------
    def _keys(self, cid: str) -> set[str]:
        keys = {cid, *self.kg.equivalents(cid)}
        for x in list(keys):
            keys.update(self.kg.ancestors(x, max_depth=FINDING_DEPTH))
        return keys

    def fired(self, extraction: Extraction | None) -> list[tuple[_Rule, str]]:
        """The rules the presentation's positive current findings fire, each with the words that fired it."""
        if extraction is None:
            return []
        out: list[tuple[_Rule, str]] = []
        ents = [e for e in extraction.entities
                if e.concept_id and e.category != "demographic"
                and not (e.negated or e.historical or e.family or e.hypothetical)]
        keys = [(e, self._keys(e.concept_id)) for e in ents]
        for r in self.rules:
            hit = next((e for e, k in keys if k & r.triggers), None)
            if hit is not None:
                out.append((r, hit.text))
        return out

    def rank(self, extraction: Extraction | None, k: int = 15, fit: dict[str, float] | None = None,
             pool: int = 40, suits: Callable[[str], float] | None = None) -> list[SiteHit]:
        """The diseases of the organs under the presentation's painful regions, best first, at most ``k``: a disease
        under more of the regions first, then one that suits the patient (``suits(id)``: the age/sex fit, 1 = no
        penalty), then one that explains any other finding (``fit``: e.g. the KG ranker's scores for the
        presentation's findings), then the more common. Only the ``pool`` most common diseases of each region are
        considered."""
        fired = self.fired(extraction)
        if not fired:
            return []
        fit = fit or {}
        votes: dict[str, int] = {}
        first: dict[str, tuple[int, str, str, str]] = {}     # disease -> (position, organ, region, words)
        for r, words in fired:
            for pos, (did, organ) in enumerate(r.diseases[:pool]):
                votes[did] = votes.get(did, 0) + 1
                if did not in first or pos < first[did][0]:
                    first[did] = (pos, organ, r.spec.region, words)
        suit = {d: round(suits(d), 2) if suits else 1.0 for d in votes}
        order = sorted(votes, key=lambda d: (-votes[d], -suit[d], fit.get(d, 0.0) <= 0, first[d][0], d))[:k]
        out = []
        for i, did in enumerate(order, 1):
            _, organ, region, words = first[did]
            c = self.kg.concept(organ)
            out.append(SiteHit(did, i, organ, c.name if c else organ, region, words))
        return out


def spec_order(sites: set[str], organs: dict[str, str]) -> list[str]:
    """A disease's sites that are among the rule's organs, in the rule's order (the first is named)."""
    return [o for o in organs if o in sites]

"""Knowledge-graph differential-diagnosis ranker.

Given the positive findings of a presentation (entities linked to KG concept ids) and the negated ones, rank the
diseases of the knowledge graph G and keep, for every candidate, the path that explains it: the findings it matches,
the triples that support it, and the negated findings it would have expected.

Scoring (all constants live in :class:`RankerConfig`)
----------------------------------------------------
**Match set.** For a finding ``f`` the match set is ``f`` and its xref-equivalent nodes (SYMP <-> HP <-> MeSH
symptom; discount 1), its ``is_a`` children down to ``child_depth`` levels (a disease annotated with "Recurrent
fever" presents with fever; ``child_discount`` per level) and, for positive findings only, its ``is_a`` parents (a
disease annotated with "Abdominal pain" partly explains "Epigastric pain"; ``parent_discount``) up to ``parent_depth``
levels. A present finding also matches, at ``related_discount`` scaled like a broader term, the findings a curated
table pairs it with (``agents/data/related_findings.yaml``: fatigue and malaise, one complaint the ontologies keep
apart, and near-synonyms no cross-reference joins). A disease that is
itself xref-equivalent to the finding (HP "Gastroesophageal reflux" = DO "gastroesophageal reflux disease") is
matched through that xref edge with strength ``equivalent_disease``; a disease xref-equivalent to a narrower term
("Increased blood pressure" -> HP "Hypertension" = DO hypertension) at that strength times the narrower-term
discount and ``narrower_disease``.

**Edge strength** in (0, 1] of a disease -> finding edge (has_symptom / has_phenotype), per asserting source:

* Disease Ontology curated disease -> symptom edge: ``do_strength`` (strong);
* HPO annotation: its frequency; unknown frequency -> ``hpo_default``; floored at ``hpo_min`` and capped at
  ``hpo_max`` (0.45, at most the cardinal-findings strength: a rare disease's "very frequent" annotation says no more
  than a textbook's cardinal finding of a common one; uncapped, every rare disease annotated with a presentation's
  findings at frequency 0.9 outranked the textbook entry. Chosen on the dev halves among 1 (no cap), 0.6, 0.45 and 0.3:
  top-5 Symptom2Disease 36.5 / 37.7 / 38.0 / 37.8, DDXPlus 54.3 / 54.5 / 55.8 / 55.3, MedQA 35.7 / 33.9 / 33.9 / 33.9,
  one question of 56);
* HSDN literature co-occurrence: the TF-IDF weight ``w`` on a log scale,
  ``hsdn_floor + (hsdn_ceiling - hsdn_floor) * min(1, ln(1 + w) / ln(1 + hsdn_ref))`` (raw weights span five
  orders of magnitude);
* a sentence of a MedQuAD reference answer read by the entity extractor (``medquad-mined``, :mod:`agents.miner`):
  ``mined_strength`` (below a curated edge: one page's sentence, read by rules);
* the curated cardinal findings of a common disease, after a cited textbook (``kg-cardinal``,
  :mod:`knowledge.kg.cardinal`): ``cardinal_strength``;

times the match discount. Everything that links a disease to one finding (several sources, equivalent nodes,
narrower terms) is combined by noisy-OR, ``s(d, f) = 1 - prod(1 - s_i)``: agreement adds confidence with
diminishing returns (``source_agreement`` < 1 keeps that share of what noisy-OR adds to the strongest edge; 0, the
strongest alone, and 0.5 were measured on the dev halves and not kept: DDXPlus top-5 −1.5).

**Score.** With ``idf(f) = ln(1 + N / n_f)`` (``N`` diseases with any finding annotation, ``n_f`` diseases reached by
the strict match set of ``f``)::

    raw(d)   = sum_f idf(f) * s(d, f)
    score(d) = raw(d)
               / (1 + mass(d) / length_k) ** length_beta        # annotation-length normalisation
               * (covered(d) / n_findings) ** coverage_gamma     # explain most findings, not one
               * (1 + common_prior)  if d has an HSDN symptom profile or a drug indication,
                 (1 + curated_prior) else if it has a DO curated or a cardinal-findings profile
               * (1 + named_prior)   if a finding is, or is xref-equivalent to, d itself
               * prod_{g negated} (1 - negation_mu * s_neg(d, g))    # expected but absent
               * prod_{o opposite to a present f} (1 - opposite_mu * s(d, o))   # unless d also explains f

``covered(d) = sum_f min(1, s(d, f) / coverage_ref)``: a finding counts as explained in full when the disease is
linked to it as strongly as to a textbook's cardinal finding, and in proportion below (a literature co-occurrence of
coronary artery disease with a dry cough explains the cough a little, not as much as bronchitis does).

``s_neg(d, g)`` is ``s(d, g)`` with each edge that only a MedQuAD sentence asserts counted at ``negation_weak_share``
of its strength: a consumer page lists what can occur, and a finding it names being absent says less than the
absence of a textbook's cardinal finding (no fever in a bladder infection whose page mentions fever).

``mass(d)`` is the summed strength of all of ``d``'s annotations: a rare syndrome with 200 phenotypes matches anything
by chance and is damped; a disease with four strong curated symptoms is not. The common-disease prior stands in for
prevalence, which the KG lacks: the 117 diseases of the HSDN literature network and those PharmacotherapyDB lists
drug indications for are common ones; a DO curated symptom profile is a weaker hint (DO curates rare diseases too);
the rest are mostly rare OMIM/Orphanet entries.

The defaults were chosen on the hand-written case set (``tests/cases/clinical_cases.yaml``, measured with
``clinicalrag bench run --dataset cases --systems ranker:gold-findings``); the accuracy surface over
``length_beta`` x ``common_prior`` x ``coverage_gamma`` x ``curated_prior`` is flat (MRR 0.45-0.49), i.e. the remaining misses are missing KG annotations, not weights.

**Parent propagation.** A disease whose subtree is small (at most ``propagate_max_descendants`` descendants: a
clinical entity such as "pneumonia" or "psoriasis", not a category such as "lung disease") receives its ``is_a``
children's per-finding strengths times ``propagate_discount`` (max with its own), up to ``propagate_levels`` levels;
so "psoriasis", which has no annotation of its own, is assembled from "psoriasis 1..15", and "pneumonia" can beat a
narrow subtype when the findings are generic.

**Same disease, several nodes.** HPO diseases that neither a DO cross-reference nor a Mondo exact match ties to a DO
disease are their own nodes (OMIM:615619 "CHOLANGIOCARCINOMA" next to DOID:4947); a non-DO disease whose name (or
exact synonym) normalises to exactly one DO disease is scored as that DO disease (its triples still cite the original
node).

**Demographics** are soft: with ``sex`` given, diseases named after an organ of the other sex are multiplied by
``sex_mismatch``; with ``age >= 18``, diseases named neonatal/newborn/infant(ile)/infancy/childhood/juvenile/congenital by
``age_mismatch``, and so is a disease whose curated typical age (the cardinal-findings table's ``typical_age``:
Kawasaki disease up to 16, polymyalgia rheumatica from 50) leaves the patient's age out. **Place** is soft too: a
geographically restricted disease (``knowledge/kg/endemic_regions.yaml``) is multiplied by ``region_mismatch`` when
the patient has been only in regions where it is not acquired. **Time** is soft as well: when the presenting
complaints have lasted days (``Extraction.course`` "acute") a disease whose first presentation is typically one of
weeks to months (the cardinal-findings table's ``course: chronic``: bronchiectasis, pulmonary tuberculosis) is
multiplied by ``course_mismatch``, and so is an acute disease (influenza, pneumonia) when they have lasted months.
"""
from __future__ import annotations

import heapq
import math
import re
import threading
import weakref
from collections import defaultdict
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Collection, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agents.curated import NamedConcept, clean_text, read_curated
from agents.types import Candidate, Entity, Extraction
from knowledge.kg.cardinal import SOURCE as CARDINAL_SOURCE
from knowledge.kg.mesh_nodes import subtree_size
from knowledge.kg.mined import SOURCE as MINED_SOURCE

FINDING_RELATIONS = ("has_symptom", "has_phenotype")
FINDING_CATEGORIES = ("symptom", "phenotype")
# words that grade a finding without changing its kind (not "acute", "chronic", "recurrent", "intermittent": a course
# or pattern tells diseases apart; not "high": "high blood pressure" is not a degree of "blood pressure")
DEGREE_WORDS = ("mild", "moderate", "severe", "slight", "extreme", "intense", "low-grade", "low grade")
_DEGREE = re.compile(r"(?:%s) (.+)$" % "|".join(re.escape(w) for w in DEGREE_WORDS))
# Entity categories (agents.types.Category) that are findings for the ranker
FINDING_ENTITY_CATEGORIES = ("symptom", "test", "anatomy")

# (strength, triple id, label, how)
EdgeInfo = tuple[float, str, str, str]


@dataclass(frozen=True)
class RankerConfig:
    do_strength: float = 0.9
    hpo_default: float = 0.5
    hpo_min: float = 0.1
    hpo_max: float = 0.45                  # the cap of an HPO annotation's strength (dev-chosen, see above)
    hsdn_floor: float = 0.15
    hsdn_ceiling: float = 0.9
    hsdn_ref: float = 2000.0
    other_strength: float = 0.5           # an edge from a source the ranker does not know
    mined_strength: float = 0.6           # an edge mined from a MedQuAD sentence (source "medquad-mined")
    cardinal_strength: float = 0.75       # a curated cardinal finding of a common disease (source "kg-cardinal";
                                          # chosen on the dev halves among 0.3, 0.45, 0.6, 0.9 when the table
                                          # was small (0.45), and again among 0.45, 0.6, 0.75, 0.9 with its 1,388
                                          # entries (2026-11-29): docs/cardinal-findings.md)
    equivalent_disease: float = 0.9       # the finding is xref-equivalent to the disease itself
    # a narrower term of the finding is xref-equivalent to a disease ("Increased blood pressure" -> HP "Hypertension"
    # = DO hypertension): that disease is matched at equivalent_disease * child_discount ** k * this share (0: off).
    # 0, 0.5 and 1 tried on the dev halves (2026-12-04): the same top-1/3/5 on all four sets but one Symptom2Disease
    # text (a dry-winter rash: exanthem, a narrower term of rash, took psoriasis's fifth place). 1 kept: a headache,
    # dizziness and BP 182/108 has hypertension 5th-6th among its candidates (6th at 0.5; none at 0)
    narrower_disease: float = 1.0
    child_discount: float = 0.8
    child_depth: int = 1
    parent_discount: float = 0.4
    parent_depth: int = 1                  # how many is_a steps up a positive finding's broader terms are matched
                                           # (the k-th step at parent_discount ** k). 2 was tried on the dev halves
                                           # ("holosystolic murmur" then reaches "heart murmur"): MedQA top-5 +1
                                           # question of 56, DDXPlus -8 patients of 600 (cluster headache -5)
    length_k: float = 10.0
    length_beta: float = 0.3
    coverage_gamma: float = 1.0
    # a finding counts as explained in full from this edge strength up (a textbook's cardinal finding), below it in
    # proportion (0: any match counts in full). Chosen on the dev halves among 0 (the count), 0.3, 0.5, 0.75, 0.9:
    # top-5 DDXPlus 62.8 / 64.3 / 64.7 / 66.0 / 66.0, S2D 46.8 / 47.0 / 47.5 / 47.5 / 47.0, MedQA 44.6 / 46.4 / 44.6 /
    # 46.4 / 44.6 (one question of 56)
    coverage_ref: float = 0.75
    common_prior: float = 1.0
    curated_prior: float = 0.5
    named_prior: float = 1.0               # a finding names the disease itself ("acid reflux" = HP GERD = DO GERD)
    negation_mu: float = 0.6
    # the share of negation_mu a finding denied only by an in-range measured value counts (platelets 250,000/mm3: no
    # thrombocytopenia; creatinine 1.0 mg/dL: no raised creatinine): a routine panel's normal values are not the
    # pertinent negatives a history chooses to state, and a disease's laboratory changes often come with its stage
    # (the kidneys of TTP). 1: as a stated denial. The disease the finding itself names (a normal platelet count and
    # the disease "thrombocytopenia") is denied in full
    reading_negation_share: float = 0.5
    # the share of a "may occur" edge's strength that a denied finding counts against the disease: an edge asserted
    # only by a MedQuAD sentence lists what can occur, not what usually does (1: as strong as for a present finding).
    # 0.5 (the one value tried) moved no dev case; halving HSDN edges too lost a MedQA dev question from the five
    negation_weak_share: float = 0.5
    opposite_mu: float = 0.6               # the patient has the opposite of a finding d expects (knowledge/kg/opposites)
    propagate_discount: float = 0.8
    propagate_levels: int = 2
    propagate_max_descendants: int = 25
    propagate_pool: int = 500              # only the best-supported candidates lend evidence to their parents
    sex_mismatch: float = 0.05
    age_mismatch: float = 0.3
    region_mismatch: float = 0.3           # a restricted disease not acquired where the patient has been
    course_mismatch: float = 0.7           # a chronic disease for an illness of days, an acute one for months
    source_agreement: float = 1.0          # how much several sources asserting one finding add to the strongest
    drop_broader: bool = False             # a finding broader than another present one ("pain" beside "left lower
                                           # quadrant pain") is not counted again (KGRanker.most_specific)
    broader_depth: int = 4                 # how far up the finding hierarchy "broader" is looked for
    # a present finding that is only a degree of its broader term ("mild fever", "severe headache", "extreme fatigue":
    # a parent named as the child without its degree word) is matched as that broader term: a mild fever is a fever,
    # and a disease whose fever no source grades is not the weaker for it (off: matched as itself, the plain term at
    # parent_discount). Tried on the dev halves (2026-12-04): no top-5 change on any set, one S2D text down in the top 1;
    # on the test halves one S2D chickenpox text fell from 5th to 6th (the "mild fever" of the common cold and of mined
    # sentences no longer sets their diseases apart): off by default, an ablation axis
    degree_as_plain: bool = False
    # a present finding matches the findings agents/data/related_findings.yaml pairs it with (a patient's tiredness
    # and a textbook's malaise) at this discount (0: off). Chosen on the dev halves (2026-12-05) among 0, 0.5, 0.8, 1:
    # top-5 Symptom2Disease 58.5 / 58.5 / 59.2 / 59.3, DDXPlus 70.7 / - / 70.7 / 71.2 (three influenza patients),
    # MedQA 50.0 at each (top-1 26.8 -> 28.6 from 0.8), the hand-written cases unchanged
    related_discount: float = 1.0

    # constants that shape the per-KG index (the rest only affect rank())
    INDEX_FIELDS = ("do_strength", "hpo_default", "hpo_min", "hpo_max", "hsdn_floor", "hsdn_ceiling", "hsdn_ref",
                    "other_strength", "mined_strength", "cardinal_strength", "equivalent_disease", "child_discount",
                    "child_depth", "parent_discount", "parent_depth", "source_agreement", "narrower_disease",
                    "related_discount")

    def index_key(self) -> tuple:
        return tuple(getattr(self, f) for f in self.INDEX_FIELDS)


EQUIVALENT_DISEASE = "equivalent disease"   # how a match is called when the finding is the disease itself


def _names_disease(match: tuple) -> bool:
    """A profile match (strength, edges best first) whose best edge is the finding being the disease itself (a denied
    "thrombocytopenia" and the disease thrombocytopenia)."""
    return bool(match[1]) and match[1][0][3] == EQUIVALENT_DISEASE


_MINED_ONLY = "MedQuAD"    # the label of an edge that only a mined MedQuAD sentence asserts (_KGIndex.edge_strength)


def _denied_strength(m: tuple[float, tuple[EdgeInfo, ...]], weak_share: float, agreement: float) -> float:
    """s(d, g) for a denied finding g, combined as for a present one (``_combine``), but each edge only a MedQuAD
    sentence asserts counts ``weak_share`` of its strength."""
    if weak_share >= 1.0:
        return m[0]
    return _combine((s * (weak_share if label == _MINED_ONLY else 1.0) for s, _tid, label, _how in m[1]), agreement)


def _source_kind(source: str | None) -> str:
    s = (source or "").lower()
    if "hsdn" in s:
        return "HSDN"
    if s == "hpo" or "phenotype ontology" in s:
        return "HPO"
    if "disease-symptom" in s or s in ("do", "disease ontology"):
        return "DO"
    if s == MINED_SOURCE:
        return "MedQuAD"
    if s == CARDINAL_SOURCE:
        return "Textbook"
    return source or "KG"


def _noisy_or(values: Iterable[float]) -> float:
    p = 1.0
    for v in values:
        p *= 1.0 - min(max(v, 0.0), 1.0)
    return 1.0 - p


def _combine(values: Iterable[float], agreement: float) -> float:
    """Several edges for one disease-finding pair: the strongest, plus ``agreement`` times what noisy-OR adds to it
    (1: plain noisy-OR, agreement compounds; 0: the strongest edge alone)."""
    vals = [min(max(v, 0.0), 1.0) for v in values]
    if not vals:
        return 0.0
    top = max(vals)
    if agreement >= 1.0:
        return _noisy_or(vals)
    return top + agreement * (_noisy_or(vals) - top)


@dataclass(frozen=True)
class _Via:
    """A match a parent disease inherits from its child (materialised only for the returned candidates)."""

    child: str
    child_edges: "tuple[EdgeInfo, ...] | _Via"
    own: "tuple[EdgeInfo, ...] | _Via"


class _KGIndex:
    """Finding -> disease edges of one KG object with strengths, hierarchy maps and per-finding profiles (cached)."""

    def __init__(self, kg: Any, cfg: RankerConfig) -> None:
        from knowledge.kg import normalise  # the KG's own name key

        self.kg = kg
        self.cfg = cfg
        g = kg.graph
        nodes = g.nodes
        self.category: dict[str, str] = {n: a.get("category", "") for n, a in g.nodes(data=True)}
        self.children: dict[str, list[str]] = defaultdict(list)
        self.parents: dict[str, list[str]] = defaultdict(list)
        self.xref: dict[str, list[str]] = defaultdict(list)
        raw_edges: list[tuple[str, str, str, dict]] = []
        treated: set[str] = set()
        for u, v, rel, data in g.edges(keys=True, data=True):
            if rel == "is_a":
                self.children[v].append(u)
                self.parents[u].append(v)
            elif rel == "xref":
                self.xref[u].append(v)
            elif rel in FINDING_RELATIONS and self.category.get(u) == "disease":
                raw_edges.append((u, v, rel, data))
            elif rel == "treated_by":
                treated.add(u)

        # non-DO disease nodes named exactly like one DO disease are scored as that DO disease
        do_names: dict[str, set[str]] = defaultdict(set)
        for n, a in g.nodes(data=True):
            if a.get("category") == "disease" and n.startswith("DOID:"):
                do_names[normalise(a.get("name") or "")].add(n)
                for syn, sc in zip(a.get("synonyms") or (), a.get("synonym_scopes") or ()):
                    if sc == "EXACT":
                        do_names[normalise(syn)].add(n)
        self.canon: dict[str, str] = {}
        for n, a in g.nodes(data=True):
            if a.get("category") == "disease" and not n.startswith("DOID:"):
                hits = do_names.get(normalise(a.get("name") or ""), set())
                if len(hits) == 1:
                    self.canon[n] = next(iter(hits))

        self.by_finding: dict[str, list[tuple[str, float, str, str]]] = defaultdict(list)
        per_disease: dict[str, dict[str, float]] = defaultdict(dict)
        self.common: set[str] = set()    # HSDN profile or drug indication: the common diseases
        self.curated: set[str] = set()   # DO curated or cardinal-findings profile (common and rare diseases alike)
        for u, v, rel, data in raw_edges:
            d = self.canon.get(u, u)
            s, label, kinds = self.edge_strength(data)
            if s <= 0.0:       # a source weighted 0 (e.g. mined_strength=0, the mined-edges ablation): no edge
                continue
            self.by_finding[v].append((d, s, f"{u}|{rel}|{v}", label))
            prev = per_disease[d].get(v, 0.0)
            per_disease[d][v] = _combine((prev, s), cfg.source_agreement)
            if "HSDN" in kinds:
                self.common.add(d)
            elif kinds & {"DO", "Textbook"}:
                self.curated.add(d)
        self.common |= {d for d in treated if d in per_disease}
        self.mass = {d: sum(fs.values()) for d, fs in per_disease.items()}
        self.n_ann = {d: len(fs) for d, fs in per_disease.items()}
        self.n_diseases = max(1, len(per_disease))
        self.names = {n: str(nodes[n].get("name") or n) for n in self.category}
        self.onset = {n: tuple(a["onset"]) for n, a in g.nodes(data=True) if a.get("onset")}
        self.typical_age = {n: tuple(a["typical_age"]) for n, a in g.nodes(data=True) if a.get("typical_age")}
        self.endemic = {n: tuple(a["endemic_regions"]) for n, a in g.nodes(data=True) if a.get("endemic_regions")}
        self.course = {n: str(a["typical_course"]) for n, a in g.nodes(data=True) if a.get("typical_course")}
        self._profiles: dict[tuple[str, bool], dict[str, tuple[float, tuple[EdgeInfo, ...]]]] = {}
        self._idf: dict[str, float] = {}
        self._desc: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- edge strengths -------------------------------------------------------------------------------------------
    def edge_strength(self, data: dict) -> tuple[float, str, set[str]]:
        """Strength of one disease -> finding edge (noisy-OR over the sources asserting it), label, source kinds."""
        cfg = self.cfg
        sources = [data.get("source")] + list(data.get("also_sources") or ())
        kinds = {_source_kind(x) for x in sources if x}
        w, fr = data.get("weight"), data.get("frequency")
        parts: list[tuple[float, str, str]] = []     # (strength, label, kind)
        for kind in sorted(kinds):
            if kind == "HSDN":
                wv = float(w or 0.0)
                x = math.log1p(max(wv, 0.0)) / math.log1p(cfg.hsdn_ref)
                parts.append((cfg.hsdn_floor + (cfg.hsdn_ceiling - cfg.hsdn_floor) * min(1.0, x), f"HSDN w={wv:.3g}",
                              kind))
            elif kind == "HPO":
                s = min(cfg.hpo_max, cfg.hpo_default if fr is None else max(cfg.hpo_min, float(fr)))
                parts.append((s, "HPO" if fr is None else f"HPO f={float(fr):.2f}", kind))
            elif kind == "DO":
                parts.append((cfg.do_strength, "DO", kind))
            elif kind == "MedQuAD":
                parts.append((cfg.mined_strength, "MedQuAD", kind))
            elif kind == "Textbook":
                parts.append((cfg.cardinal_strength, "textbook", kind))
            else:
                parts.append((cfg.other_strength, kind, kind))
        if not parts:
            parts.append((cfg.other_strength, "KG", "KG"))
        parts = [x for x in parts if x[0] > 0.0]    # a source weighted 0 asserts nothing (the no-mined ablation)
        label = ", ".join(lab for _, lab, _ in parts)
        return _combine((p for p, _, _ in parts), cfg.source_agreement), label, {k for _, _, k in parts} & kinds

    # -- degrees of a finding ------------------------------------------------------------------------------------
    def plain_term(self, cid: str) -> str:
        """The broader finding ``cid`` is a degree of ("fever" for "mild fever": a parent whose name is ``cid``'s
        without its leading degree word, :data:`DEGREE_WORDS`), else ``cid``; computed once per index."""
        table = self.__dict__.get("_plain")
        if table is None:
            table = {}
            for c, cat in self.category.items():
                if cat not in FINDING_CATEGORIES:
                    continue
                m = _DEGREE.match(self.names.get(c, "").lower())
                if not m or any(self.category.get(e) == "disease" for e in self.equivalents(c)):
                    continue    # not graded, or a named entity ("Severe combined immunodeficiency")
                for p in sorted(self.parents.get(c, ())):
                    if self.category.get(p) in FINDING_CATEGORIES and self.names.get(p, "").lower() == m.group(1):
                        table[c] = p
                        break
            self.__dict__["_plain"] = table
        return table.get(cid, cid)

    # -- opposite findings ----------------------------------------------------------------------------------------
    def opposites(self, cid: str) -> set[str]:
        """The finding concepts opposite to ``cid`` or to one of its equivalents ("Bradycardia" for "Tachycardia";
        :func:`knowledge.kg.opposites.opposite_findings`), computed once per index (not stored with it: the reviewed
        list may change without a new graph)."""
        table = self.__dict__.get("_opposite")
        if table is None:
            from knowledge.kg.opposites import opposite_findings  # noqa: PLC0415

            table = opposite_findings({n: self.names.get(n, n) for n, c in self.category.items()
                                       if c in FINDING_CATEGORIES})
            self.__dict__["_opposite"] = table
        out: set[str] = set()
        for e in self.equivalents(cid):
            out.update(table.get(e, ()))
        return out

    # -- hierarchy / equivalence ----------------------------------------------------------------------------------
    def equivalents(self, cid: str) -> set[str]:
        seen = {cid}
        stack = [cid]
        while stack:
            for y in self.xref.get(stack.pop(), ()):
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return seen

    def descendants(self, cid: str) -> int:
        """The size of a disease's subtree as the ontologies file it (:func:`knowledge.kg.mesh_nodes.subtree_size`)."""
        n = self._desc.get(cid)
        if n is None:
            n = self._desc[cid] = subtree_size(cid, lambda x: self.children.get(x, ()), self.category.get, 10_000)
        return n

    def expansion(self, cid: str, with_parents: bool) -> list[tuple[str, float, str]]:
        """[(node, discount, how)] of the match set of a finding."""
        cfg = self.cfg
        out: dict[str, tuple[float, str]] = {}
        core = sorted(self.equivalents(cid))     # sorted: the same match set, in the same order, in every process
        for n in core:
            out[n] = (1.0, "self" if n == cid else "equivalent")
        start = [n for n in core if self.category.get(n) in FINDING_CATEGORIES]
        self._walk(out, start, self.children, cfg.child_depth, cfg.child_discount, "narrower")
        if with_parents and cfg.parent_discount > 0:
            self._walk(out, start, self.parents, cfg.parent_depth, cfg.parent_discount, "broader")
        if with_parents and cfg.related_discount > 0:
            pairs = related_findings()
            for n in core:
                for r in sorted(pairs.get(n, ())):
                    for e in sorted(self.equivalents(r)):
                        if e not in out and self.category.get(e) in FINDING_CATEGORIES:
                            out[e] = (cfg.related_discount, "related")
        return [(n, d, how) for n, (d, how) in out.items()]

    def _walk(self, out: dict[str, tuple[float, str]], start: list[str], step: dict[str, list[str]], depth: int,
              discount: float, how: str) -> None:
        """Add to ``out`` the finding concepts ``depth`` ``is_a`` steps from ``start`` along ``step`` (children or
        parents), equivalents included, the k-th step at ``discount`` ** k; a concept already in ``out`` keeps its
        first entry."""
        frontier, disc = start, 1.0
        diseases = how == "narrower" and self.cfg.narrower_disease > 0
        for _ in range(max(0, depth)):
            disc *= discount
            nxt: list[str] = []
            for n in frontier:
                for m in sorted(step.get(n, ())):
                    for e in sorted(self.equivalents(m)):
                        if e in out:
                            continue
                        if self.category.get(e) in FINDING_CATEGORIES:
                            out[e] = (disc, how)
                            nxt.append(e)
                        elif diseases and self.category.get(e) == "disease":
                            # a narrower term that is a disease: matched, not walked further
                            out[e] = (disc * self.cfg.narrower_disease, how)
            frontier = nxt

    def profile(self, cid: str, with_parents: bool) -> dict[str, tuple[float, tuple[EdgeInfo, ...]]]:
        """disease -> (s(d, f), edges best first) for finding ``cid``; cached."""
        key = (cid, with_parents)
        hit = self._profiles.get(key)
        if hit is not None:
            return hit
        acc: dict[str, list[EdgeInfo]] = defaultdict(list)
        expansion = self.expansion(cid, with_parents)
        for node, disc, how in expansion:
            if self.category.get(node) == "disease":
                if how == "narrower":
                    # a narrower term of the finding is this disease: cite that term's xref edge
                    src = next((x for x, _, h in expansion if h == "narrower" and node in self.xref.get(x, ())), cid)
                    acc[self.canon.get(node, node)].append(
                        (self.cfg.equivalent_disease * disc, f"{src}|xref|{node}", "a narrower term names the disease",
                         "narrower"))
                    continue
                # the finding is (equivalent to) this disease: cite the xref edge that links them
                src = cid if node in self.xref.get(cid, ()) else next(
                    (x for x in sorted(self.equivalents(cid)) if node in self.xref.get(x, ())), cid)
                acc[self.canon.get(node, node)].append(
                    (self.cfg.equivalent_disease, f"{src}|xref|{node}", "same concept", EQUIVALENT_DISEASE))
                continue
            if how in ("broader", "related"):
                # a broad term ("Pain" for "Epigastric pain") says less: scale by its relative specificity; so does a
                # related finding linked to more diseases than the patient's own (malaise -> fatigue), not the other
                # way (a patient's fatigue matches the few diseases a textbook gives malaise for in full)
                disc *= min(1.0, self.idf(node) / max(self.idf(cid), 1e-9))
            for d, s, tid, label in self.by_finding.get(node, ()):
                acc[d].append((s * disc, tid, label, how))
        # edges best first, ties by edge id: the first edge decides what a match is called ("equivalent disease")
        agree = self.cfg.source_agreement
        prof = {d: (_combine((e[0] for e in edges), agree), tuple(sorted(edges, key=lambda e: (-e[0], e[1]))))
                for d, edges in acc.items()}
        with self._lock:
            self._profiles[key] = prof
        return prof

    def ancestors(self, cid: str, depth: int) -> set[str]:
        """The finding concepts broader than ``cid`` (or than one of its equivalents) within ``depth`` is_a steps,
        equivalents of each included; ``cid``'s own equivalents are not."""
        own = self.equivalents(cid)
        out: set[str] = set()
        frontier = list(own)
        for _ in range(max(0, depth)):
            nxt: list[str] = []
            for n in frontier:
                for p in self.parents.get(n, ()):
                    for e in self.equivalents(p):
                        if e not in out and e not in own and self.category.get(e) in FINDING_CATEGORIES:
                            out.add(e)
                            nxt.append(e)
            frontier = nxt
        return out

    def idf(self, cid: str) -> float:
        v = self._idf.get(cid)
        if v is None:
            v = math.log(1.0 + self.n_diseases / max(1, len(self.profile(cid, with_parents=False))))
            self._idf[cid] = v
        return v


_INDEXES: "weakref.WeakKeyDictionary[Any, dict[tuple, _KGIndex]]" = weakref.WeakKeyDictionary()
_INDEX_LOCK = threading.Lock()


RELATED_FILE = Path(__file__).resolve().parent / "data" / "related_findings.yaml"


class RelatedFindingsError(ValueError):
    """The related-findings table cannot be read or does not follow its format."""


class RelatedPair(BaseModel):
    """Findings one complaint is recorded as (agents/data/related_findings.yaml)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    findings: list[NamedConcept] = Field(min_length=2)
    # one way: only the first finding (what the patient reports) matches diseases linked to the others, not the other
    # way round (a patient's tiredness meets a textbook's malaise; "I feel unwell" does not meet a textbook's fatigue)
    one_way: bool = False
    reason: str
    citation: str

    _clean = field_validator("reason", "citation")(clean_text)


class RelatedTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    pairs: list[RelatedPair]


def read_related(path: Path | None = None) -> RelatedTable:
    """The related-findings table (default: the packaged file), checked against its format."""
    return read_curated(path or RELATED_FILE, RelatedTable, "related findings", RelatedFindingsError,
                        lambda t: [p.id for p in t.pairs])


_RELATED: dict[str, frozenset[str]] | None = None


def related_findings() -> dict[str, frozenset[str]]:
    """finding id -> the ids the table pairs it with (read once)."""
    global _RELATED
    if _RELATED is None:
        out: dict[str, set[str]] = defaultdict(set)
        for pair in read_related().pairs:
            ids = {c.id for c in pair.findings}
            for i in ([pair.findings[0].id] if pair.one_way else ids):
                out[i] |= ids - {i}
        _RELATED = {k: frozenset(v) for k, v in out.items()}
    return _RELATED


# the version of how the index is derived (edge strengths, hierarchy maps): raise it when that code changes, so that
# an index cached on disk by older code is rebuilt rather than read
INDEX_FORMAT = 2
_DERIVED = ("category", "children", "parents", "xref", "canon", "by_finding", "common", "curated", "mass", "n_ann",
            "n_diseases", "names", "onset", "typical_age", "endemic", "course")


def _cache_path(kg: Any, cfg: RankerConfig):
    """Where the derived index of a KG version lives on disk (None for a KG without a version)."""
    import hashlib  # noqa: PLC0415

    from knowledge.paths import build_dir  # noqa: PLC0415

    version = getattr(kg, "version", None)
    if not version:
        return None
    key = hashlib.sha256(repr((version, cfg.index_key(), _DERIVED, INDEX_FORMAT)).encode()).hexdigest()[:16]
    return build_dir() / "ranker" / f"kgindex-{key}.pkl"


def _load_index(kg: Any, cfg: RankerConfig) -> _KGIndex | None:
    import pickle  # noqa: PLC0415

    path = _cache_path(kg, cfg)
    if path is None or not path.is_file():
        return None
    try:
        with open(path, "rb") as fh:
            state = pickle.load(fh)
    except Exception:  # noqa: BLE001 — a broken cache is rebuilt
        return None
    if not isinstance(state, dict) or any(name not in state for name in _DERIVED):
        return None                            # written by an older ranker: rebuilt
    idx = _KGIndex.__new__(_KGIndex)
    idx.kg, idx.cfg = kg, cfg
    for name in _DERIVED:
        setattr(idx, name, state[name])
    idx._profiles, idx._idf, idx._desc, idx._lock = {}, {}, {}, threading.Lock()
    return idx


def _save_index(idx: _KGIndex) -> None:
    import pickle  # noqa: PLC0415

    path = _cache_path(idx.kg, idx.cfg)
    if path is None:
        return
    from knowledge.atomic import writing  # noqa: PLC0415

    try:
        with writing(path) as fh:
            pickle.dump({name: getattr(idx, name) for name in _DERIVED}, fh, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:
        pass                                   # a read-only home: the index is rebuilt next time


def _index_for(kg: Any, cfg: RankerConfig) -> _KGIndex:
    """One index per (KG object, index-shaping constants), kept for the life of the KG object and on disk per KG
    version (building it walks every finding edge: seconds; loading it: a fraction of that)."""
    with _INDEX_LOCK:
        per = _INDEXES.setdefault(kg, {})
        idx = per.get(cfg.index_key())
        if idx is None:
            idx = _load_index(kg, cfg)
            if idx is None:
                idx = _KGIndex(kg, cfg)
                _save_index(idx)
            per[cfg.index_key()] = idx
        return idx


def ranking_findings(extraction: Extraction) -> tuple[list[Entity], list[Entity]]:
    """(positive, negated) entities of an extraction for :meth:`KGRanker.rank`.

    Positive: linked findings (symptoms, signs, test results) of the present illness, i.e. not negated, not a
    relative's, not hypothetical and not past history: "History: heart failure" is context, not a finding that
    would make heart failure a candidate "named in the presentation". Negated: linked entities said to be absent.
    """
    pos = [e for e in extraction.entities
           if e.current and e.concept_id and e.category in FINDING_ENTITY_CATEGORIES]
    neg = [e for e in extraction.entities if e.negated and e.concept_id]
    return pos, neg


_MALE_ONLY = re.compile(r"\b(male\s+breast|prostat\w*|testi\w*|scrot\w*|penile|penis|epididym\w*|seminal|orchi\w*|"
                        r"erectile|varicocele|balanitis)\b", re.I)
_FEMALE_ONLY = re.compile(r"\b(ovar\w*|uter\w*|cervi\w*|vagin\w*|vulv\w*|endometri\w*|fallopian|pregnan\w*|"
                          r"puerper\w*|gestational|placent\w*|(?:pre-?)?eclampsia|HELLP|postpartum|post-partum|"
                          r"obstetric\w*|hyperemesis|amniotic|chorioamnionitis|menstru\w*|premenstrual|menopaus\w*|"
                          r"dysmenorrh\w*|amenorrh\w*|lactation)\b", re.I)
_PEDIATRIC = re.compile(r"\b(neonatal|newborn|infant|infants|infantile|infancy|childhood|juvenile|congenital)\b", re.I)


# HPO ages of onset (knowledge.kg.parsers.HPO_ONSETS) that say a disease begins before or in infancy
EARLY_ONSETS = frozenset({"antenatal", "congenital", "neonatal", "infantile"})


def outside_typical_age(age: float | None, typical_age: Sequence[float | None] | None) -> bool:
    """True when a known age falls outside a disease's curated typical ages ``(min, max)`` (either may be None)."""
    if age is None or not typical_age:
        return False
    lo, hi = typical_age
    return (lo is not None and age < lo) or (hi is not None and age > hi)


def outside_endemic_regions(regions: Iterable[str] | None, endemic: Iterable[str] | None) -> bool:
    """True when the patient has been only in regions (known, non-empty) where a geographically restricted disease
    (``endemic``: the regions it is acquired in) is not acquired."""
    been, where = set(regions or ()), set(endemic or ())
    return bool(been) and bool(where) and not (been & where)


def opposite_course(course: str | None, typical_course: str | None) -> bool:
    """True when the presenting illness's course (``Extraction.course``: "acute" for days, "chronic" for months)
    is the opposite of a disease's typical first presentation (the cardinal-findings table's ``course``)."""
    return bool(course) and bool(typical_course) and {course, typical_course} == {"acute", "chronic"}


def demographic_factor(name: str, age: float | None, sex: str | None, cfg: RankerConfig | None = None,
                       onset: Iterable[str] | None = None,
                       typical_age: Sequence[float | None] | None = None,
                       endemic: Iterable[str] | None = None, regions: Iterable[str] | None = None,
                       typical_course: str | None = None, course: str | None = None) -> float:
    """A soft penalty for a disease whose name ties it to the other sex (prostate, ovary, pregnancy ...) or whose
    age does not fit the patient: for an adult, a disease of infancy/childhood by its name or by HPO's ages of onset
    when every one annotated is infancy or earlier (biliary atresia); for anyone, a disease whose curated typical age
    (``typical_age``, years) leaves the patient out (Kawasaki disease at 25, polymyalgia rheumatica at 30); and a
    geographically restricted disease (``endemic``: the regions it is acquired in) when the patient has been only
    in other ``regions`` (Ebola virus disease for a traveller back from Thailand); and a disease whose typical first
    presentation (``typical_course``) is the opposite of the illness's ``course`` (bronchiectasis for 3 days of
    cough). ``sex_mismatch`` / ``age_mismatch`` / ``region_mismatch`` / ``course_mismatch`` of the ranker's config
    (each once), else 1."""
    cfg = cfg or RankerConfig()
    factor = 1.0
    if (sex == "male" and _FEMALE_ONLY.search(name)) or (sex == "female" and _MALE_ONLY.search(name)):
        factor *= cfg.sex_mismatch
    onsets = set(onset or ())
    if (age is not None and age >= 18 and (_PEDIATRIC.search(name) or (onsets and onsets <= EARLY_ONSETS))) \
            or outside_typical_age(age, typical_age):
        factor *= cfg.age_mismatch
    if outside_endemic_regions(regions, endemic):
        factor *= cfg.region_mismatch
    if opposite_course(course, typical_course):
        factor *= cfg.course_mismatch
    return factor


class KGRanker:
    """Rank KG diseases for a set of findings. The per-KG index is built on first use (a few seconds) and cached
    for the life of the KG object; ranking itself takes milliseconds."""

    def __init__(self, kg: Any, config: RankerConfig | None = None, **overrides: Any) -> None:
        cfg = config or RankerConfig()
        if overrides:
            known = {f.name for f in fields(RankerConfig)}
            unknown = sorted(set(overrides) - known)
            if unknown:
                raise TypeError(f"unknown ranker option(s): {', '.join(unknown)}")
            cfg = replace(cfg, **overrides)
        self.kg = kg
        self.config = cfg

    @property
    def index(self) -> _KGIndex:
        return _index_for(self.kg, self.config)

    def warm(self) -> "KGRanker":
        """Build the index now (instead of on the first ``rank`` call)."""
        _ = self.index
        return self

    @staticmethod
    def _ids(entities: Iterable[Entity | str] | None) -> list[str]:
        out: list[str] = []
        for e in entities or []:
            cid = e if isinstance(e, str) else e.concept_id
            if cid and cid not in out:
                out.append(cid)
        return out

    def rank(self, findings: list[Entity], negated: list[Entity] | None = None, k: int = 10,
             age: float | None = None, sex: str | None = None, also: Iterable[str] = (),
             regions: Iterable[str] = (), course: str | None = None, known: Collection[str] = ()) -> list[Candidate]:
        """Top-``k`` diseases for the positive ``findings`` (entities with a ``concept_id``), lowered by the
        ``negated`` ones. Entities without a concept id, or with an id the KG does not know, are ignored; a
        positive finding that is itself a disease is matched to that disease. ``[]`` when nothing matches.
        The diseases in ``also`` (e.g. proposed by a language model) follow the top ``k`` in score order when they
        match any finding but rank lower (their explanation is what retrieval tests them with). ``regions``: the
        world regions the patient has been in (:attr:`Extraction.regions`), for the place fit; ``course``: how long
        the complaints have lasted (:attr:`Extraction.course`), for the time fit; ``known``: diseases the patient is
        known to have, which the age, sex, place and time fit leave alone (a 39-year-old's known COPD is hers)."""
        got = self._score(findings, negated, age, sex, regions, course, known)
        if got is None or k <= 0:
            return []
        scored, ev, neg, neg_prof, opposed, opp_prof = got
        idx = self.index
        top = sorted(heapq.nlargest(k, scored), key=lambda x: (-x[0], idx.names.get(x[1], x[1])))
        wanted = {idx.canon.get(a, a) for a in also} - {d for _, d in top}
        if wanted:
            top += sorted(((sc, d) for sc, d in scored if d in wanted), key=lambda x: -x[0])
        return [self._candidate(d, s, ev[d], neg, neg_prof, opposed, opp_prof) for s, d in top]

    def scores(self, findings: list[Entity], negated: list[Entity] | None = None, age: float | None = None,
               sex: str | None = None, regions: Iterable[str] = (), course: str | None = None,
               known: Collection[str] = ()) -> dict[str, float]:
        """Every matching disease's score as :meth:`rank` computes it, without building candidates."""
        got = self._score(findings, negated, age, sex, regions, course, known)
        return {d: sc for sc, d in got[0]} if got else {}

    def _score(self, findings: list[Entity], negated: list[Entity] | None, age: float | None, sex: str | None,
               regions: Iterable[str], course: str | None, known: Collection[str] = ()) -> tuple | None:
        """(scored, evidence, negated ids, their profiles, opposed, their profiles) of :meth:`rank`; None when no
        finding matches."""
        cfg = self.config
        regions = tuple(regions or ())
        idx = self.index
        cat = idx.category
        pos = [c for c in self._ids(findings) if c in cat]
        neg = [c for c in self._ids(negated) if c in cat and c not in pos]
        # the denials that only an in-range measured value makes count a share (RankerConfig.reading_negation_share)
        stated = {e.concept_id for e in negated or () if not isinstance(e, str) and not getattr(e, "measured", False)}
        read_only = {c for c in neg if c not in stated} - {e for e in negated or () if isinstance(e, str)}
        pos = [c for c in pos if cat[c] in FINDING_CATEGORIES or cat[c] == "disease"]
        neg = [c for c in neg if cat[c] in FINDING_CATEGORIES]
        if cfg.degree_as_plain:
            pos = list(dict.fromkeys(idx.plain_term(c) for c in pos))
        if cfg.drop_broader:
            pos = self.most_specific(pos)
        if not pos:
            return None

        # 1. direct evidence: disease -> finding -> (strength, edges)
        ev: dict[str, dict[str, tuple[float, tuple[EdgeInfo, ...]]]] = defaultdict(dict)
        named: set[str] = set()   # diseases a finding names (is, or is xref-equivalent to)
        for f in pos:
            if cat[f] == "disease":
                d = idx.canon.get(f, f)
                ev[d][f] = (cfg.equivalent_disease, ())
                named.add(d)
                continue
            for d, m in idx.profile(f, with_parents=True).items():
                ev[d][f] = m
                if _names_disease(m):
                    named.add(d)

        idf = {f: (idx.idf(f) if cat[f] in FINDING_CATEGORIES else math.log(1.0 + idx.n_diseases)) for f in pos}
        n_find = len(pos)
        mass: dict[str, float] = {}
        common_extra: set[str] = set()
        curated_extra: set[str] = set()

        memo: dict[str, float] = {}

        def evidence(d: str) -> float:
            v = memo.get(d)
            if v is None:
                raw = 0.0
                for f, (s, _) in ev[d].items():
                    raw += idf[f] * s
                v = memo[d] = raw / (1.0 + mass.get(d, idx.mass.get(d, 0.0)) / cfg.length_k) ** cfg.length_beta
            return v

        # 2. parent propagation into small subtrees (clinical entities, not categories): the parent takes over
        #    the profile of its best-supported child (discounted), merged per finding with its own; children are
        #    not pooled, so a parent cannot assemble a profile that no single subtype has
        if cfg.propagate_discount > 0 and cfg.propagate_levels > 0:
            level = list(ev)
            if len(level) > cfg.propagate_pool:
                level = heapq.nlargest(cfg.propagate_pool, level, key=evidence)
            own_profile: dict[str, dict] = {}
            best: dict[str, tuple[float, str]] = {}
            for _ in range(cfg.propagate_levels):
                updated: set[str] = set()
                for d in level:
                    for p in idx.parents.get(d, ()):
                        if cat.get(p) != "disease" or idx.descendants(p) > cfg.propagate_max_descendants:
                            continue
                        e = evidence(d)
                        if e > best.get(p, (0.0, ""))[0]:
                            best[p] = (e, d)
                            updated.add(p)
                changed = []
                for p in sorted(updated):
                    d = best[p][1]
                    if p not in own_profile:
                        own_profile[p] = ev.get(p, {})
                        mass.setdefault(p, idx.mass.get(p, 0.0))
                    own = own_profile[p]
                    merged = dict(own)
                    gained = False
                    for f, (s, edges) in ev[d].items():
                        s2 = s * cfg.propagate_discount
                        cur = own.get(f)
                        if cur is None or cur[0] < s2:
                            merged[f] = (s2, _Via(d, edges, cur[1] if cur else ()))
                            gained = True
                    if gained:
                        # the parent is normalised (and prior-weighted) like the child it speaks for
                        ev[p] = merged
                        memo.pop(p, None)
                        mass[p] = max(idx.mass.get(p, 0.0), mass.get(d, idx.mass.get(d, 0.0)))
                        if d in idx.common or d in common_extra:
                            common_extra.add(p)
                        elif d in idx.curated or d in curated_extra:
                            curated_extra.add(p)
                        changed.append(p)
                level = changed
                if not level:
                    break

        # 3. negated findings (strict match set: no broader terms), and the opposites of present findings: an
        #    expected finding whose opposite the patient has ("Elevated TSH" when the TSH is suppressed) counts against
        #    a disease like an absent one, unless the disease also explains the finding the patient has
        neg_prof = {g: idx.profile(g, with_parents=False) for g in neg}
        opposed: dict[str, str] = {}     # expected finding -> the patient's finding opposite to it
        if cfg.opposite_mu > 0:
            for f in pos:
                if cat[f] in FINDING_CATEGORIES:
                    for o in sorted(idx.opposites(f)):
                        if o in cat and o not in pos and o not in neg and o not in opposed:
                            opposed[o] = f
        opp_prof = {o: idx.profile(o, with_parents=False) for o in opposed}

        scored: list[tuple[float, str]] = []
        for d, fm in ev.items():
            score = evidence(d)
            if cfg.coverage_gamma:
                if cfg.coverage_ref > 0:
                    covered = sum(min(1.0, s / cfg.coverage_ref) for s, _ in fm.values())
                else:
                    covered = len(fm)
                score *= (covered / n_find) ** cfg.coverage_gamma
            if d in named:
                score *= 1.0 + cfg.named_prior
            if d in idx.common or d in common_extra:
                score *= 1.0 + cfg.common_prior
            elif d in idx.curated or d in curated_extra:
                score *= 1.0 + cfg.curated_prior
            for g in neg:
                m = neg_prof[g].get(d)
                if m is not None:
                    # ... in full against the disease the denied finding names (a normal count and "thrombocytopenia")
                    mu = cfg.negation_mu * (cfg.reading_negation_share if g in read_only and not _names_disease(m)
                                            else 1.0)
                    score *= 1.0 - mu * _denied_strength(m, cfg.negation_weak_share, cfg.source_agreement)
            for o, f in opposed.items():
                m = opp_prof[o].get(d)
                if m is not None and f not in fm:
                    score *= 1.0 - cfg.opposite_mu * m[0]
            if d not in known:
                score *= demographic_factor(idx.names.get(d, d), age, sex, cfg, idx.onset.get(d),
                                            idx.typical_age.get(d), idx.endemic.get(d), regions,
                                            typical_course=idx.course.get(d), course=course)
            if score > 0:
                scored.append((score, d))
        return scored, ev, neg, neg_prof, opposed, opp_prof

    def most_specific(self, ids: list[str]) -> list[str]:
        """``ids`` without the findings broader than another of them: "pain" beside "left lower quadrant pain",
        "fever" beside "low-grade fever" say nothing the specific finding does not (a second mention of the same
        complaint), yet a generic term matches hundreds of diseases through its narrower terms. Diseases and
        findings the hierarchy does not relate are kept, in their order."""
        idx = self.index
        depth = self.config.broader_depth
        up = {c: idx.ancestors(c, depth) for c in dict.fromkeys(ids) if idx.category.get(c) in FINDING_CATEGORIES}
        broader = {a for c, anc in up.items() for a in anc if a in up and c not in up[a]}
        return [c for c in ids if c not in broader]

    def explained(self, disease: str, findings: list[Entity] | list[str]) -> list[str]:
        """The ids of ``findings`` the knowledge graph links to ``disease`` by the edges the ranking uses (a finding
        that is the disease itself included), whether or not the ranking would place the disease in its top k: what a
        disease found by text retrieval alone explains of the presentation."""
        idx = self.index
        d = idx.canon.get(disease, disease)
        out: list[str] = []
        for f in self._ids(findings):
            cat = idx.category.get(f)
            if cat == "disease":
                if idx.canon.get(f, f) == d:
                    out.append(f)
            elif cat in FINDING_CATEGORIES and d in idx.profile(f, with_parents=True):
                out.append(f)
        return out

    def _expand(self, edges: "tuple[EdgeInfo, ...] | _Via") -> tuple[EdgeInfo, ...]:
        """Edges of a (possibly inherited) match, best first; inherited ones discounted and tagged "via child"."""
        if not isinstance(edges, _Via):
            return edges
        f = self.config.propagate_discount
        child = tuple((es * f, tid, lab, f"via {self.index.names.get(edges.child, edges.child)}")
                      for es, tid, lab, _ in self._expand(edges.child_edges)[:2])
        return child + self._expand(edges.own)

    def _candidate(self, d: str, score: float, fm: dict[str, tuple[float, tuple[EdgeInfo, ...]]],
                   neg: list[str], neg_prof: dict[str, dict], opposed: dict[str, str] | None = None,
                   opp_prof: dict[str, dict] | None = None) -> Candidate:
        names = self.index.names
        supporting: list[str] = []
        parts: list[str] = []
        for f, (s, edges) in sorted(fm.items(), key=lambda kv: -kv[1][0]):
            edges = self._expand(edges)
            for _, tid, _, _ in edges:
                if tid not in supporting:
                    supporting.append(tid)
            tags: list[str] = []
            for _, tid, lab, how in edges[:2]:
                obj = tid.rsplit("|", 1)[-1]
                if how in ("self", "equivalent"):
                    tag = lab
                elif how == "narrower" and "|xref|" in tid:
                    term = tid.split("|", 1)[0]
                    tag = f"its narrower term {names.get(term, term)} is this disease"
                elif how in ("narrower", "broader", "related"):
                    tag = f"{lab}, {how}: {names.get(obj, obj)}"
                else:
                    tag = f"{lab}, {how}"
                if tag not in tags:
                    tags.append(tag)
            if not edges:
                tags.append("named in the presentation")
            parts.append(f"{names.get(f, f)} ({'; '.join(tags)})")
        contradicted: list[str] = []
        contradicting: list[str] = []
        for g in neg:
            m = neg_prof[g].get(d)
            if m is None:
                continue
            contradicted.append(g)
            for _, tid, _, _ in m[1]:
                if tid not in contradicting:
                    contradicting.append(tid)
        absent = list(contradicted)
        against: list[str] = []
        for o, f in (opposed or {}).items():
            m = (opp_prof or {}).get(o, {}).get(d)
            if m is None or f in fm:
                continue
            contradicted.append(o)
            against.append(f"{names.get(o, o)} (the patient has {names.get(f, f)})")
            for _, tid, _, _ in m[1]:
                if tid not in contradicting:
                    contradicting.append(tid)
        expl = []
        if parts:
            expl.append("matches " + ", ".join(parts))
        if absent or against:
            expl.append("expects " + ", ".join([f"{names.get(g, g)} (absent)" for g in absent] + against))
        return Candidate(concept_id=d, name=names.get(d, d), score=round(score, 6), matched=list(fm),
                         contradicted=contradicted, supporting=supporting, contradicting=contradicting,
                         explanation="; ".join(expl))

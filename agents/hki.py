"""HKI agent (paper Eq. 2–3): heterogeneous knowledge retrieval and dynamic integration.

For every positive entity, the entity-keyed index of each source (G, B, O) returns its top-k entities by cosine
(Eq. 2) with their knowledge (triples for G, chunks for B/O). The whole presentation also goes to the chunk-level
hybrid search. The KG differential ranker adds candidate diseases with their explanation triples. All pieces are
merged into one evidence list ordered by relevance (Eq. 3 plus dynamic integration): each item has a stable id,
source role, score in [0, 1] and provenance.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from knowledge.kg.cardinal import SOURCE as CARDINAL_SOURCE   # curated cardinal findings, after a textbook
from knowledge.kg.mined import SOURCE as MINED_SOURCE   # edges read from a MedQuAD sentence
from knowledge.kg.mined import license_of
from knowledge.kg.normalize import normalise
from knowledge.kg.vocab import NCIT_LICENSE, NCIT_ORGANISATION, ncit_url

from .ranker import demographic_factor, ranking_findings
from .subtypes import (demote_denied, demote_known, has_subtype_pair, is_known, known_conditions, known_or_broader,
                       fold_empty_broader, mark_relatives, name_subtypes_first)
from .textutil import terms
from .types import Candidate, Entity, Evidence, Extraction, ProposedDiagnosis

USEFUL_SECTIONS = ("symptoms", "information", "exams and tests", "causes", "treatment", "complications",
                   "susceptibility", "frequency")


@dataclass
class RetrievalParams:
    sources: tuple[str, ...] = ("G", "B", "O")
    top_k: int = 5
    chunk_k: int = 8
    min_entity_score: float = 0.55
    min_chunk_score: float = 0.0
    max_evidence: int = 40
    differential_k: int = 5
    use_entities: bool = True
    use_pages: bool = True
    page_weight: float = 1.0           # the disease-page ranking's weight in the rank fusion (KG ranking = 1)
    model_weight: float = 1.5          # the language model's proposal ranking's weight (when it proposed; dev-chosen)
    alternative_weight: float = 1.0    # ... for the diagnoses of its widening call (ProposedDiagnosis.alternative)
    contradiction_penalty: float = 0.35  # a model-proposed candidate loses this share per absent expected finding
    triples_per_concept: int = 6
    chunks_per_focus: int = 2
    use_prior: bool = True             # re-rank the fused candidates with the fitted commonness prior (agents/prior.py)
    prior_weight: float = 1.0          # its commonness part's weight (1 = as fitted; 0 = fusion order)
    prior_pool: int = 20               # candidates fused for it to re-rank (the differential keeps the usual number)
    prior_monotone: bool = False       # its fusion part never rises down the fused order (CommonnessPrior.rescore)
    use_mined_edges: bool = True       # the disease -> finding edges mined from MedQuAD sentences (agents/miner.py)
    mined_strength: float | None = None  # their strength in the KG ranking (None: the ranker's own, RankerConfig)
    use_cardinal: bool = True          # the curated cardinal findings of common diseases (knowledge/kg/cardinal.py)
    cardinal_strength: float | None = None  # their strength in the KG ranking (None: the ranker's own)
    source_agreement: float | None = None   # what further sources asserting one finding add (None: the ranker's own)
    use_opposites: bool = True         # opposite findings count against a disease (knowledge/kg/opposites.py)
    drop_broader: bool = False         # the KG ranking leaves out a finding broader than another present one
    degree_as_plain: bool = False      # ... matches a graded finding ("mild fever") as its plain term (RankerConfig)
    related_discount: float | None = None  # ... matches a related finding (fatigue for malaise) at this discount
    use_sites: bool = True             # the diseases of the organs under a localised pain (agents/sites.py)
    site_weight: float = 0.5           # its weight in the rank fusion (KG ranking = 1; chosen on the dev halves)
    site_k: int = 10                   # diseases the site ranking offers
    use_signs: bool = True             # the diseases classic signs point to (agents/signs.py) as a ranking
    sign_weight: float = 2.0           # its weight in the rank fusion (KG ranking = 1; dev-chosen)
    kg_score_weight: float = 0.15      # the KG ranking's part also grows with its score relative to its best (the
                                       # margin a rank hides): + w * score / best score (0: rank alone)
    use_risk_factors: bool = True      # stated exposures raise the candidates they make likelier (risk_factors.py)
    risk_factor_boost: float = 1.6     # the factor per unit of exposure weight (at most 2) on such a candidate
    others_as_exposures: bool = True   # a relative's disease or anyone's infection raises it too (risk_factors.py)
    risk_needs_match: bool = True      # ... only when a finding of the patient matches it in the KG (not word search
                                       # alone: immunosuppression does not make herpes zoster likelier without a rash)
    unexposed_factor: float = 0.25     # on a disease seldom seen without an exposure the history does not state
                                       # (risk_factors.yaml needs_exposure; 1: marked only)
    unmatched_factor: float = 0.85     # on the fused score of a disease no knowledge-graph finding matched
    # the language model's first choice stays first when a knowledge ranking (KG, text, page, sign or site) also
    # puts it within this rank and the evidence does not contradict it (0: it is fused like every candidate)
    model_first_support: int = 0
    use_subtypes: bool = True          # a subtype that alone fits is named before its parent (name_subtypes_first)
    subtype_ratio: float = 0.5         # ... when the parent's own KG score is under this share of the subtype's
    subtype_standout: float = 2.0      # ... and the subtype's is this many times the parent's next subtype's
    relatives_depth: int = 2           # a later candidate this many is_a steps from an earlier one says how they relate
    fold_relatives: bool = False       # ... or is folded into it (subtypes.mark_relatives; off: dev halves, results.md)
    fold_empty_broader: bool = True    # a broader term with no evidence of its own goes into its kind in the list
    known_condition_factor: float = 1.0  # on a candidate the patient knowingly has (subtypes.demote_known; 1: marked)
    known_by_words: bool = True        # the word searches' ranks count for a known condition (its name finds its pages)
    known_yield_ratio: float = 0.5     # ... and yields its place to a complication of it the findings fit this well
    ruled_out_factor: float = 0.1      # on a candidate a stated test result excludes (must_not_miss.demote; 1: marked)
    use_against: bool = True           # findings that argue against a candidate move it down (agents/against.py)
    against_factor: float = 0.1        # ... its score times this once per rule, at most twice (1: marked only)

    @classmethod
    def from_config(cls, cfg: Any) -> "RetrievalParams":
        """The retrieval parameters of a run configuration (any object with the fields of
        ``graph.config.PipelineConfig``: sources, top_k_per_source, chunk_k, min_entity_score, min_chunk_score,
        max_evidence, differential_k, use_mee, use_pages, page_weight, use_prior, prior_weight)."""
        return cls(sources=tuple(cfg.sources), top_k=cfg.top_k_per_source, chunk_k=cfg.chunk_k,
                   min_entity_score=cfg.min_entity_score, min_chunk_score=cfg.min_chunk_score,
                   max_evidence=cfg.max_evidence, differential_k=cfg.differential_k, use_entities=cfg.use_mee,
                   use_pages=getattr(cfg, "use_pages", True), page_weight=getattr(cfg, "page_weight", 1.0),
                   model_weight=getattr(cfg, "model_weight", 1.5),
                   alternative_weight=getattr(cfg, "alternative_weight", 1.0),
                   contradiction_penalty=getattr(cfg, "contradiction_penalty", 0.35),
                   use_prior=getattr(cfg, "use_prior", True), prior_weight=getattr(cfg, "prior_weight", 1.0),
                   prior_pool=getattr(cfg, "prior_pool", 20),
                   prior_monotone=getattr(cfg, "prior_monotone", False),
                   use_mined_edges=getattr(cfg, "use_mined_edges", True),
                   mined_strength=getattr(cfg, "mined_strength", None),
                   use_cardinal=getattr(cfg, "use_cardinal", True),
                   cardinal_strength=getattr(cfg, "cardinal_strength", None),
                   source_agreement=getattr(cfg, "source_agreement", None),
                   use_opposites=getattr(cfg, "use_opposites", True),
                   drop_broader=getattr(cfg, "drop_broader_findings", False),
                   degree_as_plain=getattr(cfg, "degree_as_plain", False),
                   related_discount=getattr(cfg, "related_discount", None),
                   use_sites=getattr(cfg, "use_sites", True), site_weight=getattr(cfg, "site_weight", 0.5),
                   use_signs=getattr(cfg, "use_signs", True), sign_weight=getattr(cfg, "sign_weight", 2.0),
                   kg_score_weight=getattr(cfg, "kg_score_weight", 0.15),
                   use_risk_factors=getattr(cfg, "use_risk_factors", True),
                   risk_factor_boost=getattr(cfg, "risk_factor_boost", 1.6),
                   risk_needs_match=getattr(cfg, "risk_needs_match", True),
                   others_as_exposures=getattr(cfg, "others_as_exposures", True),
                   unexposed_factor=getattr(cfg, "unexposed_factor", 0.25),
                   unmatched_factor=getattr(cfg, "unmatched_factor", 0.85),
                   model_first_support=getattr(cfg, "model_first_support", 0),
                   use_subtypes=getattr(cfg, "use_subtypes", True),
                   subtype_ratio=getattr(cfg, "subtype_ratio", 0.5),
                   subtype_standout=getattr(cfg, "subtype_standout", 2.0),
                   relatives_depth=getattr(cfg, "relatives_depth", 2),
                   fold_relatives=getattr(cfg, "fold_relatives", False),
                   fold_empty_broader=getattr(cfg, "fold_empty_broader", True),
                   known_condition_factor=getattr(cfg, "known_condition_factor", 1.0),
                   known_by_words=getattr(cfg, "known_by_words", True),
                   known_yield_ratio=getattr(cfg, "known_yield_ratio", 0.5),
                   ruled_out_factor=getattr(cfg, "ruled_out_factor", 0.1),
                   use_against=getattr(cfg, "use_against", True),
                   against_factor=getattr(cfg, "against_factor", 0.1))


def _complications(entities: Sequence[Any], known: dict[str, str], risk_hits: dict[str, list]) -> set[str]:
    """The diseases a known condition of the patient makes likelier: those the risk-factor table raises for an
    exposure stated within the known condition's own words ("type 1 diabetes mellitus" -> diabetic ketoacidosis; not
    "intercourse with an HIV-positive partner", an exposure that only contains the words of one)."""
    words = set(known.values())
    spans = [(e.start, e.end) for e in entities if e.historical and e.text in words and e.start >= 0]
    return {d for d, found in risk_hits.items()
            if any(a <= m.start and m.end <= b for m in found for a, b in spans)}


_KNOWLEDGE_RANKINGS = ("kg", "text", "page", "sign", "site")


def keep_model_first(candidates: list[Candidate], within: int) -> list[Candidate]:
    """The candidates with the language model's first choice moved to the top when a knowledge ranking also puts it
    within rank ``within`` and no expected finding is missing (not ``demoted``); the reason joins its explanation.
    Unchanged when the model proposed nothing, its first choice leads already, or no knowledge ranking backs it."""
    i = next((j for j, c in enumerate(candidates) if c.ranks.get("model") == 1), None)
    if not i:
        return candidates
    c = candidates[i]
    backed = [(key, c.ranks[key]) for key in _KNOWLEDGE_RANKINGS if 0 < c.ranks.get(key, 0) <= within]
    if c.demoted or not backed:
        return candidates
    key, rank = min(backed, key=lambda kv: kv[1])
    why = f"kept first: the language model's first choice, and {key} ranking {rank}"
    moved = c.model_copy(update={"score": max(c.score, candidates[0].score),
                                 "explanation": f"{c.explanation}; {why}" if c.explanation else why})
    return [moved, *candidates[:i], *candidates[i + 1:]]


# A number with its unit, as written in vital signs and test results ("38.9 °C", "1200 U/L", "5.2 mg/dL",
# "18 x 10^9/L", "110/70 mm Hg", "92%"); a bare number too ("Hb 7.2"). Words around it stay.
_MEASUREMENT = re.compile(
    r"(?<![\w-])(?<!type )(?<!stage )(?<!grade )\d+(?:[.,/]\d+)*(?:\s*[x\u00d7]\s*10\s*\^?\s*\d+)?"
    r"(?:\s*/?\s*(?:%|\u00b0\s*[CF]\b|(?:mm\s*Hg|mmHg|mg|g|mmol|\u00b5mol|\u03bcmol|umol|mEq|U|IU|mU|mIU|\u00b5IU|uIU|"
    r"ng|pg|\u00b5g|ug|fL|mm3|mm|cm|kg|lbs?|L|dL|mL|min|bpm|K|cells)(?:\s*/\s*[A-Za-z\u00b5\u03bc0-9^\u00b3]+)*\b))?"
    r"(?![\w-])", re.I)


_FIRST_NUMBER = re.compile(r"(?<![A-Za-z\d])\d+(?:[.,]\d+)*")


def _vital_names(text: str) -> list[tuple[int, int]]:
    """Where the vital-sign reader (agents/mee/vitals.py) finds a named reading, the span from its name to the end of
    its first number ("blood pressure is 133", "HR 88"); the units and what follows are left to the measurement
    filter."""
    from .mee.vitals import read_vitals  # noqa: PLC0415

    spans = []
    for r in read_vitals(text):
        m = _FIRST_NUMBER.search(r.text)
        if m and m.start() > 0:                 # a bare value ("120 bpm") has no name to blank
            spans.append((r.start, r.start + m.end()))
    return spans


@dataclass(frozen=True)
class HKIConfig:
    """How HKI scores and mixes what it retrieves (the relevance of each evidence item, the text/KG fusion).
    Retrieval *amounts* (k, thresholds, sources) are per run, in :class:`RetrievalParams`."""

    chunk_scale: float = 0.85          # a chunk's relevance: chunk_scale * score/top score * (1 - rank_decay*rank)
    chunk_rank_decay: float = 0.03
    dense_mix: float = 0.5             # ... averaged with its dense cosine when it has one
    vote_rank_decay: float = 0.05      # a disease page's vote for its disease falls with the page's rank
    fusion_k: float = 3.0              # KG/text reciprocal-rank fusion: 1/(k + rank_kg) + text_weight/(k + rank_text)
    text_weight: float = 1.0           # ... + w_page/(k + rank of the disease's whole reference page), w_page per run
    page_k: int = 20                   # disease pages taken from the page ranking
    # With no finding recognised, the reference texts alone offer a differential only when the best disease page
    # matches the words this well (BM25): symptom descriptions in everyday words score 6.6-17 on the development
    # half of Symptom2Disease, off-topic questions ("What is the capital of France?", "Tell me a joke about cats")
    # 3-4, gibberish nothing.
    text_only_min_page_score: float = 5.0
    # Word search cannot read "no fever": blank the denied findings out of the presentation before the chunk and
    # page searches (the KG ranking reads them as denied findings).
    mask_denied_in_text: bool = True
    # Word search cannot read "ALT 1200 U/L" either: its numbers and unit letters ("1200", "u", "l", "5", "2") match
    # disease names such as L-2-hydroxyglutaric aciduria; the measured values are findings already (hyperbilirubinemia).
    drop_measurements_in_text: bool = True
    # ... nor a vital sign's name before its value: nearly every vignette lists them, and "blood pressure is
    # 133/87", "oxygen saturation 97%" match the hypertension and pulmonary embolism pages (the names the
    # vital-sign reader, agents/mee/vitals.py, reads; an abnormal value is a finding already; test names stay).
    drop_vital_names_in_text: bool = True
    candidate_floor: float = 0.6       # a candidate's evidence relevance: floor + (1 - floor) * score/top score
    candidate_triples: int = 3         # supporting triples cited per candidate
    concept_scale: float = 0.95        # a candidate's concept card, relative to its triples
    entity_triple_scale: float = 0.9   # triples of an entity-matched concept, relative to the match
    focus_chunk_scale: float = 0.95    # chunks of an entity-matched B/O focus, relative to the match
    candidate_page_min_score: float = 0.8   # reference pages about each candidate: focus match floor ...
    candidate_page_scale: float = 0.8       # ... and their relevance relative to the match
    candidate_pages: int = 2
    section_weights: tuple[tuple[str, float], ...] = (("symptoms", 3.0), ("exams and tests", 2.0),
                                                      ("information", 1.5), ("causes", 1.0))
    section_default: float = 0.5
    section_overlap_weight: float = 0.3


@dataclass
class HKIResult:
    evidence: list[Evidence]
    candidates: list[Candidate]
    coverage: dict[str, list[str]] = field(default_factory=dict)   # entity text -> evidence ids
    queries: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ---- evidence constructors ----------------------------------------------------------------------------------

_VARIANT_LOCK = threading.Lock()     # HKI._ranker_for: one copy of the KG ranker per pair of edge strengths


def triple_evidence(t: Any, score: float, query: str | None = None) -> Evidence:
    """Evidence from a KG triple: its template sentence; for an edge mined from a MedQuAD answer, the answer's
    sentence itself with the page's document id, character span and URL (:func:`mined_evidence`)."""
    from .knl import triple_sentence
    from .krg import relation_words

    src = getattr(t, "source", "") or ""
    extra = getattr(t, "extra", None) or {}
    if src == MINED_SOURCE and (extra.get("citation") or {}).get("sentence"):
        return mined_evidence(t, score, query)
    meta = {"relation": t.relation, "subject_name": t.subject_name, "object_name": t.object_name,
            "weight": t.weight, "frequency": t.frequency, "source": src, "category": extra.get("category")}
    source = _source_name(src)
    if src == CARDINAL_SOURCE and extra.get("reference"):
        # the curated table names the textbook it follows: the reference says so
        meta["citation"] = extra["reference"]
        source = f"{source}, after: {str(extra['reference']).rstrip('.')}"
    return Evidence(
        id=f"G:{t.id}", role="G", kind="triple", text=triple_sentence(t.subject_name, t.relation, t.object_name, meta),
        score=round(float(score), 4), query=query,
        title=f"{t.subject_name} — {relation_words(t.relation)} — {t.object_name}", source=source,
        license=getattr(t, "license", None), concept_ids=[t.subject, t.object], meta=meta)


SIGN_RELATION = "has_classic_sign"
SIGN_SOURCE = "classic-signs"


def _table_evidence(disease_id: str, disease_name: str, relation: str, item_id: str, item: str, citation: str,
                    score: float, query: str | None, what: str, table: str, source: str) -> Evidence:
    """A row of a curated table as evidence about a disease (``relation``: how the row's ``item`` bears on it), its
    sentence the relation's template, the table and its own source named in the reference."""
    from .knl import triple_sentence

    meta = {"relation": relation, "subject_name": disease_name, "object_name": item, "source": source,
            "citation": citation}
    return Evidence(
        id=f"G:{disease_id}|{relation}|{item_id}", role="G", kind="triple",
        text=triple_sentence(disease_name, relation, item, meta), score=round(float(score), 4), query=query,
        title=f"{disease_name} — {what} — {item}", source=f"{table} (curated), after: {citation.rstrip('.')}",
        license="Apache-2.0", concept_ids=[disease_id], meta=meta)


def sign_evidence(disease_id: str, disease_name: str, sign_id: str, sign: str, citation: str, score: float,
                  query: str | None = None) -> Evidence:
    """Evidence that a stated sign points to a disease, from the curated classic-sign table
    (``agents/data/classic_signs.yaml``): "A classic sign of measles: Koplik spots.", the table's source named in the
    reference."""
    return _table_evidence(disease_id, disease_name, SIGN_RELATION, sign_id, sign, citation, score, query,
                           "classic sign", "classic-sign table", SIGN_SOURCE)


RISK_RELATION = "has_risk_factor"
RISK_SOURCE = "risk-factors"


def risk_evidence(disease_id: str, disease_name: str, exposure_id: str, exposure: str, citation: str, score: float,
                  query: str | None = None) -> Evidence:
    """Evidence that a stated exposure makes a disease likelier, from the curated risk-factor table
    (``agents/data/risk_factors.yaml``): "Injection drug use makes infective endocarditis likelier.", the table's
    source named in the reference."""
    return _table_evidence(disease_id, disease_name, RISK_RELATION, exposure_id, exposure, citation, score, query,
                           "risk factor", "risk-factor table", RISK_SOURCE)


def mined_evidence(t: Any, score: float, query: str | None = None) -> Evidence:
    """A mined edge as evidence: the MedQuAD sentence that states it (``text``), tied to the page (``doc_id``,
    ``url``, ``organisation``) and to its place in the answer (``span``, characters into the answer text, as the
    reference chunks' spans), so the verifier checks claims against the sentence and KRG cites the page. The id
    stays the triple's (``G:<disease>|has_symptom|<finding>``), as the differential's explanation cites it."""
    cit = dict((getattr(t, "extra", None) or {}).get("citation") or {})
    org = cit.get("organisation") or ""
    focus = cit.get("focus") or t.subject_name
    section = cit.get("question_type") or ""
    span = tuple(cit["span"]) if cit.get("span") else None
    meta = {"relation": t.relation, "subject_name": t.subject_name, "object_name": t.object_name,
            "source": MINED_SOURCE, "mined": True, "focus": focus, "section": section,
            "surface": cit.get("surface"), "mention": list(cit["mention"]) if cit.get("mention") else None,
            "linked_by": cit.get("linked_by"), "n_sentences": cit.get("n_sentences")}
    return Evidence(
        id=f"G:{t.id}", role="G", kind="triple", text=cit.get("sentence", ""), score=round(float(score), 4),
        query=query, title=f"{focus} ({section})" if section else focus, url=cit.get("url") or None,
        organisation=org or None, license=license_of(cit.get("question_type") or ""),
        source=_mined_source(cit), doc_id=cit.get("doc_id"), span=span, concept_ids=[t.subject, t.object],
        meta=meta)


def _mined_source(citation: dict) -> str:
    """Where a mined edge's sentence comes from: a MedQuAD page ("MedQuAD/NIDDK") or a disease's NCI Thesaurus
    definition (question type "definition")."""
    org = citation.get("organisation") or ""
    if citation.get("question_type") == "definition":
        return org or NCIT_ORGANISATION
    return f"MedQuAD/{org}" if org else "MedQuAD"


def concept_evidence(c: Any, score: float, query: str | None = None) -> Evidence | None:
    """Evidence from a concept's definition, in prose (no ontology relation names, see ``knl.prose_definition``)."""
    from .knl import prose_definition

    if not getattr(c, "definition", None):
        ncit = next((d for d in getattr(c, "definitions", None) or () if d.get("text") and d.get("id")), None)
        if ncit is None:
            return None
        return Evidence(id=f"G:{c.id}#{ncit['id']}", role="G", kind="concept", text=ncit["text"],
                        score=round(score, 4), query=query, title=c.name, source=NCIT_ORGANISATION,
                        license=NCIT_LICENSE, url=ncit_url(ncit["id"]), doc_id=ncit["id"], concept_ids=[c.id],
                        meta={"category": c.category, "focus": c.name, "evidence_type": "definition"})
    srcs = getattr(c, "sources", []) or []
    return Evidence(id=f"G:{c.id}#definition", role="G", kind="concept", text=prose_definition(c.definition),
                    score=round(score, 4), query=query, title=c.name, source=_source_name(srcs[0] if srcs else "kg"),
                    license=_license_for(srcs[0] if srcs else ""), concept_ids=[c.id],
                    meta={"category": c.category, "focus": c.name})


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def chunk_evidence(hit: Any, score: float, query: str | None = None) -> Evidence:
    """Evidence from a chunk (an index SearchHit, or a chunk dict {chunk_id, text, metadata}). A knowledge-graph
    card (source G) carries a definition: its relation names are rewritten in prose."""
    from .knl import prose_definition

    md = dict(_get(hit, "metadata") or {})
    cid = _get(hit, "chunk_id") or md.get("chunk_id") or md.get("id")
    role = _get(hit, "role") or md.get("role", "B")
    start, end = md.get("start"), md.get("end")
    span = (int(start), int(end)) if start is not None and end is not None else None
    org = md.get("organisation")
    text = _get(hit, "text") or md.get("text", "")
    return Evidence(
        id=f"{role}:{cid}", role=role, kind="chunk" if role in ("B", "O") else "concept",
        text=text if role in ("B", "O") else prose_definition(text), score=round(float(score), 4), query=query,
        title=md.get("title") or md.get("focus"), url=md.get("url"), organisation=org,
        license=md.get("license"),
        source=(f"MedQuAD/{org}" if org and role in ("B", "O") else
                org if org and md.get("evidence_type") == "definition" else _source_name("kg")),
        doc_id=md.get("doc_id"), span=span,
        concept_ids=[x for x in [md.get("concept_id")] if x],
        meta={"focus": md.get("focus", ""), "section": md.get("section"), "question": md.get("question"),
              "evidence_type": md.get("evidence_type"), "focus_cui": md.get("focus_cui")})


_SOURCE_NAMES = {
    "do-disease-symptom": "Disease Ontology (disease–symptom)", "do-humando": "Disease Ontology",
    "do-facets": "Disease Ontology (facets)", "do-obo-2016": "Disease Ontology (2016 OBO)",
    "do-xrefs": "Disease Ontology (xrefs)", "do-symp": "Symptom Ontology", "hsdn": "Human Symptoms–Disease Network",
    "pharmacotherapydb": "PharmacotherapyDB", "hpo": "Human Phenotype Ontology", "kg": "ClinicalRAG knowledge graph",
    "ddxplus-conditions": "DDXPlus conditions", "ncit": "NCI Thesaurus", "mesh-thesaurus": "MeSH",
    "icd10cm": "ICD-10-CM", "mondo-doid": "Mondo", "kg-abbreviations": "clinical abbreviations (curated)",
    MINED_SOURCE: "MedQuAD (sentences read by the entity extractor)",
    CARDINAL_SOURCE: "cardinal findings of common diseases (curated)",
}
_LICENSES = {"hsdn": "CC-BY-4.0", "hpo": "HPO license", "do-obo-2016": "CC-BY-3.0", "ddxplus-conditions": "CC-BY-4.0",
             "ncit": "CC-BY-4.0", "mondo-doid": "CC-BY-4.0", "mesh-thesaurus": "NLM MeSH terms (attribution)",
             "icd10cm": "Public domain", "kg-abbreviations": "Apache-2.0", CARDINAL_SOURCE: "Apache-2.0"}


def _source_name(src: str) -> str:
    return _SOURCE_NAMES.get(src, src or "knowledge graph")


def _license_for(src: str) -> str:
    return _LICENSES.get(src, "CC0-1.0")


# ---- the agent ----------------------------------------------------------------------------------------------

class HKI:
    def __init__(self, index, kg, ranker=None, config: HKIConfig | None = None, pages=None, prior=None, sites=None,
                 signs=None, risk_factors=None, rule_outs=None, against=None):
        self.index = index
        self.kg = kg
        self.ranker = ranker
        self._variants: dict[tuple, Any] = {}   # KG rankers with other settings (ablations, tuning, own scores)
        self.config = config or HKIConfig()
        self.pages = pages               # knowledge.disease_pages.DiseasePages (None: no page ranking)
        self.prior = prior               # agents.prior.CommonnessPrior (None: fusion order only)
        self.sites = sites               # agents.sites.PainSites (None: no site ranking)
        self.signs = signs               # agents.signs.ClassicSigns (None: no sign ranking)
        self.risk_factors = risk_factors  # agents.risk_factors.RiskFactors (None: exposures not weighed)
        self.rule_outs = rule_outs       # agents.must_not_miss.MustNotMiss (None: stated rule-outs not read)
        self.against = against           # agents.against.AgainstFindings (None: findings against not read)
        self._entity_roles: set[str] | None = None

    def entity_roles(self) -> set[str]:
        """Sources whose entity-keyed index is non-empty in the built index."""
        if self._entity_roles is None:
            try:
                counts = self.index.status().get("counts", {}).get("entities", {})
                self._entity_roles = {r for r, n in counts.items() if n}
            except Exception:  # noqa: BLE001 — an index without status: assume all
                self._entity_roles = {"G", "B", "O"}
        return self._entity_roles

    def retrieve(self, extraction: Extraction | None, presentation: str, p: RetrievalParams,
                 expansions: list[str] | None = None,
                 proposals: list[ProposedDiagnosis] | None = None) -> HKIResult:
        """Evidence and the fused differential for a presentation. ``proposals``: the diseases a language model
        proposed (ranked); they join the rankings and retrieval gathers evidence for and against each."""
        pool: dict[str, Evidence] = {}
        must: list[str] = []
        coverage: dict[str, list[str]] = {}
        warnings: list[str] = []
        qterms = terms(presentation + " " + " ".join(expansions or []))
        cfg = self.config
        stale = getattr(self.index, "stale", None)
        if callable(stale) and (reason := stale()):
            warnings.append(reason)

        def add(ev: Evidence | None, must_keep: bool = False) -> str | None:
            if ev is None:
                return None
            old = pool.get(ev.id)
            if old is None or ev.score > old.score:
                pool[ev.id] = ev
            if must_keep and ev.id not in must:
                must.append(ev.id)
            return ev.id

        positives: list[Entity] = extraction.positive() if (extraction and p.use_entities) else []

        # 1. entity-keyed retrieval per source (Eq. 2, 3)
        keys = [e.concept_name or e.text for e in positives]
        if keys:
            src = tuple(s for s in p.sources if s in self.entity_roles())
            results = self.index.entity_search_many(keys, k=p.top_k, sources=src, min_score=p.min_entity_score)
            for ent, res in zip(positives, results):
                ids: list[str] = []
                for role, hits in res.items():
                    for h in hits:
                        if role == "G":
                            ids += self._g_hit(h, ent, add, mined=p.use_mined_edges)
                        else:
                            ids += self._bo_hit(h, ent, qterms, p, add)
                coverage[ent.text] = [i for i in ids if i]
        # 2. chunk-level hybrid search with the whole presentation (+ corrective expansions), per source so each
        #    source contributes its own top-k (Eq. 3), and disease mentions in the hits for candidate fusion
        text_query = self._text_query(presentation, extraction)
        queries = [text_query] + list(expansions or [])
        text_votes: dict[str, tuple[float, str]] = {}   # disease id -> (best relevance, evidence id)
        if p.chunk_k > 0:
            for qi, q in enumerate(queries):
                for role in p.sources:
                    hits = self.index.search(q, k=p.chunk_k, sources=[role], mode="hybrid")
                    if not hits:
                        continue
                    top = max(h.score for h in hits) or 1.0
                    for rank, h in enumerate(hits):
                        rel = cfg.chunk_scale * (h.score / top) * (1.0 - cfg.chunk_rank_decay * rank)
                        if h.dense_score is not None:
                            rel = max(rel * (1 - cfg.dense_mix) + cfg.dense_mix * float(h.dense_score), 0.0)
                        if rel < p.min_chunk_score:
                            continue
                        ev = chunk_evidence(h, rel, query="presentation" if qi == 0 else f"expansion:{q[:60]}")
                        if qi == 0 and role in ("B", "O"):
                            did = self._disease_of(ev.meta.get("focus") or "")
                            if did:
                                ev.concept_ids.append(did)
                                if rel > text_votes.get(did, (0.0, ""))[0]:
                                    text_votes[did] = (rel * (1.0 - cfg.vote_rank_decay * rank), ev.id)
                        add(ev)
        # 3. KG differential ranking with explanation triples, fused with the diseases the reference texts
        #    retrieved for the whole presentation are about (score = KG score / top KG score + beta * text score)
        candidates: list[Candidate] = []
        proposals = list(proposals or [])
        explained: dict[str, Candidate] = {}   # KG explanations of proposed diseases outside the KG's top k
        use_prior = p.use_prior and p.prior_weight > 0
        if use_prior and self.prior is None:
            warnings.append("commonness prior unavailable: the differential is in fusion order")
        # with the prior, a wider pool is fused for it to re-rank (the kept number is unchanged)
        wide = replace(p, differential_k=max(p.differential_k, p.prior_pool // 2)) if use_prior and self.prior else p
        ranker = self._ranker_for(p.mined_strength if p.use_mined_edges else 0.0,
                                  p.cardinal_strength if p.use_cardinal else 0.0,
                                  None if p.use_opposites else 0.0, p.drop_broader, p.source_agreement,
                                  p.degree_as_plain, p.related_discount)
        use_sites = self.sites is not None and p.use_sites and p.site_weight > 0 and "G" in p.sources
        site_pool = [h.concept_id for h in self.sites.rank(extraction, k=10 ** 6)] if use_sites else []
        regions = extraction.regions if extraction else []      # where the patient has been (travel, origin)
        course = extraction.course if extraction else None      # how long the complaints have lasted
        use_signs = self.signs is not None and p.use_signs and p.sign_weight > 0 and "G" in p.sources
        sign_hits = self.signs.rank(presentation) if use_signs else []
        # the exposure table: the stated exposures raise what they make likelier (a boost above 1), and a disease that
        # needs an exposure none of them gives moves down (whatever the boost)
        use_table = self.risk_factors is not None and p.use_risk_factors and "G" in p.sources
        use_risk = use_table and p.risk_factor_boost > 1.0
        exposed = self.risk_factors.diseases(presentation) if use_table else {}
        if use_table and p.others_as_exposures and extraction is not None:
            for did, found in self.risk_factors.of_others(extraction.entities, presentation).items():
                have = exposed.setdefault(did, [])
                # one fact counted once: "his coworker was treated for tuberculosis" is also the table's contact
                have.extend(m for m in found if not any(m.start < h.end and h.start < m.end for h in have))
        risk_hits = exposed if use_risk else {}
        # the patient's known conditions (and their broader terms): the age, sex, place and time fit leave them alone
        known = known_conditions(extraction.entities, self.kg, presentation) \
            if extraction is not None and self.kg is not None else {}
        exempt = set(known_or_broader(known, self.kg)) if known else set()
        fit: dict[str, float] = {}
        findings_used: tuple[list, list] | None = None     # the findings the KG ranking ranked with (and denied)
        if ranker is not None and "G" in p.sources and positives:
            # past-history entities are context (retrieved above), not findings of the present illness
            findings, negs = ranking_findings(extraction)
            findings_used = (findings, negs)
            k_kg = max(10, wide.differential_k * 2)
            ranked = ranker.rank(findings, negs, k=k_kg, age=extraction.age_years if extraction else None,
                                      sex=extraction.sex if extraction else None,
                                      also=[x.concept_id for x in proposals if x.concept_id] + site_pool
                                      + [h.concept_id for h in sign_hits] + list(risk_hits),
                                 regions=regions, course=course, known=exempt)
            # a disease a stated exposure makes likelier joins the candidates when it explains a finding (the
            # exposure never proposes a disease alone)
            candidates = ranked[:k_kg] + [c for c in ranked[k_kg:] if c.concept_id in risk_hits]
            explained = {c.concept_id: c for c in ranked[k_kg:] if c.concept_id not in risk_hits}
            fit = {c.concept_id: c.score for c in ranked}
        # the diseases of the organs under a localised pain, those that explain the other findings first
        if site_pool:
            age, sex = (extraction.age_years, extraction.sex) if extraction else (None, None)
            rcfg = getattr(self.ranker, "config", None)
            site_hits = self.sites.rank(extraction, k=p.site_k, fit=fit, suits=lambda d: self._fit(
                d, getattr(self.kg.concept(d), "name", ""), age, sex, rcfg, regions, course, exempt))
        else:
            site_hits = []
        page_rank: dict[str, int] = {}
        page_top = 0.0
        page_weight = p.page_weight
        if self.pages is not None and p.use_pages and page_weight > 0 and {"B", "O"} & set(p.sources):
            page_hits = self.pages.rank(text_query, k=self.config.page_k)
            page_rank = {h["concept_id"]: h["rank"] for h in page_hits}
            page_top = page_hits[0]["score"] if page_hits else 0.0
        text_only = (not positives and p.use_entities and not proposals
                     and page_top >= cfg.text_only_min_page_score)
        if text_only:
            # nothing recognised as a finding, but the reference pages match the words well: the texts' diseases
            # are offered, and said to be text-only (the grader escalates the answer)
            warnings.append("no clinical finding was recognised: the differential comes from the reference texts "
                            "alone")
        # the patient's known conditions: their names in the presentation find their pages, which says nothing of the
        # present illness (RetrievalParams.known_by_words)
        words_blind = known_or_broader(known, self.kg) if known and not p.known_by_words else {}
        complications = _complications(extraction.entities, known, risk_hits) if known and p.known_yield_ratio > 0 \
            else set()
        if positives or not p.use_entities or proposals or text_only:
            candidates = self._fuse(candidates, text_votes, wide, age=extraction.age_years if extraction else None,
                                    sex=extraction.sex if extraction else None, page_rank=page_rank,
                                    page_weight=page_weight, proposals=proposals, explained=explained,
                                    site_hits=site_hits, sign_hits=sign_hits, regions=regions, course=course,
                                    risk_hits=risk_hits, words_blind=words_blind, exempt=exempt)
        # what each candidate found by text alone explains of the findings: the confidence compares it, and the
        # prior's evidence features read it
        if candidates and extraction is not None and hasattr(ranker, "explained"):
            candidates = self._explain_text_found(candidates, extraction, ranker)
        # a broader term with nothing of its own goes into a kind of it in the pool, before the pool is cut, so the
        # next disease takes its place
        own: dict[str, float] | None = None    # every disease's own KG score (no parent taking over a subtype's)
        if p.fold_empty_broader and p.relatives_depth > 0 and candidates and ranker is not None and findings_used \
                and has_subtype_pair(candidates, self.kg, p.relatives_depth, either_way=True):
            own = self._own_scores(ranker, findings_used, extraction, regions, course, exempt)
            candidates = fold_empty_broader(candidates, self.kg, own, p.relatives_depth)
        if wide is not p and candidates:
            n_keep = max(10, p.differential_k * 2)
            rescored = self.prior.rescore(candidates, p.prior_weight, monotone=p.prior_monotone)
            # a proposed disease is never silently lost: it stays in the list the generator sees; nor is a
            # complication of a known condition, which may yet take the known condition's place (demote_known)
            candidates = rescored[:n_keep] + [c for c in rescored[n_keep:]
                                              if "model" in c.origins or c.concept_id in complications]
        if p.use_subtypes and p.subtype_ratio > 0 and ranker is not None and findings_used and \
                has_subtype_pair(candidates, self.kg):
            if own is None:
                own = self._own_scores(ranker, findings_used, extraction, regions, course, exempt)
            candidates = name_subtypes_first(candidates, self.kg, own, p.subtype_ratio, p.subtype_standout)
        if candidates and extraction is not None:
            candidates = demote_known(candidates, known, self.kg, p.known_condition_factor,
                                      fit=fit, complications=complications, yield_ratio=p.known_yield_ratio)
        if candidates and self.against is not None and p.use_against:   # what the patient has that it does not explain
            candidates = self.against.demote(candidates, extraction, presentation, p.against_factor)
        if candidates and use_table:    # ... and a disease seldom seen without an exposure the history does not state
            candidates = self.risk_factors.demote_unexposed(candidates, exposed, p.unexposed_factor, regions)
        if candidates and self.rule_outs is not None:   # a stated result that excludes a diagnosis moves it down
            candidates = self.rule_outs.demote(candidates, presentation, p.ruled_out_factor)
        if candidates and extraction is not None and self.kg is not None:   # ... and so does a denied finding that
            candidates = demote_denied(candidates, extraction.entities, self.kg, p.ruled_out_factor)   # is the disease
        if p.model_first_support > 0 and candidates:
            candidates = keep_model_first(candidates, p.model_first_support)
        if p.relatives_depth > 0 and candidates:
            candidates = mark_relatives(candidates, self.kg, p.relatives_depth, fold=p.fold_relatives)
        sign_of = {h.concept_id: h for h in sign_hits}
        if candidates:
            top = candidates[0].score or 1.0
            for rank, c in enumerate(candidates):
                rel = cfg.candidate_floor + (1 - cfg.candidate_floor) * (c.score / top if top else 0)
                keep = rank < p.differential_k
                if c.concept_id in text_votes and keep:
                    must.append(text_votes[c.concept_id][1])
                if "G" not in p.sources:
                    continue
                for tid in c.supporting[: cfg.candidate_triples]:
                    t = self._triple(tid)
                    if t is not None:
                        add(triple_evidence(t, rel, query=c.name), must_keep=keep)
                if "model" in c.origins:   # a proposed disease is tested: what it expects that the patient lacks
                    for tid in c.contradicting[:2]:
                        t = self._triple(tid)
                        if t is not None:
                            ev = triple_evidence(t, rel * 0.9, query=f"against:{c.name}")
                            ev.meta["against"] = True
                            add(ev, must_keep=keep)
                concept = self.kg.concept(c.concept_id)
                hit = sign_of.get(c.concept_id)
                if hit is not None and "sign" in c.ranks:   # the stated signs that name it, from the curated table
                    for sid, sign, cit in zip(hit.ids, hit.signs, hit.citations):
                        add(sign_evidence(c.concept_id, c.name, sid, sign, cit, rel, query=c.name), must_keep=keep)
                # the stated exposures that made it likelier (those the fusion weighed: its supporting triples)
                weighed = {t.split("|")[-1] for t in c.supporting if f"|{RISK_RELATION}|" in t}
                for m in [m for m in risk_hits.get(c.concept_id, ()) if m.spec.id in weighed][:2]:
                    add(risk_evidence(c.concept_id, c.name, m.spec.id, m.spec.exposure, m.spec.citation, rel,
                                      query=c.name), must_keep=keep)
                if concept is not None:
                    add(concept_evidence(concept, rel * cfg.concept_scale, query=c.name), must_keep=keep)
            self._candidate_chunks(candidates[: p.differential_k], qterms, p, add)
        # 4. dynamic integration: the differential's explanation first, then a share for every source, then the
        #    rest by relevance
        ordered = sorted(pool.values(), key=lambda e: -e.score)
        chosen: list[Evidence] = []
        seen: set[str] = set()

        def take(ev: Evidence) -> None:
            if ev.id not in seen and len(chosen) < p.max_evidence:
                chosen.append(ev)
                seen.add(ev.id)

        for i in must:
            if i in pool:
                take(pool[i])
        share = max(2, p.max_evidence // (2 * max(1, len(p.sources))))
        for role in p.sources:
            for ev in [e for e in ordered if e.role == role][:share]:
                take(ev)
        for ev in ordered:
            take(ev)
        chosen.sort(key=lambda e: -e.score)
        kept = {e.id for e in chosen}
        coverage = {k: [i for i in v if i in kept] for k, v in coverage.items()}
        return HKIResult(evidence=chosen, candidates=candidates, coverage=coverage, queries=queries,
                         warnings=warnings)

    # ---- helpers -------------------------------------------------------------------------------------------
    def _text_query(self, presentation: str, extraction: Extraction | None) -> str:
        """The presentation as the word searches see it: with ``mask_denied_in_text``, the denied findings'
        words blanked out ("No fever, no loin pain" must not find fever pages); with ``drop_vital_names_in_text``, the
        names of the vital signs a value follows; with ``drop_measurements_in_text``,
        the measured values and their units too (offsets kept)."""
        from .mee.findings import mask  # noqa: PLC0415

        text = presentation
        if self.config.mask_denied_in_text and extraction is not None:
            # (a normal value's denials are no words of a denial: its reading is left to the two steps below)
            spans = [(e.start, e.end) for e in extraction.negated()
                     if e.start is not None and e.start >= 0 and not e.measured]
            if spans:
                text = mask(text, spans)
        if self.config.drop_vital_names_in_text:
            if spans := _vital_names(text):
                text = mask(text, spans)
        if self.config.drop_measurements_in_text:
            text = _MEASUREMENT.sub(lambda m: " " * len(m.group(0)), text)
        return text

    def _fit_facts(self, did: str, regions: Sequence[str] = (), course: str | None = None) -> dict[str, Any]:
        """The keyword arguments of :func:`demographic_factor` for a KG disease and this patient: HPO's ages of onset
        (empty when none is annotated), its curated typical ages (``(min, max)`` years from the cardinal-findings
        table, None when none is written), the regions it is acquired in (the endemic-regions table; empty:
        anywhere) and its typical course (the cardinal-findings table; None: either), beside the patient's
        ``regions`` and the illness's ``course``."""
        graph = getattr(self.kg, "graph", None)
        attrs = graph.nodes[did] if graph is not None and did in graph else {}
        ages = attrs.get("typical_age")
        return {"onset": tuple(attrs.get("onset") or ()), "typical_age": tuple(ages) if ages else None,
                "endemic": tuple(attrs.get("endemic_regions") or ()), "regions": regions,
                "typical_course": attrs.get("typical_course"), "course": course}

    def _fit(self, did: str, name: str, age: float | None, sex: str | None, rcfg: Any, regions: Sequence[str],
             course: str | None, known: Collection[str] = ()) -> float:
        """:func:`demographic_factor` of a KG disease for this patient; 1 for a condition the patient is known to
        have (``known``): a 39-year-old's stated COPD is hers whatever her age."""
        if did in known:
            return 1.0
        return demographic_factor(name, age, sex, rcfg, **self._fit_facts(did, regions, course))

    def _disease_of(self, focus: str) -> str | None:
        """The KG disease a reference document is about (its focus), if the name resolves."""
        if not focus:
            return None
        cache = self.__dict__.setdefault("_focus_cache", {})
        if focus not in cache:
            hits = self.kg.lookup(focus, categories=["disease"])
            cache[focus] = hits[0].id if hits else None
        return cache[focus]

    def _fuse(self, candidates: list[Candidate], votes: dict[str, tuple[float, str]],
              p: RetrievalParams, age: float | None = None, sex: str | None = None,
              page_rank: dict[str, int] | None = None, page_weight: float = 1.0,
              proposals: list[ProposedDiagnosis] | None = None,
              explained: dict[str, Candidate] | None = None, site_hits: list | None = None,
              sign_hits: list | None = None, regions: Sequence[str] = (),
              course: str | None = None, risk_hits: dict | None = None,
              words_blind: dict[str, str] | None = None, exempt: Collection[str] = ()) -> list[Candidate]:
        """Reciprocal-rank fusion of up to six rankings of diseases: the KG ranking, the diseases whose reference
        chunks the whole-presentation search retrieved, the diseases whose whole reference page (all answers about
        them) matches the presentation best (BM25), the diseases of the organs under a localised pain
        (:mod:`agents.sites`), the diseases classic signs point to (:mod:`agents.signs`), and the language model's
        proposal when there is one: score = 1/(k + rank_kg) + w_kg * score_kg / best_kg + w_text/(k + rank_text)
        + w_page/(k + rank_page) + w_site/(k + rank_site) + w_sign/(k + rank_sign) + w_model/(k + rank_model).
        The KG ranking alone also gives its score relative to its best (``p.kg_score_weight``): a rank hides how far
        ahead the KG puts a disease, and without it a distant KG second that a word search also names passed a
        KG first far ahead of it (0.15 chosen on the dev halves among 0.05, 0.1, 0.15 and 0.3, docs/results.md).
        A disease the rankings agree on rises; one found only by text or only by the model can enter. A disease a
        stated exposure makes likelier (``risk_hits``: disease id -> the exposures' mentions) has its fused score
        multiplied by ``p.risk_factor_boost`` to the power of the exposures' weights (at most 2). A proposed
        disease that expects findings the patient does not have is demoted (the reason is kept). A known condition
        of the patient (``words_blind``: :func:`subtypes.known_or_broader`) gets no part from the chunk and page
        rankings: the presentation names it."""
        page_rank = page_rank or {}
        site_rank = {h.concept_id: h.rank for h in site_hits or []}
        site_why = {h.concept_id: f"it is located in the {h.organ_name}, under the {h.region} pain ({h.finding})"
                    for h in site_hits or []}
        site_triple = {h.concept_id: f"{h.concept_id}|located_in|{h.organ}" for h in site_hits or []}
        sign_rank = {h.concept_id: h.rank for h in sign_hits or []}
        sign_ids = {h.concept_id: [f"{h.concept_id}|{SIGN_RELATION}|{i}" for i in h.ids] for h in sign_hits or []}
        sign_why = {h.concept_id: "the presentation states " + ", ".join(
            f"{w} ({s})" if normalise(w) != normalise(s) else s for s, w in zip(h.signs, h.words))
            + (", its classic sign" if len(h.signs) == 1 else ", its classic signs") for h in sign_hits or []}
        proposals = proposals or []
        explained = explained or {}
        cfg = self.config
        k = cfg.fusion_k
        text_rank = {d: i + 1 for i, (d, _) in enumerate(sorted(votes.items(), key=lambda kv: -kv[1][0]))}
        kg_rank = {c.concept_id: i + 1 for i, c in enumerate(candidates)}
        kg_best = max((c.score for c in candidates), default=0.0)
        kg_share = {c.concept_id: c.score / kg_best for c in candidates} if kg_best > 0 else {}
        model_rank: dict[str, int] = {}      # the model's own answer
        alt_rank: dict[str, int] = {}        # its widening call's alternatives (weighed apart, never "its first")
        model_of: dict[str, ProposedDiagnosis] = {}
        for x in proposals:
            did = x.concept_id or f"model:{x.name.lower()}"
            if did not in model_of:
                (alt_rank if x.alternative else model_rank)[did], model_of[did] = x.rank, x
        risk_hits = risk_hits or {}
        raised: set[str] = set()             # the candidates an exposure made likelier (their exposures are cited)

        def risk(did: str) -> tuple[float, list[str]]:
            """(factor, reason) of the stated exposures that make ``did`` likelier."""
            found = risk_hits.get(did) or []
            if not found:
                return 1.0, []
            raised.add(did)
            words = "; ".join(f'"{m.text}" ({m.spec.exposure})' for m in found[:2])
            weight = min(2.0, sum(m.spec.weight for m in found))
            return p.risk_factor_boost ** weight, [f"the patient's history makes it likelier: {words}"]

        if not votes and not page_rank and not model_of and not site_rank and not sign_rank and not risk_hits:
            return [c.model_copy(update={"origins": ["kg"], "ranks": {"kg": i + 1}, "knowledge_score": c.score})
                    for i, c in enumerate(candidates)]

        def parts(did: str) -> tuple[float, list[str], list[str], dict[str, int]]:
            """(fused score, reasons, origins, ranks) of a disease; ``knowledge[did]``: the score without the
            model's part."""
            score, why, origins, ranks = 0.0, [], [], {}
            blind = bool(words_blind) and is_known(did, words_blind, self.kg) is not None
            for key, rank, w, text in (
                    ("kg", kg_rank.get(did), 1.0, None),
                    ("text", text_rank.get(did), cfg.text_weight, "its reference chunks rank {r} in the text search"),
                    ("page", page_rank.get(did), page_weight,
                     "its reference page ranks {r} for the whole presentation"),
                    ("site", site_rank.get(did), p.site_weight, site_why.get(did, "")),
                    ("sign", sign_rank.get(did), p.sign_weight, sign_why.get(did, "")),
                    ("model", model_rank.get(did), p.model_weight, "the language model proposed it at rank {r}"),
                    ("alt", alt_rank.get(did), p.alternative_weight,
                     "the language model named it as an alternative at rank {r}")):
                if not rank or (blind and key in ("text", "page")):
                    continue
                ranks[key] = rank
                origins.append("model" if key == "alt" else key)   # who put it forward: the model, either call
                score += w / (k + rank)
                if key == "kg":
                    score += p.kg_score_weight * kg_share.get(did, 0.0)
                if key not in ("model", "alt"):
                    knowledge[did] = score
                if text:
                    why.append(text if key in ("site", "sign") else text.format(r=rank))
            return score, why, origins, ranks

        knowledge: dict[str, float] = {}

        def extra(did: str, ranks: dict[str, int], supporting: list[str] | None = None) -> dict:
            x = model_of.get(did)
            out = {"knowledge_score": round(knowledge.get(did, 0.0), 4), "model_reason": x.reason if x else ""}
            signs = [t for t in sign_ids.get(did, ()) if t not in (supporting or [])]
            site = [t for t in (site_triple.get(did),) if t and t not in (supporting or [])]
            risks = [f"{did}|{RISK_RELATION}|{m.spec.id}" for m in risk_hits.get(did, ())[:2]] if did in raised else []
            if signs or site or risks:   # the signs that name it (first: the most specific reason), the exposures
                # that make it likelier and where it is (its located_in edge), citable
                out["supporting"] = [*signs, *risks, *(supporting or []), *site]
            return out

        fused: list[Candidate] = []
        rcfg = getattr(self.ranker, "config", None)
        for c in candidates:
            score, why, origins, ranks = parts(c.concept_id)
            # the KG ranking's own score carries the age/sex penalty, its rank does not: the fused score does
            score *= self._fit(c.concept_id, c.name, age, sex, rcfg, regions, course, exempt)
            boost, because = risk(c.concept_id)
            score, why = score * boost, why + because
            fused.append(c.model_copy(update={"score": round(score, 4), "origins": origins, "ranks": ranks,
                                              "explanation": c.explanation + (f"; {'; '.join(why)}" if why else ""),
                                              **extra(c.concept_id, ranks, c.supporting)}))
        for did in dict.fromkeys([*model_of, *text_rank, *page_rank, *site_rank, *sign_rank]):
            if did in kg_rank:
                continue
            score, why, origins, ranks = parts(did)
            if did.startswith("model:"):
                x = model_of[did]
                fused.append(Candidate(concept_id=did, name=x.name, score=round(score, 4), origins=origins,
                                       ranks=ranks, explanation="; ".join(why) + "; not in the knowledge graph",
                                       **extra(did, ranks)))
                continue
            concept = self.kg.concept(did)
            if concept is None:
                continue
            # a disease found only by text gets the ranker's demographic penalty too (a "prostate" page must not
            # enter a woman's differential on word overlap alone)
            factor = self._fit(did, concept.name, age, sex, rcfg, regions, course, exempt)
            known = explained.get(did)
            if known is not None or not p.risk_needs_match:
                boost, because = risk(did)
                factor, why = factor * boost, why + because
            if known is not None:   # a proposed disease the KG explains only weakly: keep its explanation
                fused.append(known.model_copy(update={
                    "score": round(factor * score, 4), "origins": origins, "ranks": ranks,
                    "explanation": known.explanation + f"; {'; '.join(why)}", **extra(did, ranks, known.supporting)}))
            else:
                factor *= p.unmatched_factor   # word overlap alone: half as often the diagnosis (dev halves)
                fused.append(Candidate(concept_id=did, name=concept.name, score=round(factor * score, 4),
                                       origins=origins, ranks=ranks,
                                       explanation=f"{'; '.join(why)}; no knowledge-graph finding matched",
                                       **extra(did, ranks)))
        if p.contradiction_penalty > 0:
            names = self.kg.concept
            for i, c in enumerate(fused):
                if "model" in c.origins and c.contradicted:
                    absent = [getattr(names(g), "name", g) for g in c.contradicted]
                    fused[i] = c.model_copy(update={
                        "score": round(c.score * (1 - p.contradiction_penalty) ** len(absent), 4),
                        "demoted": f"expects {', '.join(absent)}, which the patient does not have"})
        fused.sort(key=lambda c: -c.score)
        n = max(10, p.differential_k * 2)
        keep = fused[:n]
        # every proposed disease stays in the list the generator sees (a model candidate is never silently lost)
        keep += [c for c in fused[n:] if "model" in c.origins]
        return keep

    def _ranker_for(self, mined_strength: float | None, cardinal_strength: float | None = None,
                    opposite_mu: float | None = None, drop_broader: bool | None = None,
                    source_agreement: float | None = None, degree_as_plain: bool | None = None,
                    related_discount: float | None = None):
        """The KG ranker, or a copy weighting the mined MedQuAD edges ``mined_strength``, the curated cardinal
        findings ``cardinal_strength`` and opposite findings ``opposite_mu``, combining several sources of one finding
        with ``source_agreement`` (None: the ranker's own; 0 for the first three: left out,
        the ``no-mined``, ``no-cardinal`` and ``no-opposites`` ablations), or leaving out the findings broader than
        another present one (``drop_broader``), matching a graded finding as its plain term (``degree_as_plain``) or
        matching a related finding at ``related_discount`` (None for these: the ranker's own); copies are built once
        per combination and kept (they share the ranker's index)."""
        base = self.ranker
        if base is None or not hasattr(base, "config"):
            return base
        changes = {name: round(float(v), 6) for name, v in
                   (("mined_strength", mined_strength), ("cardinal_strength", cardinal_strength),
                    ("opposite_mu", opposite_mu), ("source_agreement", source_agreement),
                    ("related_discount", related_discount))
                   if v is not None and abs(getattr(base.config, name, v) - v) >= 1e-12}
        if drop_broader is not None and drop_broader != getattr(base.config, "drop_broader", drop_broader):
            changes["drop_broader"] = bool(drop_broader)
        if degree_as_plain is not None and degree_as_plain != getattr(base.config, "degree_as_plain", degree_as_plain):
            changes["degree_as_plain"] = bool(degree_as_plain)
        return self._variant(base, changes)

    def _variant(self, base: Any, changes: dict[str, Any]) -> Any:
        """``base`` (a KG ranker), or its copy with the config ``changes``, built once per (config, changes) and kept
        (copies share the ranker's index)."""
        if not changes:
            return base
        key = (base.config, tuple(sorted(changes.items())))   # RankerConfig is frozen, so hashable
        with _VARIANT_LOCK:
            if key not in self._variants:
                self._variants[key] = type(base)(self.kg, replace(base.config, **changes))
            return self._variants[key]

    def _own_scores(self, ranker: Any, findings_used: tuple[list, list], extraction: Extraction | None,
                    regions: Sequence[str], course: str | None, known: Collection[str] = ()) -> dict[str, float]:
        """Every disease's KG ranking score from its own edges alone: the ranking again with no parent taking over
        a subtype's findings (a copy of ``ranker`` sharing its index, built once); ``known`` as in the ranking."""
        if getattr(ranker, "config", None) is None or not hasattr(ranker, "scores"):
            return {}
        own = self._variant(ranker, {"propagate_discount": 0.0})
        findings, negs = findings_used
        return own.scores(findings, negs, age=extraction.age_years if extraction else None,
                          sex=extraction.sex if extraction else None, regions=regions, course=course, known=known)

    def _explain_text_found(self, candidates: list[Candidate], extraction: Extraction,
                            ranker: Any = None) -> list[Candidate]:
        """Candidates found by text alone get, as ``matched``, the findings the knowledge graph links them to (the
        ranking's own edges), so what each candidate explains can be compared (agents/confidence.py)."""
        findings, _ = ranking_findings(extraction)
        out = []
        for c in candidates:
            if not c.matched and "kg" not in c.ranks and findings:
                got = (ranker or self.ranker).explained(c.concept_id, findings)
                if got:
                    c = c.model_copy(update={"matched": got, "explanation": c.explanation
                                             + f"; the knowledge graph links it to {len(got)} of the findings"})
            out.append(c)
        return out

    def _triple(self, tid: str):
        try:
            s, rel, o = tid.split("|")
        except ValueError:
            return None
        for t in self.kg.neighbors(s, relation=rel, direction="out"):
            if t.object == o:
                return t
        return None

    def _g_hit(self, h, ent: Entity, add, mined: bool = True) -> list[str]:
        ids = []
        cid = getattr(h, "concept_id", None)
        concept = self.kg.concept(cid) if cid else None
        if concept is None:
            return ids
        ids.append(add(concept_evidence(concept, h.score, query=ent.text)))
        if concept.category in ("disease", "drug"):
            triples = [t for t in (h.knowledge or []) if t.relation in ("has_symptom", "has_phenotype", "treated_by",
                                                                        "is_a", "located_in")
                       and (mined or getattr(t, "source", None) != MINED_SOURCE)]
            triples.sort(key=lambda t: -((t.frequency or 0) + (t.weight or 0) / 50.0))
            for t in triples[:6]:
                ids.append(add(triple_evidence(t, h.score * self.config.entity_triple_scale, query=ent.text)))
        # a finding: the diseases that explain it come from the ranker
        return [i for i in ids if i]

    def _bo_hit(self, h, ent: Entity, qterms: set[str], p: RetrievalParams, add) -> list[str]:
        chunks = list(h.knowledge or [])
        chunks.sort(key=lambda c: -_section_score(c, qterms, self.config))
        ids = []
        for c in chunks[: p.chunks_per_focus]:
            ids.append(add(chunk_evidence(c, h.score * self.config.focus_chunk_scale, query=ent.text)))
        return [i for i in ids if i]

    def _candidate_chunks(self, cands: list[Candidate], qterms: set[str], p: RetrievalParams, add) -> None:
        """Reference passages about each top candidate (one batched entity look-up for all of them)."""
        roles = tuple(r for r in ("B", "O") if r in p.sources and r in self.entity_roles())
        if not roles or not cands:
            return
        cfg = self.config
        results = self.index.entity_search_many([c.name for c in cands], k=1, sources=roles,
                                                min_score=cfg.candidate_page_min_score)
        for c, res in zip(cands, results):
            for role, hits in res.items():
                for h in hits[:1]:
                    chunks = sorted(h.knowledge or [], key=lambda ch: -_section_score(ch, qterms, cfg))
                    for ch in chunks[: cfg.candidate_pages]:
                        ev = chunk_evidence(ch, h.score * cfg.candidate_page_scale, query=c.name)
                        ev.concept_ids.append(c.concept_id)
                        add(ev)


def _section_score(chunk, qterms: set[str], cfg: HKIConfig) -> float:
    md = _get(chunk, "metadata") or {}
    sec = (md.get("section") or "").lower()
    base = dict(cfg.section_weights).get(sec, cfg.section_default)
    overlap = len(terms(_get(chunk, "text") or md.get("text", "")) & qterms)
    return base + cfg.section_overlap_weight * overlap

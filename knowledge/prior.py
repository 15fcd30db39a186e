"""Commonness features of the knowledge graph's diseases, from open data the project already holds.

How often a disease is met in practice is not in any of our sources as a number, but several of them say it
indirectly, and a differential that ignores them ranks Q fever above influenza. Per disease (taken together with its
cross-referenced equivalents, ``KnowledgeGraph.equivalents``):

- which MedQuAD collections have pages about it (a document's focus resolved to a KG disease as the disease pages
  do, :mod:`knowledge.disease_pages`; a consumer page's title that names no disease as written is also read for
  the diseases it names beside another or under an alias, :func:`knowledge.focus.resolve_focus`: "Diverticulosis
  and Diverticulitis"): consumer health pages (MedlinePlus, CDC, NIHSeniorHealth), NIH institute fact sheets
  (NIDDK, NHLBI, NINDS, CancerGov), or only the rare and genetic disease collections (GARD, GHR);
- how many drugs are indicated for it (``treated_by`` edges, PharmacotherapyDB);
- the size of its literature symptom profile (HSDN ``has_symptom`` edges, mined from PubMed co-occurrence);
- whether it has an ICD-10-CM code, and the code's chapter;
- Disease Ontology subsets of the 2016 OBO release (``DO_rare_slim``; zoonotic and tick-borne infections);
- whether it is known only from HPO's rare-disease annotations (an Orphanet/OMIM/DECIPHER concept with no DO
  equivalent), whether the rare-disease registry Orphanet or the Mendelian catalogue OMIM lists it (GARD is not
  used as a rarity mark: Mondo gives GARD ids to common diseases such as asthma too);
- how many KG sources describe it and how many names it has.

These are *features*, not weights: ``agents/prior.py`` holds the weights fitted on the benchmark development halves
(``benchmarks/fit_prior.py``). The table is computed in a few seconds (reading the MedQuAD tarball dominates) and
cached under the data home's build folder per (KG version, MedQuAD release, DO 2016 release, format).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PRIOR_FORMAT = 4          # bump when the facts change (it keys the cache)

CONSUMER_ORGS = ("MPlusHealthTopics", "CDC", "NIHSeniorHealth")          # MedQuAD role O: consumer web pages
INSTITUTE_ORGS = ("NIDDK", "NHLBI", "NINDS", "CancerGov")                # NIH institutes' fact sheets
RARE_ORGS = ("GARD", "GHR")                                              # rare and genetic disease references
RARE_SUBSETS = ("DO_rare_slim",)
EXPOSURE_SUBSETS = ("zoonotic_infectious_disease", "tick-borne_infectious_disease")
HPO_ONLY_SOURCES = frozenset({"hpo"})

# ICD-10-CM chapters: (number, first code, last code, short title); a code belongs to the chapter whose range holds
# its first three characters
ICD10CM_CHAPTERS: tuple[tuple[int, str, str, str], ...] = (
    (1, "A00", "B99", "infectious and parasitic diseases"), (2, "C00", "D49", "neoplasms"),
    (3, "D50", "D89", "blood and immune disorders"), (4, "E00", "E89", "endocrine, nutritional and metabolic"),
    (5, "F01", "F99", "mental and behavioural"), (6, "G00", "G99", "nervous system"), (7, "H00", "H59", "eye"),
    (8, "H60", "H95", "ear"), (9, "I00", "I99", "circulatory system"), (10, "J00", "J99", "respiratory system"),
    (11, "K00", "K95", "digestive system"), (12, "L00", "L99", "skin"), (13, "M00", "M99", "musculoskeletal"),
    (14, "N00", "N99", "genitourinary system"), (15, "O00", "O9A", "pregnancy and childbirth"),
    (16, "P00", "P96", "perinatal conditions"), (17, "Q00", "Q99", "congenital anomalies"),
    (18, "R00", "R99", "symptoms and signs"), (19, "S00", "T88", "injury and poisoning"),
    (20, "V00", "Y99", "external causes"), (21, "Z00", "Z99", "health status factors"),
    (22, "U00", "U85", "special purposes"),
)
_ICD_CODE = re.compile(r"^([A-Z])(\d)([0-9A-Z])")

# The feature vector, in order. Binary features are 0/1; counts enter as log(1 + n).
FEATURES: tuple[str, ...] = (
    "consumer_page", "institute_page", "rare_pages_only", "drug_indications", "hsdn_symptoms", "icd10cm",
    *(f"icd_ch{n:02d}" for n, *_ in ICD10CM_CHAPTERS),
    "do_rare_slim", "do_exposure", "hpo_only", "rare_registry", "omim", "kg_sources", "names",
)


def icd10cm_chapter(code: str) -> int | None:
    """The ICD-10-CM chapter number of a code ("J11.1" -> 10, "D57" -> 3), None when it is not a code."""
    m = _ICD_CODE.match((code or "").strip().upper())
    if not m:
        return None
    head = m.group(0)
    for n, lo, hi, _ in ICD10CM_CHAPTERS:
        if lo <= head <= hi:
            return n
    return None


def chapter_title(n: int) -> str:
    return next((t for c, _, _, t in ICD10CM_CHAPTERS if c == n), f"chapter {n}")


def _sourced_names(attrs: dict[str, Any], curated: frozenset[str]) -> list[str]:
    """A concept's synonyms as its sources give them: the project's curated clinical names (``curated``: their
    source ids) left out, a reviewer's choice of names being no sign that a disease is common."""
    syns = attrs.get("synonyms") or ()
    srcs = attrs.get("synonym_sources") or ()
    if len(srcs) != len(syns):
        return list(syns)
    return [s for s, src in zip(syns, srcs) if src not in curated]


class PriorFeatures:
    """Per-disease commonness facts (``facts(cid)``) and their feature vectors (``vector(cid)``).

    ``records``: concept id -> {"pages": [organisations], "drugs": n, "hsdn": n, "icd": [chapters],
    "subsets": [DO subsets], "hpo_only": bool, "registry": bool, "omim": bool, "sources": n, "names": n}."""

    def __init__(self, records: dict[str, dict[str, Any]], version: str = "", build_seconds: float = 0.0):
        self.records = records
        self.version = version
        self.build_seconds = build_seconds

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, cid: str) -> bool:
        return cid in self.records

    def facts(self, cid: str) -> dict[str, Any]:
        """The facts of a disease ({} for a concept that is not a KG disease)."""
        return self.records.get(cid, {})

    def vector(self, cid: str) -> list[float]:
        """The disease's feature values in :data:`FEATURES` order (all zero for an unknown concept)."""
        return feature_vector(self.facts(cid))

    def values(self, cid: str) -> dict[str, float]:
        return dict(zip(FEATURES, self.vector(cid)))

    # ---- building ------------------------------------------------------------------------------------------
    @classmethod
    def build(cls, kg: Any, documents: Iterable[Any] = (), do_subsets: dict[str, list[str]] | None = None,
              version: str = "") -> PriorFeatures:
        """Facts for every KG disease from the graph, MedQuAD documents (objects or dicts with ``focus`` and
        ``organisation``) and the DO subsets (DOID -> subset names)."""
        from .focus import resolve_focus  # noqa: PLC0415
        from .kg.builder import CLINICAL_NAMES_SOURCE  # noqa: PLC0415
        from .kg.normalize import normalise  # noqa: PLC0415

        curated = frozenset({CLINICAL_NAMES_SOURCE})       # neither a name nor a source of the concept here

        t0 = time.perf_counter()
        g = kg.graph
        diseases = [n for n, a in g.nodes(data=True) if a.get("category") == "disease"]
        # MedQuAD: the organisations with pages about each disease (focus resolved once per distinct name)
        orgs: dict[str, set[str]] = {}
        by_focus: dict[str, tuple[str, set[str]]] = {}
        for d in documents:
            get = d.get if isinstance(d, dict) else (lambda k, _d=d: getattr(_d, k, None))
            focus, org = (get("focus") or "").strip(), get("organisation") or ""
            if not focus or not org or get("role") == "G":
                continue
            by_focus.setdefault(normalise(focus), (focus, set()))[1].add(org)
        for shown, found in by_focus.values():
            hits = kg.lookup(shown, categories=("disease",))
            if hits:
                orgs.setdefault(hits[0].id, set()).update(found)
                continue
            # a consumer page whose title names the disease beside another or with an alias ("Diverticulosis and
            # Diverticulitis", "Polio and Post-Polio Syndrome", "Rocky Mountain Spotted Fever (RMSF)")
            consumer = sorted(found & set(CONSUMER_ORGS))
            if consumer:
                for hit in resolve_focus(kg, shown, consumer[0]):
                    orgs.setdefault(hit.id, set()).update(consumer)
        subsets = do_subsets or {}
        own: dict[str, dict[str, Any]] = {}
        for n in diseases:
            a = g.nodes[n]
            drugs = set()
            hsdn = 0
            for _, v, k, d in g.out_edges(n, keys=True, data=True):
                if k == "treated_by":
                    drugs.add(v)
                elif k == "has_symptom" and (d.get("source") == "hsdn" or "hsdn" in (d.get("also_sources") or ())):
                    hsdn += 1
            xrefs = a.get("xrefs") or {}
            own[n] = {"pages": orgs.get(n, set()), "drugs": drugs, "hsdn": hsdn,
                      "icd": {c for code in xrefs.get("ICD10CM", ()) if (c := icd10cm_chapter(code))},
                      "subsets": set(subsets.get(n, ())),
                      "sources": set(a.get("sources") or ()) - curated,
                      "registry": bool(xrefs.get("ORPHA") or n.startswith("ORPHA:")),
                      "omim": bool(xrefs.get("OMIM") or n.startswith("OMIM:")),
                      "names": {normalise(s) for s in [a.get("name") or "", *_sourced_names(a, curated)]} - {""}}
        records: dict[str, dict[str, Any]] = {}
        for n in diseases:
            group = [n, *sorted(e for e in kg.equivalents(n) if e in own)]
            parts = [own[x] for x in group]
            sources = set().union(*(p["sources"] for p in parts))
            records[n] = {
                "pages": sorted(set().union(*(p["pages"] for p in parts))),
                "drugs": len(set().union(*(p["drugs"] for p in parts))),
                "hsdn": max(p["hsdn"] for p in parts),
                "icd": sorted(set().union(*(p["icd"] for p in parts))),
                "subsets": sorted(set().union(*(p["subsets"] for p in parts))),
                "hpo_only": bool(sources) and sources <= HPO_ONLY_SOURCES,
                "registry": any(p["registry"] for p in parts),
                "omim": any(p["omim"] for p in parts),
                "sources": len(sources),
                "names": len(set().union(*(p["names"] for p in parts))),
            }
        return cls(records, version, time.perf_counter() - t0)

    # ---- cache ---------------------------------------------------------------------------------------------
    @staticmethod
    def cache_key(kg_version: str) -> str:
        from . import sources  # noqa: PLC0415

        parts = [PRIOR_FORMAT, kg_version]
        for sid in ("medquad", "do-obo-2016"):
            src = sources.get(sid)
            parts.append((src.url, src.sha256))
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]

    @staticmethod
    def cache_dir(key: str) -> Path:
        from .paths import build_dir  # noqa: PLC0415

        return build_dir() / "prior" / key

    def save(self, folder: Path) -> None:
        from .atomic import building  # noqa: PLC0415

        with building(folder) as tmp:
            (tmp / "features.json").write_text(
                json.dumps({"format": PRIOR_FORMAT, "version": self.version, "records": self.records},
                           separators=(",", ":")), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> PriorFeatures:
        data = json.loads((folder / "features.json").read_text(encoding="utf-8"))
        if data.get("format") != PRIOR_FORMAT:
            raise ValueError(f"prior features at {folder} have format {data.get('format')}, not {PRIOR_FORMAT}")
        return cls(data["records"], data.get("version", ""))

    @classmethod
    def for_kg(cls, kg: Any, cache: bool = True) -> PriorFeatures:
        """The features of a KG's diseases from the MedQuAD release and the DO 2016 OBO subsets: from the disk
        cache when there, else computed (and cached unless ``cache`` is False; a read-only home just computes
        them again next time). MedQuAD and the DO file are read through :func:`knowledge.sources.ensure`."""
        key = cls.cache_key(str(getattr(kg, "version", "")))
        folder = cls.cache_dir(key)
        if (folder / "features.json").is_file():
            try:
                return cls.load(folder)
            except Exception as exc:  # noqa: BLE001 - a broken cache is rebuilt
                log.warning("recomputing the commonness features (%s)", exc)
        from . import sources  # noqa: PLC0415
        from .corpus import iter_documents  # noqa: PLC0415

        t0 = time.perf_counter()
        subsets = do_subsets(sources.ensure("do-obo-2016"), kg)
        feats = cls.build(kg, iter_documents(), subsets, version=key)
        feats.build_seconds = time.perf_counter() - t0
        log.info("commonness features of %d diseases in %.1fs", len(feats), feats.build_seconds)
        if cache:
            try:
                feats.save(folder)
            except OSError as exc:
                log.warning("could not cache the commonness features: %s", exc)
        return feats


def do_subsets(obo_path: Path | str, kg: Any = None) -> dict[str, list[str]]:
    """DOID -> its subsets in a Disease Ontology OBO file (the 2016 release carries ``DO_rare_slim``). With a KG,
    an id the graph does not have is carried over to the current id its term names as ``alt_id`` owner or
    ``replaced_by``."""
    from .kg.parsers import read_obo  # noqa: PLC0415

    terms = read_obo(Path(obo_path))
    out: dict[str, set[str]] = {}
    for t in terms.values():
        if not t.subsets:
            continue
        targets = [t.id]
        if kg is not None and t.id not in kg.graph:
            targets = [r for r in t.replaced_by if r in kg.graph]
        for tid in targets:
            out.setdefault(tid, set()).update(t.subsets)
    return {k: sorted(v) for k, v in out.items()}


def feature_vector(facts: dict[str, Any]) -> list[float]:
    """The :data:`FEATURES` values of one disease's facts (see :class:`PriorFeatures`)."""
    pages = set(facts.get("pages") or ())
    chapters = set(facts.get("icd") or ())
    subsets = set(facts.get("subsets") or ())
    values = {
        "consumer_page": float(bool(pages & set(CONSUMER_ORGS))),
        "institute_page": float(bool(pages & set(INSTITUTE_ORGS))),
        "rare_pages_only": float(bool(pages) and pages <= set(RARE_ORGS)),
        "drug_indications": math.log1p(facts.get("drugs") or 0),
        "hsdn_symptoms": math.log1p(facts.get("hsdn") or 0),
        "icd10cm": float(bool(chapters)),
        **{f"icd_ch{n:02d}": float(n in chapters) for n, *_ in ICD10CM_CHAPTERS},
        "do_rare_slim": float(bool(subsets & set(RARE_SUBSETS))),
        "do_exposure": float(bool(subsets & set(EXPOSURE_SUBSETS))),
        "hpo_only": float(bool(facts.get("hpo_only"))),
        "rare_registry": float(bool(facts.get("registry"))),
        "omim": float(bool(facts.get("omim"))),
        "kg_sources": math.log1p(facts.get("sources") or 0),
        "names": math.log1p(facts.get("names") or 0),
    }
    return [values[f] for f in FEATURES]

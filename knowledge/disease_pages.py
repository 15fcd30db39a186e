"""Disease pages: one text per knowledge-graph disease, made of every reference answer about it, ranked by BM25.

A MedQuAD focus ("Asthma", "High Blood Pressure") that names a KG disease contributes all its answers (symptoms,
causes, tests, treatment...) to that disease's page; two foci naming the same disease share one page. A whole
presentation is then a BM25 query over the pages, which gives a ranking of diseases by how well their reference
text covers the patient's words. It is the plain text-retrieval differential the pipeline is measured against
(MedQuAD answers only), and, with each disease's NCI Thesaurus definitions added (``definitions=True``: a disease
with no MedQuAD page gets a page of its definitions), one of the rankings the pipeline fuses.

Pages are built from the documents of a built index (so a test index over a subset of MedQuAD gets pages over that
subset) and cached on disk per (index version, KG version): building takes seconds, loading a fraction of one.
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .index.fusion import bm25_ranking
from .kg.normalize import normalise
from .kg.vocab import NCIT_ORGANISATION
from .text import bm25_tokens

log = logging.getLogger(__name__)

PAGES_FORMAT = 1


class DiseasePages:
    """BM25 over one page per KG disease. ``rank(text, k)`` -> ``[{"rank", "concept_id", "name", "score"}]``."""

    def __init__(self, concepts: list[str], names: list[str], retriever: Any, build_seconds: float = 0.0):
        self.concepts = concepts
        self.names = names
        self._retriever = retriever
        self._vocab = retriever.vocab_dict
        self._lock = threading.Lock()
        self.build_seconds = build_seconds

    def __len__(self) -> int:
        return len(self.concepts)

    # ---- building ------------------------------------------------------------------------------------------
    @classmethod
    def build(cls, documents: Iterable[Any], kg: Any, definitions: bool = False) -> DiseasePages:
        """Pages from MedQuAD documents (objects or dicts with ``focus`` and ``text``; G documents are skipped).
        ``definitions``: a disease's NCI Thesaurus definitions (the index's G documents of that organisation,
        with their ``concept_id``) join its page, and a disease with no MedQuAD page gets one of its definitions."""
        import bm25s  # noqa: PLC0415

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        t0 = time.perf_counter()
        parts: dict[str, list[str]] = {}
        shown: dict[str, str] = {}
        defined: dict[str, list[str]] = {}
        for d in documents:
            get = d.get if isinstance(d, dict) else (lambda k, _d=d: getattr(_d, k, None))
            if get("role") == "G":
                if definitions and get("organisation") == NCIT_ORGANISATION and get("concept_id") \
                        and get("text"):
                    defined.setdefault(get("concept_id"), []).append(get("text"))
                continue
            focus, text = (get("focus") or "").strip(), get("text") or ""
            if not focus or not text:
                continue
            key = normalise(focus)
            parts.setdefault(key, []).append(text)
            shown.setdefault(key, focus)
        concepts: list[str] = []
        names: list[str] = []
        texts: list[str] = []
        slot: dict[str, int] = {}
        for key, answers in parts.items():
            hits = kg.lookup(shown[key], categories=("disease",))
            if not hits:
                continue               # a drug, a gene, a test: not a diagnosis
            cid = hits[0].id
            page = shown[key] + ". " + " ".join(answers)
            if cid in slot:
                texts[slot[cid]] += " " + page
                continue
            slot[cid] = len(texts)
            concepts.append(cid)
            names.append(hits[0].name)
            texts.append(page)
        for cid, defs in defined.items():
            if cid in slot:
                texts[slot[cid]] += " " + " ".join(defs)
                continue
            concept = kg.concept(cid)
            if concept is None:
                continue
            slot[cid] = len(texts)
            concepts.append(cid)
            names.append(concept.name)
            texts.append(concept.name + ". " + " ".join(defs))
        retriever = bm25s.BM25()
        retriever.index([bm25_tokens(t) or ["_"] for t in texts] or [["_"]], show_progress=False)
        return cls(concepts, names, retriever, time.perf_counter() - t0)

    # ---- cache ---------------------------------------------------------------------------------------------
    @staticmethod
    def cache_dir(index_version: str, kg_version: str, definitions: bool = False) -> Path:
        from .paths import build_dir  # noqa: PLC0415

        key = (PAGES_FORMAT, index_version, kg_version) + (("definitions",) if definitions else ())
        return build_dir() / "pages" / hashlib.sha256(repr(key).encode()).hexdigest()[:16]

    def save(self, folder: Path) -> None:
        from .atomic import building  # noqa: PLC0415

        with building(folder) as tmp:
            self._retriever.save(str(tmp / "bm25"), show_progress=False)
            (tmp / "pages.json").write_text(json.dumps({"format": PAGES_FORMAT, "concepts": self.concepts,
                                                        "names": self.names}), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> DiseasePages:
        import bm25s  # noqa: PLC0415

        meta = json.loads((folder / "pages.json").read_text(encoding="utf-8"))
        if meta.get("format") != PAGES_FORMAT:
            raise ValueError(f"disease pages at {folder} have format {meta.get('format')}, not {PAGES_FORMAT}")
        return cls(meta["concepts"], meta["names"], bm25s.BM25.load(str(folder / "bm25"), show_progress=False))

    @classmethod
    def for_index(cls, index: Any, kg: Any, definitions: bool = False) -> DiseasePages:
        """The pages of a built index's reference documents (``definitions``: with the diseases' NCI Thesaurus
        definitions, see :meth:`build`): from the disk cache when there, else built and cached (a read-only home
        just rebuilds next time)."""
        version = index.manifest()["version"]
        folder = cls.cache_dir(version, str(getattr(kg, "version", "")), definitions)
        if (folder / "pages.json").is_file():
            try:
                return cls.load(folder)
            except Exception as exc:  # noqa: BLE001 - a broken cache is rebuilt
                log.warning("rebuilding disease pages (%s)", exc)
        pages = cls.build(index.documents(), kg, definitions=definitions)
        try:
            pages.save(folder)
        except OSError as exc:
            log.warning("could not cache the disease pages: %s", exc)
        return pages

    # ---- ranking -------------------------------------------------------------------------------------------
    def scores(self, text: str) -> np.ndarray:
        toks = [t for t in bm25_tokens(text) if t in self._vocab]
        if not toks or not self.concepts:
            return np.zeros(len(self.concepts), dtype=np.float32)
        with self._lock:       # bm25s scoring is not documented as thread-safe
            return np.asarray(self._retriever.get_scores(toks), dtype=np.float32)

    def rank(self, text: str, k: int = 50) -> list[dict[str, Any]]:
        """The ``k`` best diseases for ``text`` (positive BM25 score only), best first."""
        s = self.scores(text)
        ranking = bm25_ranking(s, None, k)
        return [{"rank": r, "concept_id": self.concepts[i], "name": self.names[i], "score": float(s[i])}
                for i, r in sorted(ranking.items(), key=lambda x: x[1])]

"""Baselines the pipeline must beat, run through the same harness.

``bm25``: plain text retrieval over our own disease pages. Every MedQuAD focus that names a KG disease becomes one
page (all its answers joined); the presentation is the BM25 query; the ranked pages are the differential. No
extraction, no knowledge graph reasoning, no verification: if the pipeline does not beat this, its agents add
nothing to ranking.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np

from knowledge.index.fusion import bm25_ranking
from knowledge.kg.normalize import normalise
from knowledge.text import bm25_tokens


class DiseasePageBM25:
    """BM25 over one page per disease (MedQuAD focus linked to a KG disease concept)."""

    def __init__(self, kg: Any, documents: list | None = None):
        import bm25s  # noqa: PLC0415

        from knowledge.corpus import load_documents  # noqa: PLC0415

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        t0 = time.perf_counter()
        docs = documents if documents is not None else load_documents()
        pages: dict[str, list[str]] = {}
        names: dict[str, str] = {}
        for d in docs:
            if not d.focus:
                continue
            key = normalise(d.focus)
            pages.setdefault(key, []).append(d.text)
            names.setdefault(key, d.focus.strip())
        self.concepts: list[str] = []
        self.names: list[str] = []
        texts: list[str] = []
        seen: dict[str, int] = {}
        for key, parts in pages.items():
            hits = kg.lookup(names[key], categories=("disease",))
            if not hits:
                continue
            cid = hits[0].id
            text = names[key] + ". " + " ".join(parts)
            if cid in seen:          # two foci naming one disease: one page
                texts[seen[cid]] += " " + text
                continue
            seen[cid] = len(texts)
            self.concepts.append(cid)
            self.names.append(hits[0].name)
            texts.append(text)
        self._retriever = bm25s.BM25()
        self._retriever.index([bm25_tokens(x) or ["_"] for x in texts], show_progress=False)
        self._vocab = self._retriever.vocab_dict
        self._lock = threading.Lock()
        self.pages = len(texts)
        self.build_seconds = time.perf_counter() - t0

    def rank(self, text: str, k: int = 50) -> list[dict[str, Any]]:
        """The top ``k`` diseases for the text: ``[{"rank", "diagnosis", "concept_id", "score"}]``."""
        toks = [t for t in bm25_tokens(text) if t in self._vocab]
        if not toks:
            return []
        with self._lock:  # bm25s scoring is not documented as thread-safe
            scores = np.asarray(self._retriever.get_scores(toks), dtype=np.float32)
        ranking = bm25_ranking(scores, None, k)
        return [{"rank": r, "diagnosis": self.names[i], "concept_id": self.concepts[i], "score": float(scores[i])}
                for i, r in sorted(ranking.items(), key=lambda x: x[1])]

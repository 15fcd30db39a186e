"""The heterogeneous knowledge index over G (knowledge graph), B (reference base) and O (web sources).

Two parts, built together into ``build_dir()/index/``:

1. **Entity-keyed index** per source. G: every distinct KG concept name/synonym (pointing to concept ids), in a
   name index (exact normalised match, BM25 over name words), the symptom names also embedded; B/O: every
   distinct document focus (embedded and in the name index). ``entity_search("heart attack")`` returns, per
   source, the nearest keys with their knowledge: the concept's triples for G, the chunks of the focus'
   documents for B/O.
2. **Chunk index** for whole queries: the chunks of B and O documents plus one short *concept card* per
   KG disease with content (G). BM25 (``bm25s``) over every chunk and dense vectors of document leads, fused
   by a weighted sum of min-max normalised scores (alpha, the default) or by reciprocal rank (RRF, k=60).

The build is versioned (source checksums + KG version + embedding model + chunking/card parameters),
skipped when nothing changed, atomic (built in a temporary folder, swapped in by rename: a failed build
leaves the previous index intact) and incremental (vectors come from the on-disk embedding cache).

Modules: :mod:`.config` (what goes in, what comes out), :mod:`.text` (indexed texts, concept cards, dense rows),
:mod:`.build` (build stages), :mod:`.fusion` (ranking and fusion as pure functions), :mod:`.core`
(:class:`KnowledgeIndex`).
"""
from __future__ import annotations

from ..text import bm25_tokens
from .config import (CHUNKS, G_CATEGORIES, INDEX_FORMAT, SOURCES, EntityHit, IndexConfig, IndexNotBuilt,
                     SearchHit)
from .core import KnowledgeIndex
from .text import _norm_key, chunk_index_text, concept_card, dense_rows_of

__all__ = ["CHUNKS", "G_CATEGORIES", "INDEX_FORMAT", "SOURCES", "EntityHit", "IndexConfig", "IndexNotBuilt",
           "KnowledgeIndex", "SearchHit", "bm25_tokens", "chunk_index_text", "concept_card", "dense_rows_of",
           "_norm_key"]

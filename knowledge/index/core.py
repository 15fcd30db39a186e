"""The knowledge index as a reader sees it: open a built index, fetch chunks and documents, entity search (name
index + dense neighbours), hybrid chunk search (BM25 + dense, fused; the ranking arithmetic is in :mod:`.fusion`).
Building is in :mod:`.build`."""
from __future__ import annotations

import hashlib
import json
import logging
import pickle
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .. import paths
from ..embeddings import Embedder, EmbeddingCache, get_embedder
from ..text import bm25_tokens
from .config import CHUNKS, INDEX_FORMAT, SOURCES, EntityHit, IndexConfig, IndexNotBuilt, SearchHit
from .fusion import bm25_ranking, credit_dense_hits, fuse_alpha, fuse_rrf, word_overlap
from .text import _norm_key

log = logging.getLogger(__name__)


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class KnowledgeIndex:
    """Build, open and query the heterogeneous knowledge index."""

    def __init__(self, root: str | Path | None = None, config: IndexConfig | None = None,
                 embedder: Embedder | None = None, kg: Any = None, store: str = "embedded",
                 cache: EmbeddingCache | None = None):
        self.root = Path(root) if root is not None else paths.build_dir() / "index"
        self.config = config or IndexConfig()
        self._embedder = embedder
        self._kg = kg
        self.store_name = store
        self._cache = cache
        self._lock = threading.RLock()
        self._loaded = False
        self._manifest: dict[str, Any] | None = None
        self._stale_key: tuple | None = None       # (graph version, index build time) stale() last looked at
        self._stale_reason: str | None = None
        self.last_build: dict[str, Any] = {}

    # -- shared resources -------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            spec = self.config.embedder or (self.manifest().get("embedder_spec") if self.exists() else None)
            self._embedder = get_embedder(spec)
        return self._embedder

    @property
    def kg(self) -> Any:
        if self._kg is None:
            from ..kg import load_or_build  # noqa: PLC0415

            self._kg = load_or_build()
        return self._kg

    def _open_store(self, path: Path, autoflush: bool = False):
        from ..stores import open_store  # noqa: PLC0415

        kwargs: dict[str, Any] = {"path": path}
        if self.store_name == "embedded":
            kwargs["autoflush"] = autoflush
        return open_store(self.store_name, **kwargs)

    # -- manifest / status -------------------------------------------------------------------------
    def exists(self) -> bool:
        return (self.root / "manifest.json").exists()

    def manifest(self) -> dict[str, Any]:
        try:
            return json.loads((self.root / "manifest.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexNotBuilt(f"index not built at {self.root}: run `clinicalrag index build`") from None

    def status(self) -> dict[str, Any]:
        if not self.exists():
            return {"built": False, "path": str(self.root)}
        m = self.manifest()
        return {"built": True, "path": str(self.root), "version": m["version"], "sources": m["sources"],
                "counts": m["counts"], "model": m["model"], "dim": m["dim"], "built_at": m["built_at"],
                "build_seconds": m.get("build_seconds"), "versions": m["versions"], "config": m["config"],
                "size_bytes": _dir_size(self.root)}

    def stale(self) -> str | None:
        """Why the built index no longer matches the knowledge graph it is used with (the graph's facts, e.g. newly
        mined edges, changed since the build), or None. Only checked when the index was given its graph."""
        if self._kg is None or not self.exists():
            return None
        now = str(getattr(self._kg, "version", ""))
        m = self._manifest or self.manifest()
        key = (now, m.get("built_at"))
        if self._stale_key != key:
            built = (m.get("versions") or {}).get("kg")
            self._stale_key, self._stale_reason = key, None
            if built and now and built != now:
                self._stale_reason = (f"the retrieval index was built over knowledge graph {built}, but the graph "
                                      f"is now {now}: run `clinicalrag index build`")
        return self._stale_reason

    def compute_versions(self, sources: Sequence[str]) -> dict[str, Any]:
        v: dict[str, Any] = {"format": INDEX_FORMAT, "model": self.embedder.name, "config": self.config.to_dict(),
                             "sources": sorted(sources)}
        if "B" in sources or "O" in sources:
            from .build import _source_checksum  # noqa: PLC0415

            v["medquad"] = _source_checksum("medquad")
        if "G" in sources:
            v["kg"] = str(getattr(self.kg, "version", "unknown"))
        v["version"] = hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()[:16]
        return v

    # -- build ------------------------------------------------------------------------------------
    def build(self, sources: Sequence[str] = SOURCES, rebuild: bool = False, progress: bool = True,
              _hook: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Build the index (skipped when the current one has the same version, unless ``rebuild``).

        Returns build stats: skipped, seconds, counts, embedded (texts through the model), cached.
        ``_hook(stage)`` is called between stages (used by tests to interrupt a build). See :mod:`.build`."""
        from .build import build_index  # noqa: PLC0415

        return build_index(self, sources, rebuild=rebuild, progress=progress, _hook=_hook)

    # -- open / load --------------------------------------------------------------------------------
    def open(self) -> "KnowledgeIndex":
        """Load the built index (raises IndexNotBuilt if there is none)."""
        with self._lock:
            if self._loaded:
                return self
            m = self.manifest()
            self._manifest = m
            self._store = self._open_store(self.root / "store")
            with open(self.root / "chunks.pkl", "rb") as fh:
                self._chunks: list[dict[str, Any]] = pickle.load(fh)
            self._chunk_pos = {c["id"]: i for i, c in enumerate(self._chunks)}
            with open(self.root / "entities.pkl", "rb") as fh:
                ent = pickle.load(fh)
            self._entities: dict[str, dict[str, list[str]]] = ent["entities"]
            self._entity_meta: dict[str, dict[str, dict[str, Any]]] = ent["meta"]
            self._documents: dict[str, dict[str, Any]] | None = None
            self._doc_chunks: dict[str, list[int]] = {}
            for i, c in enumerate(self._chunks):
                self._doc_chunks.setdefault(c["meta"].get("doc_id", c["id"].split("#")[0]), []).append(i)
            self._bm25 = None
            if (self.root / "bm25").exists():
                import bm25s  # noqa: PLC0415

                self._bm25 = bm25s.BM25.load(str(self.root / "bm25"), show_progress=False)
                self._bm25_vocab = self._bm25.vocab_dict
            self._roles = np.array([c["meta"].get("role") or "" for c in self._chunks], dtype=str)
            self._role_masks: dict[frozenset[str], np.ndarray] = {}
            self._doc_of = [c["meta"].get("doc_id", c["id"].split("#")[0]) for c in self._chunks]
            self._dense_colls = set(self._store.collections())
            self._names: dict[str, Any] = {}
            self._name_srcs = {s for s in self._entities if (self.root / f"names_{s}").exists()}
            self._name_norm = {s: {_norm_key(k): k for k in keys} for s, keys in self._entities.items()}
            if self._embedder is not None and self._embedder.name != m["model"]:
                raise RuntimeError(f"index was built with {m['model']}, but the embedder is {self._embedder.name}")
            reason = self.stale()
            if reason:
                log.warning(reason)
            self._loaded = True
            return self

    @property
    def sources(self) -> list[str]:
        self.open()
        return list(self._manifest["sources"])

    def chunk(self, chunk_id: str) -> dict[str, Any] | None:
        """``{"chunk_id", "text", "metadata"}`` of a chunk, or None."""
        self.open()
        i = self._chunk_pos.get(chunk_id)
        if i is None:
            return None
        c = self._chunks[i]
        return {"chunk_id": c["id"], "text": c["text"], "metadata": dict(c["meta"])}

    def chunks_of(self, doc_id: str) -> list[dict[str, Any]]:
        self.open()
        return [self.chunk(self._chunks[i]["id"]) for i in self._doc_chunks.get(doc_id, [])]

    def document(self, doc_id: str) -> dict[str, Any] | None:
        self.open()
        if self._documents is None:
            with open(self.root / "documents.pkl", "rb") as fh:
                self._documents = pickle.load(fh)
        return self._documents.get(doc_id)

    def documents(self) -> list[dict[str, Any]]:
        """Every document of the index (B/O reference answers with their focus, and G concept cards)."""
        self.document("")
        return list(self._documents.values())

    # -- query embedding ------------------------------------------------------------------------------
    def _qvecs(self, texts: list[str]) -> np.ndarray:
        """Query vectors. A few texts are embedded one by one through the query cache: with int8 dynamic
        quantisation a text's vector depends slightly on the batch it is padded into, and a query must get the
        same vector (and the same hits) whether it is asked alone or with others."""
        emb = self.embedder
        if len(texts) <= 16 and hasattr(emb, "embed_query"):
            return np.stack([np.asarray(emb.embed_query(t), dtype=np.float32) for t in texts])
        return emb.embed(texts)

    # -- entity search --------------------------------------------------------------------------------
    def entity_search(self, text: str, k: int = 5, sources: Sequence[str] = SOURCES, min_score: float = 0.0,
                      with_knowledge: bool = True, max_knowledge: int = 50) -> dict[str, list[EntityHit]]:
        return self.entity_search_many([text], k=k, sources=sources, min_score=min_score,
                                       with_knowledge=with_knowledge, max_knowledge=max_knowledge)[0]

    def entity_search_many(self, texts: Sequence[str], k: int = 5, sources: Sequence[str] = SOURCES,
                           min_score: float = 0.0, with_knowledge: bool = True,
                           max_knowledge: int = 50) -> list[dict[str, list[EntityHit]]]:
        """Nearest entity keys per source for each text. A key equal to the text after normalisation (case,
        spacing) comes first with score 1.0; then the dense neighbours (texts embedded once, in one batch) where
        the source has entity vectors, else the name index (BM25 over key words, scored by word overlap)."""
        self.open()
        texts = list(texts)
        out: list[dict[str, list[EntityHit]]] = [{} for _ in texts]
        if not texts:
            return out
        q = None
        for s in sources:
            s = s.upper()
            if s not in self._entities:
                continue
            depth = k * 4 if s == "G" else k
            rows: list[list[tuple[str, float]]] = [[] for _ in texts]
            if f"entities_{s}" in self._dense_colls:
                if q is None:
                    q = self._qvecs(texts)
                for n, hits in enumerate(self._store.search_many(f"entities_{s}", q, k=depth, min_score=min_score)):
                    rows[n] = [(h.metadata.get("key", ""), h.score) for h in hits]
            if s in self._name_srcs and (s == "G" or f"entities_{s}" not in self._dense_colls):
                for n, t in enumerate(texts):
                    best = dict(rows[n])
                    for key, sc in self._name_search(s, t, depth, min_score):
                        best[key] = max(sc, best.get(key, 0.0))
                    rows[n] = sorted(best.items(), key=lambda x: -x[1])
            for n, hits in enumerate(rows):
                exact = self._name_norm.get(s, {}).get(_norm_key(texts[n]))
                if exact is not None:
                    hits = [(exact, 1.0)] + [h for h in hits if h[0] != exact]
                res: list[EntityHit] = []
                seen: set[str] = set()
                for key, score in hits:
                    ids = list(self._entities[s].get(key, ()))
                    if s == "G":
                        cid = ids[0] if ids else None
                        if cid in seen:
                            continue
                        seen.add(cid)
                        em = self._entity_meta.get("G", {}).get(cid, {})
                        eh = EntityHit(source="G", key=key, score=score, concept_id=cid, ids=ids,
                                       name=em.get("name"), category=em.get("category"))
                        if with_knowledge and cid:
                            eh.knowledge = self._concept_knowledge(cid, max_knowledge)
                    else:
                        eh = EntityHit(source=s, key=key, score=score, focus=key, ids=ids)
                        if with_knowledge:
                            kn: list[dict[str, Any]] = []
                            for d in ids:
                                kn.extend(self.chunks_of(d))
                                if len(kn) >= max_knowledge:
                                    break
                            eh.knowledge = kn[:max_knowledge]
                    res.append(eh)
                    if len(res) >= k:
                        break
                out[n][s] = res
        return out

    def _name_search(self, source: str, text: str, k: int, min_score: float) -> list[tuple[str, float]]:
        """Entity keys of ``source`` sharing words with ``text``: BM25 over key words picks candidates, the
        Dice overlap of the two word sets scores them (1.0 = the same words), BM25 breaks ties."""
        names = self._names.get(source)
        if names is None:
            import bm25s  # noqa: PLC0415

            path = self.root / f"names_{source}"
            names = bm25s.BM25.load(str(path), show_progress=False) if path.exists() else False
            self._names[source] = names
            self._name_keys = getattr(self, "_name_keys", {})
            self._name_keys[source] = list(self._entities[source])
        if names is False:
            return []
        qt = bm25_tokens(text)
        toks = [t for t in qt if t in names.vocab_dict]
        if not toks:
            return []
        scores = np.asarray(names.get_scores(toks), dtype=np.float32)
        depth = min(len(scores), max(k * 5, 20))
        top = np.argpartition(-scores, depth - 1)[:depth]
        keys = self._name_keys[source]
        qs = set(qt)
        ranked = []
        for i in top:
            if scores[i] <= 0:
                continue
            dice = word_overlap(qs, bm25_tokens(keys[i]))
            if dice >= min_score:
                ranked.append((keys[i], dice, float(scores[i])))
        ranked.sort(key=lambda x: (-x[1], -x[2], x[0]))
        return [(key, dice) for key, dice, _ in ranked[:k]]

    def _concept_knowledge(self, cid: str, limit: int) -> list[Any]:
        try:
            triples = list(self.kg.neighbors(cid, direction="out"))
        except Exception as exc:  # noqa: BLE001 — the KG is optional at query time
            log.warning("no KG knowledge for %s: %s", cid, exc)
            return []
        triples.sort(key=lambda t: -(t.weight if t.weight is not None else 0.0))
        return triples[:limit]

    # -- chunk search ------------------------------------------------------------------------------------
    def _filter_mask(self, sources: Sequence[str] | None, filters: dict[str, Any] | None) -> np.ndarray | None:
        mask = None
        if sources:
            want = frozenset(s.upper() for s in sources)
            mask = self._role_masks.get(want)
            if mask is None:
                mask = np.isin(self._roles, sorted(want))
                self._role_masks[want] = mask
        for fld, val in (filters or {}).items():
            wanted = set(val) if isinstance(val, (list, tuple, set, frozenset)) else {val}
            m = np.fromiter(((c["meta"].get(fld) in wanted) for c in self._chunks), dtype=bool,
                            count=len(self._chunks))
            mask = m if mask is None else mask & m
        return mask

    def _bm25_scores(self, query: str) -> np.ndarray:
        toks = [t for t in bm25_tokens(query) if t in self._bm25_vocab]
        if not toks or self._bm25 is None:
            return np.zeros(len(self._chunks), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(toks), dtype=np.float32)

    def search(self, query: str, k: int = 10, sources: Sequence[str] | None = None, mode: str = "hybrid",
               fusion: str = "alpha", alpha: float = 0.5, min_score: float | None = None,
               filters: dict[str, Any] | None = None, depth: int = 50, rrf_k: int = 60) -> list[SearchHit]:
        """Top-``k`` chunks for a whole query.

        mode: "hybrid" (BM25 + dense), "bm25" or "dense". fusion (hybrid): "rrf" (score = sum of
        1/(rrf_k + rank) over the rankings a chunk appears in, each ranking cut at ``depth``) or "alpha"
        (alpha * minmax(dense) + (1-alpha) * minmax(bm25) over the union of both candidate lists).
        sources: restrict to roles (G/B/O). filters: metadata equality/membership, e.g.
        ``{"organisation": ["GARD", "GHR"]}``. min_score applies to the returned ``score``."""
        if mode not in ("hybrid", "bm25", "dense"):
            raise ValueError(f"unknown mode {mode!r}: hybrid, bm25 or dense")
        if fusion not in ("rrf", "alpha"):
            raise ValueError(f"unknown fusion {fusion!r}: rrf or alpha")
        self.open()
        if not query or not query.strip() or not self._chunks:
            return []
        mask = self._filter_mask(sources, filters)
        depth = max(depth, k)
        bm_rank: dict[int, int] = {}
        bm_scores = None
        if mode in ("hybrid", "bm25"):
            bm_scores = self._bm25_scores(query)
            bm_rank = bm25_ranking(bm_scores, mask, depth)
        dense: dict[int, float] = {}
        dn_rank: dict[int, int] = {}
        if mode in ("hybrid", "dense"):
            qv = self._qvecs([query])[0]
            store_filters: dict[str, Any] = dict(filters or {})
            if sources:
                store_filters["role"] = [x.upper() for x in sources]
            hits = self._store.search(CHUNKS, qv, k=depth, filters=store_filters or None)
            dense, dn_rank = credit_dense_hits(((self._chunk_pos[h.id], h.score) for h in hits), self._doc_of,
                                               bm_rank)
        # fuse
        if mode == "bm25":
            cand = sorted(bm_rank, key=bm_rank.get)
            scored = [(i, float(bm_scores[i])) for i in cand]
        elif mode == "dense":
            scored = sorted(dense.items(), key=lambda x: -x[1])
        elif fusion == "rrf":
            scored = fuse_rrf(bm_rank, dn_rank, rrf_k)
        else:
            scored = fuse_alpha(bm_rank, bm_scores, dense, alpha)
        out: list[SearchHit] = []
        for i, sc in scored:
            if min_score is not None and sc < min_score:
                continue
            c = self._chunks[i]
            ranks = {}
            if i in bm_rank:
                ranks["bm25"] = bm_rank[i]
            if i in dn_rank:
                ranks["dense"] = dn_rank[i]
            out.append(SearchHit(chunk_id=c["id"], score=float(sc), text=c["text"], role=c["meta"].get("role", ""),
                                 metadata=dict(c["meta"]),
                                 bm25_score=float(bm_scores[i]) if bm_scores is not None else None,
                                 dense_score=dense.get(i), ranks=ranks))
            if len(out) >= k:
                break
        return out

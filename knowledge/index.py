"""The heterogeneous knowledge index over G (knowledge graph), B (reference base) and O (web sources).

Two parts, built together into ``build_dir()/index/``:

1. **Entity-keyed index** (one dense collection per source). G: every distinct KG concept name/synonym
   (pointing to concept ids); B/O: every distinct document focus (pointing to document ids).
   ``entity_search("heart attack")`` returns, per source, the nearest keys with their knowledge: the
   concept's triples for G, the chunks of the focus' documents for B/O.
2. **Chunk index** for whole queries: the chunks of B and O documents plus one short *concept card* per
   KG disease with content (G). BM25 (``bm25s``) and dense (vector store) rankings fused by reciprocal
   rank fusion (RRF, k=60) or by a weighted sum of min-max normalised scores (alpha).

The build is versioned (source checksums + KG version + embedding model + chunking/card parameters),
skipped when nothing changed, atomic (built in a temporary folder, swapped in by rename: a failed build
leaves the previous index intact) and incremental (vectors come from the on-disk embedding cache).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import atomic, paths
from .text import bm25_tokens  # noqa: F401  (the index's BM25 tokenizer, re-exported)
from .embeddings import Embedder, EmbeddingCache, embed_cached, get_embedder

log = logging.getLogger(__name__)

INDEX_FORMAT = 2
SOURCES = ("G", "B", "O")
CHUNKS = "chunks"
G_CATEGORIES = ("disease", "symptom", "phenotype", "drug", "anatomy")


# --------------------------------------------------------------------------------------------- types
@dataclass
class EntityHit:
    source: str                         # "G", "B" or "O"
    key: str                            # the matched string (concept name/synonym, or document focus)
    score: float                        # cosine similarity
    concept_id: str | None = None       # G: best concept id for the key
    focus: str | None = None            # B/O: the focus string
    ids: list[str] = field(default_factory=list)   # G: concept ids; B/O: document ids
    name: str | None = None             # G: the concept's preferred name
    category: str | None = None         # G: concept category
    knowledge: list[Any] = field(default_factory=list)  # G: Triples; B/O: chunk dicts

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["knowledge"] = [_jsonable(k) for k in self.knowledge]
        return d


@dataclass
class SearchHit:
    chunk_id: str
    score: float                        # fused score (hybrid), BM25 score or cosine
    text: str
    role: str
    metadata: dict[str, Any]
    bm25_score: float | None = None
    dense_score: float | None = None
    ranks: dict[str, int] = field(default_factory=dict)   # 1-based rank per ranking ("bm25", "dense")

    @property
    def doc_id(self) -> str:
        return self.metadata.get("doc_id", self.chunk_id.split("#")[0])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _jsonable(x: Any) -> Any:
    if hasattr(x, "to_dict"):
        return x.to_dict()
    if hasattr(x, "__dataclass_fields__"):
        return asdict(x)
    return x


@dataclass
class IndexConfig:
    """What goes into the index. Every field is part of the index version."""

    embedder: str | None = None              # embedder spec (see embeddings.get_embedder); None = default
    max_tokens: int = 200                    # chunk size (project tokenizer tokens)
    overlap: float = 0.2                     # chunk overlap (fraction of max_tokens; 20–30 % keeps context across cuts)
    card_max_findings: int = 8               # findings (symptoms/phenotypes) listed on a concept card
    card_max_synonyms: int = 4
    card_max_definition_chars: int = 300
    card_min_content: int = 2                # a disease gets a card only with >= this many content items
    # Dense vectors: "lead" = one per document (B/O) or card (G), from its first chunk cut at dense_max_tokens
    # word pieces (focus, section heading and opening sentences); "chunk" = one per chunk, cut at the model's
    # limit. BM25 always covers every chunk in full. Leads cost ~1/7 of the model time of full chunks and rank
    # at least as well on our query set (docs/retrieval.md).
    dense_unit: str = "lead"
    dense_max_tokens: int = 48
    # G names and synonyms (68k strings) are all in the name index (exact normalised match, then BM25 over
    # name words); those of these categories are also embedded for dense entity search. Symptoms (1.2k names)
    # by default: lay wording ("belly pain") reaches them; embedding every category costs ~95 s more build
    # and gains little beyond (docs/retrieval.md, entity linking).
    g_entity_vectors: tuple[str, ...] = ("symptom",)
    g_categories: tuple[str, ...] = G_CATEGORIES
    organisations: tuple[str, ...] | None = None   # MedQuAD organisations (None = all)
    doc_limit: int | None = None             # first N documents (tests, benchmarks)
    per_organisation_limit: int | None = None  # first N documents of each organisation (subsets)
    g_concepts: tuple[str, ...] | None = None  # restrict G entities and cards to these concept ids (subsets)
    batch_size: int = 64

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["g_categories"] = list(self.g_categories)
        d["g_entity_vectors"] = list(self.g_entity_vectors)
        d["organisations"] = list(self.organisations) if self.organisations else None
        d["g_concepts"] = sorted(self.g_concepts) if self.g_concepts else None
        return d


# -------------------------------------------------------------------------------------------- helpers
def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _source_checksum(source_id: str) -> str:
    """Checksum of a catalog source: ``sources.checksums`` when available, else hashed here."""
    from . import sources  # noqa: PLC0415

    fn = getattr(sources, "checksums", None)
    if fn is not None:
        try:
            return str(fn([source_id])[source_id])
        except Exception as exc:  # noqa: BLE001 — fall back to hashing the file
            log.debug("sources.checksums failed for %s: %s", source_id, exc)
    p = sources.ensure(source_id)
    if p.is_dir():
        return "dir:" + hashlib.sha256("".join(sorted(f"{q.name}:{q.stat().st_size}" for q in p.iterdir()))
                                       .encode()).hexdigest()
    return _sha256_file(p)


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _norm_key(s: str) -> str:
    return " ".join(s.lower().split())


def _minmax(x: np.ndarray) -> np.ndarray:
    if x.size == 0:
        return x
    lo, hi = float(np.min(x)), float(np.max(x))
    if hi - lo < 1e-12:
        return np.ones_like(x) if hi > 0 else np.zeros_like(x)
    return (x - lo) / (hi - lo)


def chunk_index_text(meta: dict[str, Any], text: str) -> str:
    """What gets embedded and BM25-indexed for a chunk: its focus and section label, then the text.
    (The verbatim MedQuAD question is *not* indexed: evaluation queries are built from it.)"""
    head = meta.get("focus") or meta.get("title") or ""
    sec = meta.get("section")
    if sec and meta.get("role") in ("B", "O"):
        head = f"{head} ({sec})" if head else sec
    return f"{head}: {text}" if head else text


def concept_card(kg: Any, concept: Any, cfg: IndexConfig) -> tuple[str, int]:
    """A short text card for a disease concept; returns (text, number of content items)."""
    syns = [s for s in (concept.synonyms or ()) if _norm_key(s) != _norm_key(concept.name)]
    syns = list(dict.fromkeys(syns))[: cfg.card_max_synonyms]
    definition = (concept.definition or "").strip()
    if len(definition) > cfg.card_max_definition_chars:
        cut = definition[: cfg.card_max_definition_chars]
        definition = cut[: cut.rfind(" ")] + " ..." if " " in cut else cut
    findings: list[tuple[float, str]] = []
    drugs: list[str] = []
    for rel in ("has_symptom", "has_phenotype"):
        for t in kg.neighbors(concept.id, relation=rel, direction="out"):
            w = t.weight if t.weight is not None else 0.0
            findings.append((float(w), t.object_name))
    for t in kg.neighbors(concept.id, relation="treated_by", direction="out"):
        drugs.append(t.object_name)
    findings.sort(key=lambda x: -x[0])
    names = list(dict.fromkeys(n for _, n in findings if n))[: cfg.card_max_findings]
    drugs = list(dict.fromkeys(d for d in drugs if d))[:4]
    content = int(bool(definition)) + len(names) + len(drugs)
    parts = [concept.name + (f" (also: {', '.join(syns)})" if syns else "") + "."]
    if definition:
        parts.append(definition)
    if names:
        parts.append("Findings: " + ", ".join(names) + ".")
    if drugs:
        parts.append("Treated with: " + ", ".join(drugs) + ".")
    return " ".join(parts), content


# ---------------------------------------------------------------------------------------------- index
class IndexNotBuilt(RuntimeError):
    pass


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
            from .kg import load_or_build  # noqa: PLC0415

            self._kg = load_or_build()
        return self._kg

    def _open_store(self, path: Path, autoflush: bool = False):
        from .stores import open_store  # noqa: PLC0415

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

    def compute_versions(self, sources: Sequence[str]) -> dict[str, Any]:
        v: dict[str, Any] = {"format": INDEX_FORMAT, "model": self.embedder.name, "config": self.config.to_dict(),
                             "sources": sorted(sources)}
        if "B" in sources or "O" in sources:
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
        ``_hook(stage)`` is called between stages (used by tests to interrupt a build)."""
        sources = tuple(s.upper() for s in sources)
        bad = [s for s in sources if s not in SOURCES]
        if bad or not sources:
            raise ValueError(f"unknown source(s) {bad or sources}; choose from G, B, O")
        t0 = time.perf_counter()
        versions = self.compute_versions(sources)
        if not rebuild and self.exists():
            m = self.manifest()
            if m.get("version") == versions["version"]:
                self.last_build = {"skipped": True, "seconds": time.perf_counter() - t0, "version": m["version"],
                                   "counts": m["counts"], "embedded": 0, "cached": 0}
                return self.last_build
        hook = _hook or (lambda stage: None)
        self.root.parent.mkdir(parents=True, exist_ok=True)
        self._remove_stale_tmp()
        tmp = atomic.new_tmp_dir(self.root)
        stats: dict[str, Any] = {"embedded": 0, "cached": 0}
        timings: dict[str, float] = {}
        try:
            t = time.perf_counter()
            chunks: list[dict[str, Any]] = []      # {"id", "text", "meta"}
            documents: dict[str, dict[str, Any]] = {}
            entities: dict[str, dict[str, list[str]]] = {}   # source -> key -> ids
            entity_meta: dict[str, dict[str, dict[str, Any]]] = {}
            if "B" in sources or "O" in sources:
                from .corpus import chunk_documents, load_documents  # noqa: PLC0415

                roles = tuple(r for r in ("B", "O") if r in sources)
                docs = load_documents(roles=roles, limit=self.config.doc_limit,
                                      organisations=self.config.organisations)
                if self.config.per_organisation_limit is not None:
                    per: dict[str, int] = {}
                    kept = []
                    for d in docs:
                        per[d.organisation] = per.get(d.organisation, 0) + 1
                        if per[d.organisation] <= self.config.per_organisation_limit:
                            kept.append(d)
                    docs = kept
                if not docs:
                    raise RuntimeError(f"no MedQuAD documents for roles {roles} / organisations "
                                       f"{self.config.organisations}")
                timings["load_corpus"] = time.perf_counter() - t
                t = time.perf_counter()
                for d in docs:
                    documents[d.doc_id] = d.to_dict() if hasattr(d, "to_dict") else asdict(d)
                for c in chunk_documents(docs, max_tokens=self.config.max_tokens, overlap=self.config.overlap):
                    meta = c.to_metadata(include_text=False)
                    meta.pop("extra", None)
                    chunks.append({"id": c.chunk_id, "text": c.text, "meta": meta})
                for r in roles:
                    keys: dict[str, list[str]] = {}
                    shown: dict[str, str] = {}
                    for d in docs:
                        if d.role != r or not d.focus:
                            continue
                        nk = _norm_key(d.focus)
                        shown.setdefault(nk, d.focus.strip())
                        keys.setdefault(shown[nk], []).append(d.doc_id)
                    entities[r] = keys
                timings["chunk"] = time.perf_counter() - t
            hook("corpus")
            if "G" in sources:
                t = time.perf_counter()
                kg = self.kg
                keys = {}
                shown = {}
                meta_g: dict[str, dict[str, Any]] = {}
                cats = set(self.config.g_categories)
                only = set(self.config.g_concepts) if self.config.g_concepts else None
                vocab = [e for e in kg.vocabulary() if only is None or e.id in only]
                for e in vocab:
                    if cats and e.category not in cats:
                        continue
                    for s in (e.name, *(e.synonyms or ())):
                        if not s or not s.strip():
                            continue
                        nk = _norm_key(s)
                        k = shown.setdefault(nk, s.strip())
                        ids = keys.setdefault(k, [])
                        if e.id not in ids:
                            ids.append(e.id)
                        meta_g.setdefault(e.id, {"name": e.name, "category": e.category})
                entities["G"] = keys
                entity_meta["G"] = meta_g
                n_cards = 0
                for e in vocab:
                    if e.category != "disease":
                        continue
                    c = kg.concept(e.id)
                    if c is None:
                        continue
                    text, content = concept_card(kg, c, self.config)
                    if content < self.config.card_min_content:
                        continue
                    meta = {"role": "G", "doc_id": c.id, "concept_id": c.id, "title": c.name, "focus": c.name,
                            "section": "concept card", "category": c.category,
                            "organisation": "knowledge graph", "license": _concept_license(c),
                            "evidence_type": "knowledge graph concept", "start": 0, "end": len(text),
                            "sources": list(getattr(c, "sources", ()) or ())}
                    chunks.append({"id": f"{c.id}#card", "text": text, "meta": meta})
                    documents[c.id] = {"doc_id": c.id, "role": "G", "title": c.name, "text": text,
                                       "concept_id": c.id, "category": c.category}
                    n_cards += 1
                stats["cards"] = n_cards
                timings["kg_entities_cards"] = time.perf_counter() - t
            hook("kg")

            # ---- embed (cache first): document leads or chunks, then entity keys ----
            t = time.perf_counter()
            chunk_texts = [chunk_index_text(c["meta"], c["text"]) for c in chunks]
            dense_rows = dense_rows_of(chunks, self.config.dense_unit)
            max_tok = self.config.dense_max_tokens if self.config.dense_unit == "lead" else None
            vec_cats = set(self.config.g_entity_vectors)
            ent_lists = {s: [k for k in entities[s]
                             if s != "G" or entity_meta["G"].get(entities[s][k][0], {}).get("category") in vec_cats]
                         for s in entities}
            vecs = self._embed([chunk_texts[i] for i in dense_rows], stats, progress, max_tokens=max_tok)
            ent_vecs = self._embed([k for s in ent_lists for k in ent_lists[s]], stats, progress)
            timings["embed"] = time.perf_counter() - t
            hook("embedded")

            # ---- dense store (HNSW graphs for the large collections) ----
            t = time.perf_counter()
            store = self._open_store(tmp / "store", autoflush=False)
            if dense_rows:
                store.upsert(CHUNKS, [chunks[i]["id"] for i in dense_rows], vecs,
                             [{**chunks[i]["meta"], "chunk_id": chunks[i]["id"]} for i in dense_rows])
            off = 0
            for s, keys_list in ent_lists.items():
                n = len(keys_list)
                if n:
                    metas = [{"key": k, "ids": entities[s][k], "source": s} for k in keys_list]
                    store.upsert(f"entities_{s}", [f"{s}:{i}" for i in range(n)], ent_vecs[off: off + n], metas)
                off += n
            store.flush()
            timings["store"] = time.perf_counter() - t
            hook("store")

            # ---- BM25 ----
            t = time.perf_counter()
            import bm25s  # noqa: PLC0415

            retriever = bm25s.BM25()
            if chunks:
                retriever.index([bm25_tokens(x) for x in chunk_texts], show_progress=False)
                retriever.save(str(tmp / "bm25"), show_progress=False)
            for s, keys in entities.items():      # the name index: BM25 over entity key words, per source
                if keys:
                    names = bm25s.BM25()
                    names.index([bm25_tokens(k) or ["_"] for k in keys], show_progress=False)
                    names.save(str(tmp / f"names_{s}"), show_progress=False)
            timings["bm25"] = time.perf_counter() - t
            hook("bm25")

            # ---- texts, documents, manifest ----
            with open(tmp / "chunks.pkl", "wb") as fh:
                pickle.dump(chunks, fh, protocol=pickle.HIGHEST_PROTOCOL)
            with open(tmp / "documents.pkl", "wb") as fh:
                pickle.dump(documents, fh, protocol=pickle.HIGHEST_PROTOCOL)
            with open(tmp / "entities.pkl", "wb") as fh:
                pickle.dump({"entities": entities, "meta": entity_meta}, fh, protocol=pickle.HIGHEST_PROTOCOL)
            counts = {"chunks": len(chunks),
                      "chunks_by_role": {r: sum(1 for c in chunks if c["meta"].get("role") == r)
                                         for r in SOURCES if r in sources},
                      "documents": len(documents),
                      "entities": {s: len(v) for s, v in entities.items()}}
            manifest = {"version": versions["version"], "versions": versions, "sources": list(sources),
                        "model": self.embedder.name, "embedder_spec": self.config.embedder,
                        "dim": int(vecs.shape[1]) if len(vecs) else int(self.embedder.dim),
                        "config": self.config.to_dict(), "counts": counts, "store": self.store_name,
                        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                        "build_seconds": round(time.perf_counter() - t0, 2), "timings": timings,
                        "embedded": stats["embedded"], "cached": stats["cached"]}
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
            hook("written")
            atomic.swap_in(tmp, self.root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        with self._lock:
            self._loaded = False
        self.last_build = {"skipped": False, "seconds": time.perf_counter() - t0, "version": versions["version"],
                           "counts": counts, "embedded": stats["embedded"], "cached": stats["cached"],
                           "timings": timings}
        return self.last_build

    def _embed(self, texts: list[str], stats: dict[str, Any], progress: bool,
               max_tokens: int | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        # sort by length so batches hold similar lengths (less padding); restore order afterwards
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        cache = self._cache or EmbeddingCache()
        try:
            vecs_sorted = embed_cached(self.embedder, [texts[i] for i in order], cache=cache,
                                       batch_size=self.config.batch_size, progress=progress, stats=stats,
                                       max_tokens=max_tokens)
        finally:
            if self._cache is None:
                cache.close()
        out = np.empty_like(vecs_sorted)
        out[np.asarray(order)] = vecs_sorted
        return out

    def _remove_stale_tmp(self) -> None:
        """Remove build folders left by killed builds (their process is gone)."""
        for p in self.root.parent.glob(f".{self.root.name}.tmp-*"):
            try:
                pid = int(p.name.rsplit(".tmp-", 1)[1].split("-")[0])
                os.kill(pid, 0)
                continue                      # still building
            except (ValueError, IndexError):
                pass                          # not ours / old naming: remove
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
            shutil.rmtree(p, ignore_errors=True)

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
            ks = set(bm25_tokens(keys[i]))
            dice = 2 * len(qs & ks) / (len(qs) + len(ks)) if ks else 0.0
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
            cand = np.flatnonzero(bm_scores > 0 if mask is None else (bm_scores > 0) & mask)
            if len(cand) > depth:
                cand = cand[np.argpartition(-bm_scores[cand], depth - 1)[:depth]]
            top = cand[np.argsort(-bm_scores[cand], kind="stable")]
            bm_rank = dict(zip(top.tolist(), range(1, len(top) + 1)))
        dense: dict[int, float] = {}
        dn_rank: dict[int, int] = {}
        if mode in ("hybrid", "dense"):
            qv = self._qvecs([query])[0]
            store_filters: dict[str, Any] = dict(filters or {})
            if sources:
                store_filters["role"] = [x.upper() for x in sources]
            hits = self._store.search(CHUNKS, qv, k=depth, filters=store_filters or None)
            # with document-lead vectors a dense hit stands for its document: credit the document's best BM25
            # chunk when it has one (so both rankings vote for the same chunk), else the lead chunk itself
            best_of_doc: dict[str, int] = {}
            for i in sorted(bm_rank, key=bm_rank.get):
                best_of_doc.setdefault(self._doc_of[i], i)
            for r, h in enumerate(hits):
                i = self._chunk_pos[h.id]
                i = best_of_doc.get(self._doc_of[i], i)
                if i in dense:
                    continue
                dense[i] = h.score
                dn_rank[i] = r + 1
        # fuse
        if mode == "bm25":
            cand = sorted(bm_rank, key=bm_rank.get)
            scored = [(i, float(bm_scores[i])) for i in cand]
        elif mode == "dense":
            scored = sorted(dense.items(), key=lambda x: -x[1])
        elif fusion == "rrf":
            fused: dict[int, float] = {}
            for ranks in (bm_rank, dn_rank):
                for i, r in ranks.items():
                    fused[i] = fused.get(i, 0.0) + 1.0 / (rrf_k + r)
            scored = sorted(fused.items(), key=lambda x: (-x[1], min(bm_rank.get(x[0], 1 << 30),
                                                                        dn_rank.get(x[0], 1 << 30))))
        else:
            cand = list(dict.fromkeys([*bm_rank, *dn_rank]))
            b = np.array([bm_scores[i] for i in cand], dtype=np.float32)
            dvals = np.array([dense.get(i, np.nan) for i in cand], dtype=np.float32)
            if np.isnan(dvals).any():
                floor = np.nanmin(dvals) if not np.isnan(dvals).all() else 0.0
                dvals = np.where(np.isnan(dvals), floor, dvals)
            f = alpha * _minmax(dvals) + (1 - alpha) * _minmax(b)
            scored = sorted(zip(cand, f.tolist()), key=lambda x: -x[1])
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


def dense_rows_of(chunks: Sequence[dict[str, Any]], unit: str) -> list[int]:
    """Rows of ``chunks`` that get a dense vector: every chunk, or ("lead") the first chunk of each document."""
    if unit == "chunk":
        return list(range(len(chunks)))
    if unit != "lead":
        raise ValueError(f"dense_unit must be 'lead' or 'chunk', not {unit!r}")
    seen: set[str] = set()
    rows = []
    for i, c in enumerate(chunks):
        doc = c["meta"].get("doc_id", c["id"].split("#")[0])
        if doc not in seen:
            seen.add(doc)
            rows.append(i)
    return rows


def _concept_license(c: Any) -> str:
    """Licenses of the catalog sources a concept comes from (e.g. "CC0-1.0; HPO license ...")."""
    from .sources import CATALOG  # noqa: PLC0415

    lic = sorted({CATALOG[s].license for s in (getattr(c, "sources", None) or ()) if s in CATALOG})
    return "; ".join(lic)

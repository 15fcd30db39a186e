"""Building the index: load and chunk the corpus, KG entity keys and concept cards, embed (cache first), the
dense store, BM25 over chunks and over entity names, then swap the finished folder in. Versioned: a build
whose inputs (source checksums, KG version, model, every ``IndexConfig`` field) did not change is skipped."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .. import atomic
from ..embeddings import EmbeddingCache, embed_cached
from ..kg.vocab import NCIT_LICENSE, NCIT_ORGANISATION, ncit_definitions, ncit_url
from ..text import bm25_tokens
from .config import CHUNKS, SOURCES
from .text import _concept_license, _norm_key, chunk_index_text, concept_card, dense_rows_of

log = logging.getLogger(__name__)


def _source_checksum(source_id: str) -> str:
    """Checksum of a catalog source: ``sources.checksums`` when available, else hashed here."""
    from .. import sources  # noqa: PLC0415

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
    return atomic.file_sha256(p)


def build_index(ix: Any, sources: Sequence[str] = SOURCES, rebuild: bool = False, progress: bool = True,
                _hook: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Build the index (skipped when the current one has the same version, unless ``rebuild``).

    Returns build stats: skipped, seconds, counts, embedded (texts through the model), cached.
    ``_hook(stage)`` is called between stages (used by tests to interrupt a build)."""
    sources = tuple(s.upper() for s in sources)
    bad = [s for s in sources if s not in SOURCES]
    if bad or not sources:
        raise ValueError(f"unknown source(s) {bad or sources}; choose from G, B, O")
    t0 = time.perf_counter()
    versions = ix.compute_versions(sources)
    if not rebuild and ix.exists():
        m = ix.manifest()
        if m.get("version") == versions["version"]:
            ix.last_build = {"skipped": True, "seconds": time.perf_counter() - t0, "version": m["version"],
                               "counts": m["counts"], "embedded": 0, "cached": 0}
            return ix.last_build
    hook = _hook or (lambda stage: None)
    ix.root.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(ix.root)
    tmp = atomic.new_tmp_dir(ix.root)
    stats: dict[str, Any] = {"embedded": 0, "cached": 0}
    timings: dict[str, float] = {}
    try:
        t = time.perf_counter()
        chunks: list[dict[str, Any]] = []      # {"id", "text", "meta"}
        documents: dict[str, dict[str, Any]] = {}
        entities: dict[str, dict[str, list[str]]] = {}   # source -> key -> ids
        entity_meta: dict[str, dict[str, dict[str, Any]]] = {}
        if "B" in sources or "O" in sources:
            from ..corpus import chunk_documents, load_documents  # noqa: PLC0415

            roles = tuple(r for r in ("B", "O") if r in sources)
            docs = load_documents(roles=roles, limit=ix.config.doc_limit,
                                  organisations=ix.config.organisations)
            if ix.config.per_organisation_limit is not None:
                per: dict[str, int] = {}
                kept = []
                for d in docs:
                    per[d.organisation] = per.get(d.organisation, 0) + 1
                    if per[d.organisation] <= ix.config.per_organisation_limit:
                        kept.append(d)
                docs = kept
            if not docs:
                raise RuntimeError(f"no MedQuAD documents for roles {roles} / organisations "
                                   f"{ix.config.organisations}")
            timings["load_corpus"] = time.perf_counter() - t
            t = time.perf_counter()
            for d in docs:
                documents[d.doc_id] = d.to_dict() if hasattr(d, "to_dict") else asdict(d)
            for c in chunk_documents(docs, max_tokens=ix.config.max_tokens, overlap=ix.config.overlap):
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
            kg = ix.kg
            keys = {}
            shown = {}
            meta_g: dict[str, dict[str, Any]] = {}
            cats = set(ix.config.g_categories)
            only = set(ix.config.g_concepts) if ix.config.g_concepts else None
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
                text, content = concept_card(kg, c, ix.config)
                if content < ix.config.card_min_content:
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
            n_defs = 0
            if ix.config.g_definitions:
                # the NCI Thesaurus definitions the graph keeps for its diseases: citable reference text
                for cid, name, did, text in ncit_definitions(kg, only):
                    if did in documents:
                        continue
                    meta = {"role": "G", "doc_id": did, "concept_id": cid, "title": name, "focus": name,
                            "section": "definition", "category": "disease", "organisation": NCIT_ORGANISATION,
                            "license": NCIT_LICENSE, "evidence_type": "definition", "start": 0, "end": len(text),
                            "url": ncit_url(did), "sources": ["ncit"]}
                    chunks.append({"id": f"{cid}#{did}", "text": text, "meta": meta})
                    documents[did] = {"doc_id": did, "role": "G", "title": name, "text": text, "concept_id": cid,
                                      "category": "disease", "url": meta["url"], "organisation": NCIT_ORGANISATION}
                    n_defs += 1
            stats["definitions"] = n_defs
            timings["kg_entities_cards"] = time.perf_counter() - t
        hook("kg")

        # ---- embed (cache first): document leads or chunks, then entity keys ----
        t = time.perf_counter()
        chunk_texts = [chunk_index_text(c["meta"], c["text"]) for c in chunks]
        dense_rows = dense_rows_of(chunks, ix.config.dense_unit)
        max_tok = ix.config.dense_max_tokens if ix.config.dense_unit == "lead" else None
        vec_cats = set(ix.config.g_entity_vectors)
        ent_lists = {s: [k for k in entities[s]
                         if s != "G" or entity_meta["G"].get(entities[s][k][0], {}).get("category") in vec_cats]
                     for s in entities}
        vecs = embed_texts(ix, [chunk_texts[i] for i in dense_rows], stats, progress, max_tokens=max_tok)
        ent_vecs = embed_texts(ix, [k for s in ent_lists for k in ent_lists[s]], stats, progress)
        timings["embed"] = time.perf_counter() - t
        hook("embedded")

        # ---- dense store (HNSW graphs for the large collections) ----
        t = time.perf_counter()
        store = ix._open_store(tmp / "store", autoflush=False)
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
                    "model": ix.embedder.name, "embedder_spec": ix.config.embedder,
                    "dim": int(vecs.shape[1]) if len(vecs) else int(ix.embedder.dim),
                    "config": ix.config.to_dict(), "counts": counts, "store": ix.store_name,
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "build_seconds": round(time.perf_counter() - t0, 2), "timings": timings,
                    "embedded": stats["embedded"], "cached": stats["cached"]}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        hook("written")
        atomic.swap_in(tmp, ix.root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    with ix._lock:
        ix._loaded = False
    ix.last_build = {"skipped": False, "seconds": time.perf_counter() - t0, "version": versions["version"],
                       "counts": counts, "embedded": stats["embedded"], "cached": stats["cached"],
                       "timings": timings}
    return ix.last_build


def embed_texts(ix: Any, texts: list[str], stats: dict[str, Any], progress: bool,
           max_tokens: int | None = None) -> np.ndarray:
    if not texts:
        return np.zeros((0, ix.embedder.dim), dtype=np.float32)
    # sort by length so batches hold similar lengths (less padding); restore order afterwards
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    cache = ix._cache or EmbeddingCache()
    try:
        vecs_sorted = embed_cached(ix.embedder, [texts[i] for i in order], cache=cache,
                                   batch_size=ix.config.batch_size, progress=progress, stats=stats,
                                   max_tokens=max_tokens)
    finally:
        if ix._cache is None:
            cache.close()
    out = np.empty_like(vecs_sorted)
    out[np.asarray(order)] = vecs_sorted
    return out

def remove_stale_tmp(root: Path) -> None:
    """Remove build folders left by killed builds (their process is gone)."""
    for p in root.parent.glob(f".{root.name}.tmp-*"):
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

"""Knowledge-layer benchmark: cold index build, warm rebuild, KG load, hybrid search latency, peak RSS.

    python benchmarks/bench_knowledge.py [--cold] [--sources G,B,O] [--queries 200] [--json out.json]
        [--organisations CDC,NHLBI] [--per-organisation-limit N] [--g-first N]   # a subset

``--cold`` deletes the index and the embedding cache of the current ``$CLINICALRAG_HOME`` first (the KG
artefact and the downloaded sources are kept). Latency is measured on distinct queries (MedQuAD questions
and short clinical phrases), so the query-embedding cache does not help; a second pass shows the cached
case.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _rss_peak_mb() -> float:
    import resource  # noqa: PLC0415

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true", help="delete index + embedding cache first")
    ap.add_argument("--sources", default="G,B,O")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", default=None)
    ap.add_argument("--organisations", default=None, help="comma-separated MedQuAD organisations (default: all)")
    ap.add_argument("--per-organisation-limit", type=int, default=None, help="first N documents per organisation")
    ap.add_argument("--g-first", type=int, default=None, help="only the first N KG concepts (default: all)")
    args = ap.parse_args(argv)
    from knowledge import paths  # noqa: PLC0415

    out: dict = {"cpu_count": os.cpu_count(), "load_avg_start": os.getloadavg()}
    if args.cold:
        shutil.rmtree(paths.build_dir() / "index", ignore_errors=True)
        for suffix in ("", "-wal", "-shm"):
            (paths.build_dir() / f"embedding-cache.sqlite{suffix}").unlink(missing_ok=True)

    from knowledge.kg import load_or_build  # noqa: PLC0415

    load_or_build()  # make sure the artefact exists; then time a fresh load in this process
    t = time.perf_counter()
    kg = load_or_build()
    out["kg_load_s"] = time.perf_counter() - t

    from knowledge.index import IndexConfig, KnowledgeIndex  # noqa: PLC0415

    sources = tuple(s.strip().upper() for s in args.sources.split(","))
    cfg = IndexConfig(
        organisations=tuple(args.organisations.split(",")) if args.organisations else None,
        per_organisation_limit=args.per_organisation_limit,
        g_concepts=tuple(e.id for e in kg.vocabulary()[: args.g_first]) if args.g_first else None)
    out["config"] = cfg.to_dict() | {"g_concepts": args.g_first}

    def KnowledgeIndex_(**kw):  # noqa: N802
        return KnowledgeIndex(kg=kg, config=cfg, **kw)

    ix = KnowledgeIndex_()
    t = time.perf_counter()
    cold = ix.build(sources=sources, progress=True)
    out["build_s"] = time.perf_counter() - t
    out["build"] = {k: v for k, v in cold.items() if k != "counts"} | {"counts": cold["counts"]}
    if not cold["skipped"] and cold["embedded"]:
        out["embed_texts_per_s"] = cold["embedded"] / max(1e-9, cold["timings"]["embed"])
    t = time.perf_counter()
    warm = KnowledgeIndex_().build(sources=sources, progress=False)
    out["warm_build_s"] = time.perf_counter() - t
    out["warm_skipped"] = warm["skipped"]
    t = time.perf_counter()
    forced = KnowledgeIndex_().build(sources=sources, rebuild=True, progress=False)
    out["rebuild_from_cache_s"] = time.perf_counter() - t
    out["rebuild_embedded"] = forced["embedded"]

    t = time.perf_counter()
    ix = KnowledgeIndex_().open()
    out["open_s"] = time.perf_counter() - t
    # distinct queries: MedQuAD questions (a sample) + short phrases
    from knowledge.corpus import load_documents  # noqa: PLC0415

    docs = [d for d in load_documents(organisations=cfg.organisations) if ix.document(d.doc_id) is not None]
    qs = [d.question for d in docs if d.question]
    random.Random(7).shuffle(qs)
    qs = list(dict.fromkeys(qs))[: args.queries]
    ix.search("warm up", k=10)
    lat, lat_embed = [], []
    for q in qs:
        t = time.perf_counter()
        ix.embedder.embed([q])
        lat_embed.append((time.perf_counter() - t) * 1000)
    for q in qs:
        t = time.perf_counter()
        ix.search(q + " ", k=10)       # trailing space: a new string, so not in the query cache
        lat.append((time.perf_counter() - t) * 1000)
    cached = []
    for q in qs:
        t = time.perf_counter()
        ix.search(q + " ", k=10)
        cached.append((time.perf_counter() - t) * 1000)
    out["search_ms"] = {"n": len(qs), "p50": statistics.median(lat), "p95": _pct(lat, 95),
                        "query_embedding_p50": statistics.median(lat_embed),
                        "cached_embedding_p50": statistics.median(cached), "cached_embedding_p95": _pct(cached, 95)}
    ent = []
    for q in qs[:50]:
        t = time.perf_counter()
        ix.entity_search(q + "  ", k=5)
        ent.append((time.perf_counter() - t) * 1000)
    out["entity_search_ms"] = {"p50": statistics.median(ent), "p95": _pct(ent, 95)}
    out["peak_rss_mb"] = _rss_peak_mb()
    out["index_size_mb"] = ix.status()["size_bytes"] / 1e6
    out["load_avg_end"] = os.getloadavg()
    print(json.dumps(out, indent=2, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Entity linking: does a phrase (clinical or lay wording) reach its knowledge-graph concept?

Gold set: ``tests/cases/entity_linking.yaml`` (phrase -> acceptable concept names; a gold concept is any KG
concept carrying one of those names or synonyms). Methods, each returning concepts best first:

- ``index``: ``KnowledgeIndex.entity_search`` as built by default: the name index (exact normalised name, then
  BM25 over name words scored by word overlap) merged with dense neighbours among the embedded categories
  (``IndexConfig.g_entity_vectors``, symptoms by default);
- ``dense``: every G name and synonym embedded with the index's embedder, exact cosine search (the old way;
  costs one vector per name at build time);
- ``names+dense``: an exact name first, else the dense neighbours.

    python benchmarks/linking_eval.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CASES = Path(__file__).resolve().parent.parent / "tests" / "cases" / "entity_linking.yaml"


def load_cases(path: Path = CASES) -> list[dict]:
    import yaml  # noqa: PLC0415

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def gold_ids(kg, names: list[str]) -> set[str]:
    out: set[str] = set()
    for n in names:
        out.update(c.id for c in kg.lookup(n))
    return out


def score(ranked: list[list[str]], golds: list[set[str]], cases: list[dict]) -> dict:
    res: dict = {}
    for kind in ("all", "clinical", "lay"):
        rows = [(r, g) for r, g, c in zip(ranked, golds, cases) if kind == "all" or c["kind"] == kind]
        if not rows:
            continue
        res[kind] = {"n": len(rows),
                     "acc@1": sum(bool(r[:1] and r[0] in g) for r, g in rows) / len(rows),
                     "acc@5": sum(bool(set(r[:5]) & g) for r, g in rows) / len(rows)}
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import numpy as np  # noqa: PLC0415

    from knowledge.embeddings import EmbeddingCache, embed_cached  # noqa: PLC0415
    from knowledge.index import KnowledgeIndex, _norm_key  # noqa: PLC0415

    ix = KnowledgeIndex().open()
    kg = ix.kg
    cases = load_cases()
    golds = [gold_ids(kg, c["gold"]) for c in cases]
    missing = [c["phrase"] for c, g in zip(cases, golds) if not g]
    keep = [i for i, g in enumerate(golds) if g]
    cases = [cases[i] for i in keep]
    golds = [golds[i] for i in keep]
    phrases = [c["phrase"] for c in cases]

    out: dict = {"cases": len(cases), "gold_not_in_kg": missing, "methods": {}}
    t = time.perf_counter()
    names_ranked = []
    for p in phrases:
        hits = ix.entity_search(p, k=5, sources=["G"], with_knowledge=False)["G"]
        names_ranked.append([h.concept_id for h in hits])
    out["methods"]["index"] = score(names_ranked, golds, cases) | {"ms_per_phrase": 1000 * (time.perf_counter() - t) / len(phrases)}

    keys = list(ix._entities["G"])
    t = time.perf_counter()
    cache = EmbeddingCache()
    vecs = embed_cached(ix.embedder, keys, cache=cache, progress=True)
    cache.close()
    embed_s = time.perf_counter() - t
    q = ix.embedder.embed(phrases)
    sims = q @ vecs.T
    dense_ranked = []
    for row in sims:
        order = np.argsort(-row)[:60]
        ids: list[str] = []
        for j in order:
            cid = ix._entities["G"][keys[j]][0]
            if cid not in ids:
                ids.append(cid)
            if len(ids) == 5:
                break
        dense_ranked.append(ids)
    out["methods"]["dense"] = score(dense_ranked, golds, cases) | {"embed_seconds_all_names": embed_s,
                                                                   "names_embedded": len(keys)}
    norm = {_norm_key(k): k for k in keys}
    mixed = []
    for p, d in zip(phrases, dense_ranked):
        exact = norm.get(_norm_key(p))
        first = [ix._entities["G"][exact][0]] if exact else []
        mixed.append(list(dict.fromkeys(first + d))[:5])
    out["methods"]["names+dense"] = score(mixed, golds, cases)
    out["failures"] = {"index": [(p, r[:3]) for p, r, g in zip(phrases, names_ranked, golds) if not set(r[:5]) & g],
                       "dense": [(p, r[:3]) for p, r, g in zip(phrases, dense_ranked, golds) if not set(r[:5]) & g]}
    print(f"{len(cases)} phrases with a gold concept in the KG ({len(missing)} without: {missing})")
    print("| method | all acc@1 | all acc@5 | clinical acc@5 | lay acc@5 |")
    print("|---|---|---|---|---|")
    for m, r in out["methods"].items():
        print(f"| {m} | {r['all']['acc@1']:.3f} | {r['all']['acc@5']:.3f} | {r['clinical']['acc@5']:.3f} | "
              f"{r['lay']['acc@5']:.3f} |")
    print(f"dense: {len(keys):,} names embedded in {embed_s:.0f} s")
    for m, fails in out["failures"].items():
        print(f"misses ({m}): " + "; ".join(p for p, _ in fails))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

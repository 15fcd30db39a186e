"""Retrieval quality of the knowledge index on a labelled query set built from MedQuAD itself.

Queries: a seeded sample of MedQuAD questions (the *original* variant), each relevant to its own
answer document; plus *synonym* variants (the focus swapped for a knowledge-graph synonym, where the KG
knows one) and *paraphrase* variants (a deterministic rewrite of the question template per question type,
e.g. "What are the symptoms of X ?" -> "How does X present?").

Relevance. Rankings are collapsed to documents (a document is hit when any of its chunks is). *strict*: the
only relevant document is the query's own. *lenient*: also every document with the same normalised focus
and question type (MedQuAD repeats questions across sites, e.g. GARD and GHR both answer "What is X?"),
and every document with an identical answer text.

Metrics (cut at 10): Recall@1, Recall@10 (= hit rate: share of queries with a relevant document in the top
k), MRR@10, NDCG@10 (binary gains). Modes: bm25, dense, hybrid RRF, hybrid alpha=0.5.

    python benchmarks/retrieval_eval.py [--n 300] [--seed 13] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PARAPHRASES: dict[str, str] = {
    "information": "Can you explain what {f} is?",
    "symptoms": "How does {f} present?",
    "causes": "Why does someone get {f}?",
    "exams and tests": "Which tests are used to detect {f}?",
    "treatment": "How can {f} be managed?",
    "inheritance": "Can {f} be passed down in families?",
    "genetic changes": "Which gene mutations lead to {f}?",
    "frequency": "How common is {f}?",
    "outlook": "What is the prognosis of {f}?",
    "susceptibility": "Who is likely to develop {f}?",
    "prevention": "Can {f} be avoided?",
    "stages": "How is {f} staged?",
    "research": "Are there studies or clinical trials on {f}?",
    "complications": "What problems can {f} lead to?",
    "considerations": "What should I know about living with {f}?",
    "support groups": "Where can I find support for {f}?",
}

MODES: list[tuple[str, dict[str, Any]]] = [
    ("bm25", {"mode": "bm25"}),
    ("dense", {"mode": "dense"}),
    ("hybrid_rrf", {"mode": "hybrid", "fusion": "rrf"}),
    ("hybrid_alpha", {"mode": "hybrid", "fusion": "alpha", "alpha": 0.5}),
]


@dataclass
class Query:
    qid: str
    text: str
    variant: str                 # original | synonym | paraphrase
    doc_id: str
    strict: set[str]
    lenient: set[str] = field(default_factory=set)


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


def _replace_focus(question: str, focus: str, new: str) -> str | None:
    pat = re.compile(re.escape(focus), re.IGNORECASE)
    if not pat.search(question):
        return None
    return pat.sub(new, question, count=1)


def build_queries(docs: Sequence[Any], n: int = 300, seed: int = 13, kg: Any = None) -> list[Query]:
    """``n`` sampled original questions plus their synonym and paraphrase variants."""
    by_key: dict[tuple[str, str], set[str]] = defaultdict(set)
    by_text: dict[str, set[str]] = defaultdict(set)
    for d in docs:
        by_key[(_norm(d.focus), d.question_type)].add(d.doc_id)
        by_text[_norm(d.text)].add(d.doc_id)
    cands = [d for d in docs if d.question and d.focus]
    rng = random.Random(seed)
    sample = rng.sample(cands, min(n, len(cands)))
    out: list[Query] = []
    for d in sample:
        lenient = {d.doc_id} | by_key[(_norm(d.focus), d.question_type)] | by_text[_norm(d.text)]
        q = " ".join(d.question.split())
        out.append(Query(f"{d.doc_id}:orig", q, "original", d.doc_id, {d.doc_id}, lenient))
        tmpl = PARAPHRASES.get(d.question_type)
        if tmpl:
            out.append(Query(f"{d.doc_id}:para", tmpl.format(f=d.focus.strip()), "paraphrase", d.doc_id,
                             {d.doc_id}, lenient))
        if kg is not None:
            syn = _synonym(kg, d.focus)
            if syn:
                text = _replace_focus(q, d.focus.strip(), syn)
                if text:
                    out.append(Query(f"{d.doc_id}:syn", text, "synonym", d.doc_id, {d.doc_id}, lenient))
    return out


def _synonym(kg: Any, focus: str) -> str | None:
    """A KG synonym of the focus that differs from it (first exact match concept; deterministic)."""
    try:
        concepts = kg.lookup(focus)
    except Exception:  # noqa: BLE001
        return None
    f = _norm(focus)
    for c in concepts[:1]:
        names = [c.name, *c.synonyms]
        for s in names:
            if _norm(s) != f and len(s) >= 3 and "(" not in s and f not in _norm(s) and _norm(s) not in f:
                return s
    return None


def _doc_ranking(hits: Iterable[Any], k: int) -> list[str]:
    seen: list[str] = []
    for h in hits:
        d = h.metadata.get("doc_id") or h.chunk_id.split("#")[0]
        if d not in seen:
            seen.append(d)
        if len(seen) >= k:
            break
    return seen


def metrics(ranking: list[str], relevant: set[str], k: int = 10) -> dict[str, float]:
    top = ranking[:k]
    first = next((i for i, d in enumerate(top) if d in relevant), None)
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(top) if d in relevant)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return {"R@1": float(first == 0), "R@10": float(first is not None),
            "MRR@10": 0.0 if first is None else 1.0 / (first + 1), "NDCG@10": dcg / idcg if idcg else 0.0}


def evaluate(index: Any, queries: Sequence[Query], modes: Sequence[tuple[str, dict]] = MODES,
             k: int = 10, depth: int = 30) -> dict[str, Any]:
    """Metrics per mode, relevance (strict/lenient) and variant (plus 'all')."""
    res: dict[str, Any] = {}
    for name, kw in modes:
        sums: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        counts: dict[str, int] = defaultdict(int)
        t0 = time.perf_counter()
        for q in queries:
            hits = index.search(q.text, k=depth, **kw)
            ranking = _doc_ranking(hits, k)
            for rel_name, rel in (("strict", q.strict), ("lenient", q.lenient)):
                m = metrics(ranking, rel, k)
                for v in ("all", q.variant):
                    for key, val in m.items():
                        sums[(rel_name, v)][key] += val
            counts["all"] += 1
            counts[q.variant] += 1
        elapsed = time.perf_counter() - t0
        out: dict[str, Any] = {"ms_per_query": 1000 * elapsed / max(1, len(queries))}
        for (rel_name, v), m in sums.items():
            out.setdefault(rel_name, {})[v] = {key: val / counts[v] for key, val in m.items()} | {"n": counts[v]}
        res[name] = out
    return res


def format_table(res: dict[str, Any], relevance: str = "strict") -> str:
    variants = ["all", "original", "synonym", "paraphrase"]
    lines = [f"| mode | variant | n | R@1 | R@10 | MRR@10 | NDCG@10 |", "|---|---|---|---|---|---|---|"]
    for mode, r in res.items():
        for v in variants:
            m = r.get(relevance, {}).get(v)
            if not m:
                continue
            lines.append(f"| {mode} | {v} | {m['n']} | {m['R@1']:.3f} | {m['R@10']:.3f} | {m['MRR@10']:.3f} | "
                         f"{m['NDCG@10']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="sampled MedQuAD questions (default 300)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--json", default=None, help="write the full results here")
    args = ap.parse_args(argv)
    from knowledge.corpus import load_documents  # noqa: PLC0415
    from knowledge.index import KnowledgeIndex  # noqa: PLC0415

    ix = KnowledgeIndex().open()
    roles = [r for r in ("B", "O") if r in ix.sources]
    cfg = ix.manifest()["config"]
    docs = load_documents(roles=roles, organisations=cfg.get("organisations"))
    docs = [d for d in docs if ix.document(d.doc_id) is not None]
    kg = ix.kg if "G" in ix.sources else None
    if kg is None:
        from knowledge.kg import load_or_build  # noqa: PLC0415

        kg = load_or_build()
    queries = build_queries(docs, n=args.n, seed=args.seed, kg=kg)
    print(f"{len(queries)} queries over {len(docs)} documents "
          f"({sum(q.variant == 'synonym' for q in queries)} synonym, "
          f"{sum(q.variant == 'paraphrase' for q in queries)} paraphrase variants)")
    res = evaluate(ix, queries)
    for rel in ("strict", "lenient"):
        print(f"\n## {rel} relevance\n")
        print(format_table(res, rel))
    print("\nms/query: " + ", ".join(f"{m} {r['ms_per_query']:.1f}" for m, r in res.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"n_queries": len(queries), "results": res}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Retrieval quality on labelled MedQuAD queries (see benchmarks/retrieval_eval.py and docs/retrieval.md).

Fast variant: the small subset index of the index tests (160 documents). Slow variant: the full default
index (built with `clinicalrag index build`), >= 200 sampled questions plus their variants."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import _index_subset as subset  # noqa: E402

from benchmarks.retrieval_eval import MODES, build_queries, evaluate, metrics  # noqa: E402


def test_metrics_arithmetic():
    m = metrics(["a", "b", "c"], {"b"}, k=10)
    assert m == {"R@1": 0.0, "R@10": 1.0, "MRR@10": 0.5, "NDCG@10": pytest.approx(1 / 1.5849625, rel=1e-6)}
    assert metrics(["x"], {"b"})["R@10"] == 0.0


def test_query_variants_are_deterministic():
    from knowledge.corpus import load_documents

    docs = load_documents(organisations=("NHLBI",), limit=120)
    a = build_queries(docs, n=40, seed=3, kg=subset.kg())
    b = build_queries(docs, n=40, seed=3, kg=subset.kg())
    assert [(q.qid, q.text) for q in a] == [(q.qid, q.text) for q in b]
    variants = {q.variant for q in a}
    assert {"original", "paraphrase", "synonym"} <= variants
    for q in a:
        assert q.doc_id in q.strict and q.strict <= q.lenient


def test_hybrid_recall_on_subset_index():
    ix, _ = subset.built()
    from knowledge.corpus import load_documents

    docs = [d for d in load_documents(organisations=subset.ORGS) if ix.document(d.doc_id) is not None]
    queries = build_queries(docs, n=80, seed=13, kg=subset.kg())
    res = evaluate(ix, queries, modes=[m for m in MODES if m[0] in ("bm25", "hybrid_rrf")])
    hybrid = res["hybrid_rrf"]["strict"]["all"]
    assert hybrid["n"] == len(queries) >= 150
    assert hybrid["R@10"] >= 0.85, res
    assert res["hybrid_rrf"]["strict"]["original"]["R@10"] >= 0.9
    assert res["hybrid_rrf"]["lenient"]["all"]["R@10"] >= hybrid["R@10"]


@pytest.mark.slow
def test_hybrid_recall_full_index():
    from knowledge.corpus import load_documents
    from knowledge.index import KnowledgeIndex

    ix = KnowledgeIndex()
    if not ix.exists():
        pytest.skip("full index not built (clinicalrag index build)")
    ix.open()
    docs = load_documents(roles=[r for r in ("B", "O") if r in ix.sources])
    queries = build_queries(docs, n=300, seed=13, kg=ix.kg)
    assert sum(q.variant == "original" for q in queries) >= 200
    res = evaluate(ix, queries, modes=[m for m in MODES if m[0] == "hybrid_rrf"])
    assert res["hybrid_rrf"]["strict"]["all"]["R@10"] >= 0.85, res

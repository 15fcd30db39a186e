"""Ranking and fusion of the index as pure functions, on hand-computed examples."""
from __future__ import annotations

import numpy as np
import pytest

from knowledge.index.fusion import bm25_ranking, credit_dense_hits, fuse_alpha, fuse_rrf, minmax, word_overlap


def test_bm25_ranking_keeps_positive_scores_in_order_within_the_mask():
    scores = np.array([0.0, 3.0, 1.0, 5.0, 2.0], dtype=np.float32)
    assert bm25_ranking(scores, None, depth=10) == {3: 1, 1: 2, 4: 3, 2: 4}
    assert bm25_ranking(scores, None, depth=2) == {3: 1, 1: 2}
    mask = np.array([True, True, True, False, False])
    assert bm25_ranking(scores, mask, depth=10) == {1: 1, 2: 2}


def test_dense_hits_on_a_lead_credit_the_documents_best_bm25_chunk():
    doc_of = ["d1", "d1", "d1", "d2", "d3"]
    bm_rank = {2: 1, 1: 2, 3: 3}                   # d1's best BM25 chunk is row 2
    hits = [(0, 0.9), (3, 0.8), (4, 0.7), (1, 0.6)]   # leads of d1, d2, d3, then another d1 row
    dense, ranks = credit_dense_hits(hits, doc_of, bm_rank)
    assert dense == {2: 0.9, 3: 0.8, 4: 0.7}       # the second d1 hit is not counted twice
    assert ranks == {2: 1, 3: 2, 4: 3}


def test_rrf_sums_reciprocal_ranks_and_breaks_ties_by_the_better_rank():
    fused = fuse_rrf({1: 1, 2: 2}, {2: 1, 3: 2}, k=60)
    assert [i for i, _ in fused] == [2, 1, 3]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1][1] == pytest.approx(1 / 61)
    tie = fuse_rrf({5: 2}, {6: 1}, k=60)          # 6 has the better single rank
    assert tie[0][0] == 6


def test_alpha_fusion_of_min_max_normalised_scores():
    bm_scores = np.array([0.0, 4.0, 2.0, 0.0], dtype=np.float32)
    fused = dict(fuse_alpha({1: 1, 2: 2}, bm_scores, {2: 0.9, 3: 0.5}, alpha=0.5))
    # bm25 over candidates [1, 2, 3]: 4, 2, 0 -> 1, 0.5, 0; dense: row 1 missing -> lowest seen (0.5) -> 0, 1, 0
    assert fused[1] == pytest.approx(0.5 * 0 + 0.5 * 1.0)
    assert fused[2] == pytest.approx(0.5 * 1 + 0.5 * 0.5)
    assert fused[3] == pytest.approx(0.0)
    assert list(dict(fuse_alpha({1: 1}, bm_scores, {}, alpha=0.5))) == [1]


def test_minmax_and_word_overlap():
    assert minmax(np.array([2.0, 2.0])).tolist() == [1.0, 1.0]
    assert minmax(np.array([0.0, 0.0])).tolist() == [0.0, 0.0]
    assert minmax(np.array([1.0, 3.0])).tolist() == [0.0, 1.0]
    assert word_overlap(["chest", "pain"], ["chest", "pain"]) == 1.0
    assert word_overlap(["chest", "pain", "radiating"], ["chest", "pain"]) == pytest.approx(0.8)
    assert word_overlap([], ["pain"]) == 0.0

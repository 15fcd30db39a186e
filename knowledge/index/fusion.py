"""Ranking and fusion as pure functions of scores and ranks (no index state): the BM25 candidate ranking, the
crediting of document-lead dense hits to chunks, reciprocal-rank and alpha fusion, and the word-overlap score
of the name index."""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np


def minmax(x: np.ndarray) -> np.ndarray:
    if x.size == 0:
        return x
    lo, hi = float(np.min(x)), float(np.max(x))
    if hi - lo < 1e-12:
        return np.ones_like(x) if hi > 0 else np.zeros_like(x)
    return (x - lo) / (hi - lo)


def bm25_ranking(scores: np.ndarray, mask: np.ndarray | None, depth: int) -> dict[int, int]:
    """Row -> 1-based rank of the ``depth`` best positive scores (within ``mask``)."""
    cand = np.flatnonzero(scores > 0 if mask is None else (scores > 0) & mask)
    if len(cand) > depth:
        cand = cand[np.argpartition(-scores[cand], depth - 1)[:depth]]
    top = cand[np.argsort(-scores[cand], kind="stable")]
    return dict(zip(top.tolist(), range(1, len(top) + 1)))


def credit_dense_hits(hits: Iterable[tuple[int, float]], doc_of: Sequence[str],
                      bm_rank: Mapping[int, int]) -> tuple[dict[int, float], dict[int, int]]:
    """Dense hits (row, cosine), best first, as (row -> cosine, row -> rank). A hit on a document's lead stands for
    the document: it is credited to the document's best BM25 chunk when that has one, so both rankings vote for
    the same chunk; otherwise to the lead itself."""
    best_of_doc: dict[str, int] = {}
    for i in sorted(bm_rank, key=bm_rank.get):
        best_of_doc.setdefault(doc_of[i], i)
    dense: dict[int, float] = {}
    ranks: dict[int, int] = {}
    for r, (i, score) in enumerate(hits):
        i = best_of_doc.get(doc_of[i], i)
        if i in dense:
            continue
        dense[i] = score
        ranks[i] = r + 1
    return dense, ranks


def fuse_rrf(bm_rank: Mapping[int, int], dn_rank: Mapping[int, int], k: int = 60) -> list[tuple[int, float]]:
    """Sum of 1/(k + rank) over the rankings a row appears in; ties to the better single rank."""
    fused: dict[int, float] = {}
    for ranks in (bm_rank, dn_rank):
        for i, r in ranks.items():
            fused[i] = fused.get(i, 0.0) + 1.0 / (k + r)
    return sorted(fused.items(), key=lambda x: (-x[1], min(bm_rank.get(x[0], 1 << 30), dn_rank.get(x[0], 1 << 30))))


def fuse_alpha(bm_rank: Mapping[int, int], bm_scores: np.ndarray, dense: Mapping[int, float],
               alpha: float = 0.5) -> list[tuple[int, float]]:
    """alpha * minmax(dense) + (1 - alpha) * minmax(bm25) over the union of both candidate lists; a candidate the
    dense list lacks gets the lowest dense score seen."""
    cand = list(dict.fromkeys([*bm_rank, *dense]))
    b = np.array([bm_scores[i] for i in cand], dtype=np.float32)
    dvals = np.array([dense.get(i, np.nan) for i in cand], dtype=np.float32)
    if np.isnan(dvals).any():
        floor = np.nanmin(dvals) if not np.isnan(dvals).all() else 0.0
        dvals = np.where(np.isnan(dvals), floor, dvals)
    f = alpha * minmax(dvals) + (1 - alpha) * minmax(b)
    return sorted(zip(cand, f.tolist()), key=lambda x: -x[1])


def word_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """Dice coefficient of two word sets (1.0 = the same words)."""
    sa, sb = set(a), set(b)
    return 2 * len(sa & sb) / (len(sa) + len(sb)) if sa and sb else 0.0

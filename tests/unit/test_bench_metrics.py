"""Benchmark metrics on small hand-computed examples (records written out as literal dicts)."""
from __future__ import annotations

import math
from fractions import Fraction

import pytest

from clinicalrag.bench.metrics import (
    accuracy_at,
    avg_sd,
    citation_validity,
    completion_tokens_per_case,
    cost_usd,
    ddf1,
    ddp,
    ddr,
    differential_overlap,
    error_count,
    error_rate,
    escalation_rate,
    evidence_recall,
    fmt_avg_sd,
    gtpa,
    gtpa_at,
    hit,
    latency_percentile,
    llm_calls_per_case,
    mcnemar_exact,
    mcq_accuracy,
    mcq_correct,
    mrr,
    normalise_name,
    paired,
    percentile,
    prompt_tokens_per_case,
    recall_at,
    repeat_metrics,
    retrieval_n,
    string_fallbacks,
    summarise,
    support_rate,
    support_rate_per_case,
    total_tokens,
    unlinked_predictions,
    warning_count,
)

# ------------------------------------------------------------------------------------------ ranked differentials

RANKED = [
    {"case_id": "r1", "status": "ok", "match": {"strict_rank": 1, "lenient_rank": 1}},
    {"case_id": "r2", "status": "ok", "match": {"strict_rank": None, "lenient_rank": 2}},
    {"case_id": "r3", "status": "ok", "match": {"strict_rank": 4, "lenient_rank": 3}},
    {"case_id": "r4", "status": "error", "error": "timeout", "match": {"strict_rank": 1, "lenient_rank": 1}},
    {"case_id": "r5", "status": "ok", "match": {}},
]


def test_hit_strict_and_lenient():
    r1, r2, r3, r4, r5 = RANKED
    assert hit(r1, 1) and hit(r1, 1, "lenient")
    assert not hit(r2, 1) and not hit(r2, 10) and not hit(r2, 1, "lenient") and hit(r2, 3, "lenient")
    assert not hit(r3, 3) and hit(r3, 5) and hit(r3, 3, "lenient")
    assert not hit(r4, 1) and not hit(r4, None)        # a failed case is a miss whatever its match says
    assert not hit(r5, 10) and not hit(r5, 10, "lenient")
    assert hit(r3, None) and not hit(r2, None)           # k=None: anywhere in the differential
    assert hit({"match": {"strict_rank": 2}}, 2, "lenient")  # a strict match is also a lenient one
    with pytest.raises(ValueError):
        hit(r1, 1, "loose")
    with pytest.raises(ValueError):
        hit(r1, 0)


def test_accuracy_and_gtpa():
    # strict hits: @1 r1 -> 1/5; @3 r1 -> 1/5; @5 r1, r3 -> 2/5; lenient @3: r1, r2, r3 -> 3/5
    assert accuracy_at(RANKED, 1) == pytest.approx(0.2)
    assert accuracy_at(RANKED, 3) == pytest.approx(0.2)
    assert accuracy_at(RANKED, 5) == pytest.approx(0.4)
    assert accuracy_at(RANKED, 1, "lenient") == pytest.approx(0.2)
    assert accuracy_at(RANKED, 3, "lenient") == pytest.approx(0.6)
    # GTPA: gold anywhere (strict): r1, r3 -> 2/5; lenient: r1, r2, r3 -> 3/5; GTPA@k is top-k accuracy
    assert gtpa(RANKED) == pytest.approx(0.4)
    assert gtpa(RANKED, "lenient") == pytest.approx(0.6)
    assert gtpa_at(RANKED, 3) == pytest.approx(0.2)
    assert gtpa_at(RANKED, 5) == pytest.approx(0.4)
    assert accuracy_at([], 1) is None and gtpa([]) is None and gtpa_at([], 1) is None


MCQ = [
    {"case_id": "m1", "status": "ok", "answer": "B", "choice": "B", "match": {"strict_rank": None}},
    {"case_id": "m2", "status": "ok", "answer": "C", "choice": "A", "match": {"strict_rank": 2}},
    {"case_id": "m3", "status": "ok", "answer": "A", "choice": None, "match": {}},
]


def test_mcq_correct_and_hits():
    m1, m2, m3 = MCQ
    assert mcq_correct(m1) and not mcq_correct(m2) and not mcq_correct(m3)
    assert not mcq_correct(RANKED[0])                  # not an MCQ record
    assert hit(m1, 1) and hit(m1, 1, "lenient")          # top-1 is choice == answer, rank ignored
    assert not hit(m2, 1) and hit(m2, 3)                 # top-3 also takes the differential's rank
    assert not hit(m3, 5)
    # MCQ accuracy leaves out records without an answer: m1 of (m1, m2, m3) -> 1/3
    assert mcq_accuracy([*MCQ, RANKED[0]]) == pytest.approx(1 / 3)
    assert mcq_accuracy(RANKED) is None and mcq_accuracy([]) is None
    assert accuracy_at(MCQ, 1) == pytest.approx(1 / 3)
    assert accuracy_at(MCQ, 3) == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------------------ differential overlap

DDX = [
    {"case_id": "d1", "status": "ok",
     "dataset_differential": ["Pneumonia", "Acute  bronchitis", "URTI", "Influenza"],
     "predictions": [{"rank": 1, "diagnosis": "pneumonia"}, {"rank": 2, "diagnosis": " acute bronchitis "},
                     {"rank": 3, "diagnosis": "Asthma"}]},
    {"case_id": "d2", "status": "ok", "dataset_differential": ["Anemia"], "predictions": []},
    {"case_id": "d3", "status": "ok", "dataset_differential": [],
     "predictions": [{"rank": 1, "diagnosis": "Anemia"}]},
]


def test_differential_overlap_ddr_ddp_ddf1():
    # d1: D = 4 names, P = 3 names, common 2 (pneumonia, acute bronchitis after normalisation)
    #     DDR = 2/4 = 0.5, DDP = 2/3, DDF1 = 2 * (2/3 * 1/2) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7
    # d2: no prediction -> 0, 0, 0.  d3: no dataset differential -> left out.  Means over d1, d2:
    assert differential_overlap(DDX) == pytest.approx({"ddr": 0.25, "ddp": 1 / 3, "ddf1": 2 / 7, "n": 2})
    assert ddr(DDX) == pytest.approx(0.25)
    assert ddp(DDX) == pytest.approx(1 / 3)
    assert ddf1(DDX[:1]) == pytest.approx(4 / 7)
    # a custom normaliser that maps every name to one: d1 -> 1, 1, 1; d2 still has no prediction -> 0
    assert ddf1(DDX, normalise=lambda s: "x") == pytest.approx(0.5)
    assert differential_overlap(DDX[2:]) is None and ddf1([]) is None
    assert normalise_name("  Acute \t Bronchitis ") == "acute bronchitis"


# ------------------------------------------------------------------------------------------ retrieval

RETRIEVAL = [
    {"case_id": "t1", "retrieval": {"candidate_rank": 1, "candidates": 20, "evidence_rank": 2, "evidence": 5}},
    {"case_id": "t2", "retrieval": {"candidate_rank": 4, "candidates": 20, "evidence_rank": None, "evidence": 3}},
    {"case_id": "t3", "retrieval": {"candidate_rank": None, "candidates": 20}},
    {"case_id": "t4", "retrieval": {"candidate_rank": 12, "candidates": 20, "evidence_rank": 1, "evidence": 2}},
    {"case_id": "t5", "retrieval": None},
]


def test_recall_mrr_and_evidence_recall():
    assert retrieval_n(RETRIEVAL) == 4                        # t5 has no retrieval
    assert recall_at(RETRIEVAL, 1) == pytest.approx(1 / 4)    # t1
    assert recall_at(RETRIEVAL, 5) == pytest.approx(2 / 4)    # t1, t2
    assert recall_at(RETRIEVAL, 10) == pytest.approx(2 / 4)   # t4 is at 12
    assert mrr(RETRIEVAL) == pytest.approx((1 + 1 / 4 + 0 + 0) / 4)          # 0.3125
    assert mrr(RETRIEVAL, k=20) == pytest.approx((1 + 1 / 4 + 0 + 1 / 12) / 4)
    # evidence: t1, t2, t4 report it (t3 has no evidence keys); t1 and t4 found gold evidence -> 2/3; within 1: t4
    assert evidence_recall(RETRIEVAL) == pytest.approx(2 / 3)
    assert evidence_recall(RETRIEVAL, k=1) == pytest.approx(1 / 3)
    none = [{"retrieval": None}]
    assert recall_at(none, 1) is None and mrr(none) is None and evidence_recall(none) is None
    assert recall_at([], 5) is None and retrieval_n([]) == 0


# ------------------------------------------------------------------------------------------ faithfulness

FAITH = [
    {"case_id": "f1", "faithfulness": {"claims": 4, "supported": 3, "citations": 5, "invalid_citations": 1,
                                       "escalated": False}},
    {"case_id": "f2", "faithfulness": {"claims": 1, "supported": 0, "citations": 0, "invalid_citations": 0,
                                       "escalated": True}},
    {"case_id": "f3", "faithfulness": {"claims": 0, "supported": 0, "citations": 3, "invalid_citations": 0,
                                       "escalated": False}},
    {"case_id": "f4", "faithfulness": None},
]


def test_faithfulness_metrics():
    assert support_rate(FAITH) == pytest.approx(3 / 5)                  # (3 + 0 + 0) / (4 + 1 + 0)
    assert support_rate_per_case(FAITH) == pytest.approx((3 / 4 + 0 / 1) / 2)  # f3 checked no claim
    assert citation_validity(FAITH) == pytest.approx(1 - 1 / 8)         # 1 invalid of 5 + 0 + 3
    assert escalation_rate(FAITH) == pytest.approx(1 / 3)               # f2 of f1..f3 (f4 has no verifier)
    assert support_rate(FAITH[3:]) is None and support_rate_per_case([]) is None
    assert citation_validity(FAITH[1:2]) is None and escalation_rate(FAITH[3:]) is None


# ------------------------------------------------------------------------------------------ latency and cost


def test_nearest_rank_percentile():
    v = [40, 10, 30, 20]                       # sorted 10, 20, 30, 40
    assert percentile(v, 50) == 20             # rank ceil(0.50 * 4) = 2
    assert percentile(v, 95) == 40             # rank ceil(0.95 * 4) = ceil(3.8) = 4
    assert percentile(v, 25) == 10             # rank ceil(1.0) = 1
    assert percentile(v, 26) == 20             # rank ceil(1.04) = 2
    assert percentile(v, 0) == 10 and percentile(v, 100) == 40
    assert percentile(range(1, 21), 95) == 19  # rank ceil(19.0) = 19 exactly, no float creep to 20
    assert percentile([7.5], 50) == 7.5 and percentile([7.5], 99) == 7.5
    assert percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile(v, 101)
    recs = [{"latency_ms": 300.0}, {"latency_ms": 100.0}, {"latency_ms": 200.0}, {"status": "error"}]
    assert latency_percentile(recs, 50) == 200.0   # rank ceil(1.5) = 2 of (100, 200, 300)
    assert latency_percentile(recs, 95) == 300.0
    assert latency_percentile([], 50) is None


LLM = [
    {"case_id": "l1", "model": "gpt-x", "llm": {"model": "gpt-x", "calls": 3, "prompt_tokens": 1000,
                                                "completion_tokens": 200}},
    {"case_id": "l2", "model": "gpt-x", "llm": {"model": "gpt-x", "calls": 1, "prompt_tokens": 500,
                                                "completion_tokens": 100}},
    {"case_id": "l3", "model": "gpt-x", "llm": {}},
]


def test_llm_usage_and_cost():
    assert llm_calls_per_case(LLM) == pytest.approx(4 / 3)
    assert prompt_tokens_per_case(LLM) == pytest.approx(500)       # 1500 / 3
    assert completion_tokens_per_case(LLM) == pytest.approx(100)   # 300 / 3
    assert total_tokens(LLM) == 1800
    # 1500 prompt tokens at 2 USD/1M + 300 completion tokens at 10 USD/1M = 0.003 + 0.003
    assert cost_usd(LLM, {"gpt-x": {"prompt": 2.0, "completion": 10.0}}) == pytest.approx(0.006)
    assert cost_usd(LLM, {"other": {"prompt": 1.0, "completion": 1.0}}) is None   # no price for gpt-x
    assert cost_usd(LLM, None) is None
    no_llm = [{"model": "none", "llm": {"calls": 0}}, {"model": "none"}]
    assert cost_usd(no_llm, None) == 0.0 and total_tokens(no_llm) == 0
    assert llm_calls_per_case([]) is None and total_tokens([]) == 0 and cost_usd([], {}) == 0.0


def test_errors_warnings_and_linking():
    recs = [
        {"status": "verified", "warnings": ["w1"], "match": {"method": "concept", "unlinked_predictions": 2}},
        {"status": "error", "error": "boom", "warnings": [], "match": {"method": "string", "unlinked_predictions": 0}},
        {"status": "ok", "warnings": ["w2", "w3"], "match": {"method": "string", "unlinked_predictions": 1}},
        {"status": "ok", "match": {}},
    ]
    assert error_count(recs) == 1 and error_rate(recs) == pytest.approx(0.25)
    assert warning_count(recs) == 3
    assert string_fallbacks(recs) == 2
    assert unlinked_predictions(recs) == 3
    assert error_rate([]) is None and error_count([]) == 0 and string_fallbacks([]) == 0


# ------------------------------------------------------------------------------------------ repeats and summaries


def test_avg_sd_and_format():
    mean, sd = avg_sd([0.6, 0.7, 0.8])         # deviations 0.1, 0, 0.1 -> var = 0.02 / 2 = 0.01 -> SD 0.1
    assert mean == pytest.approx(0.7) and sd == pytest.approx(0.1)
    assert fmt_avg_sd(mean, sd) == "70.0 (10.0)"
    assert avg_sd([0.623]) == (0.623, 0.0)
    assert fmt_avg_sd(0.623, 0.0, repeats=1) == "62.3"
    assert fmt_avg_sd(0.623, 0.012) == "62.3 (1.2)"
    assert fmt_avg_sd(0.623, None) == "62.3"
    assert fmt_avg_sd(12.34, 0.56, pct=False) == "12.3 (0.6)"
    assert avg_sd([None, 0.5]) == (0.5, 0.0)
    m, s = avg_sd([])
    assert math.isnan(m) and math.isnan(s)
    assert fmt_avg_sd(m, s) == "n/a" and fmt_avg_sd(None, None) == "n/a"


def test_summarise_groups_and_aggregates_across_repeats():
    recs = [
        {"dataset": "d", "system": "pipeline", "model": "m", "repeat": 0, "case_id": "a", "status": "ok",
         "match": {"strict_rank": 1}, "retrieval": {"candidate_rank": 1}, "latency_ms": 100.0},
        {"dataset": "d", "system": "pipeline", "model": "m", "repeat": 0, "case_id": "b", "status": "ok",
         "match": {"strict_rank": 1}, "retrieval": {"candidate_rank": 3}, "latency_ms": 300.0},
        {"dataset": "d", "system": "pipeline", "model": "m", "repeat": 1, "case_id": "a", "status": "ok",
         "match": {"strict_rank": 1}, "retrieval": {"candidate_rank": 1}, "latency_ms": 200.0},
        {"dataset": "d", "system": "pipeline", "model": "m", "repeat": 1, "case_id": "b", "status": "ok",
         "match": {"strict_rank": 2}, "retrieval": {"candidate_rank": 3}, "latency_ms": 400.0},
        {"dataset": "d", "system": "direct", "model": "m", "repeat": 0, "case_id": "a", "status": "ok",
         "match": {"strict_rank": 2}, "retrieval": None, "latency_ms": 50.0},
    ]
    by_system = {s.system: s for s in summarise(recs)}
    pipe, direct = by_system["pipeline"], by_system["direct"]
    assert (pipe.dataset, pipe.model, pipe.n, pipe.repeats, pipe.n_per_repeat) == ("d", "m", 2, 2, [2, 2])
    # top-1 per repeat: 1.0, 0.5 -> mean 0.75, SD sqrt((0.25^2 + 0.25^2) / 1) = 0.3536
    assert pipe.metrics["top1"] == pytest.approx((0.75, math.sqrt(0.125)))
    assert pipe.metrics["accuracy"] == pipe.metrics["top1"]
    assert pipe.metrics["top3"] == pytest.approx((1.0, 0.0))
    # recall@1 = 0.5 in both repeats; p50 latency (nearest rank of 2) = 100, 200 -> 150 (SD 70.7)
    assert pipe.metrics["recall@1"] == pytest.approx((0.5, 0.0))
    assert pipe.metrics["latency_p50_ms"] == pytest.approx((150.0, math.sqrt(5000)))
    assert pipe.mean("mrr") == pytest.approx((1 + 1 / 3) / 2)
    assert direct.repeats == 1 and direct.metrics["top1"] == (0.0, 0.0) and direct.metrics["top3"] == (1.0, 0.0)
    assert "recall@1" not in direct.metrics and direct.mean("recall@1") is None   # no retrieval: absent
    assert "cost_usd" not in direct.metrics                                      # no prices given
    assert not pipe.mcq
    assert summarise([]) == []


def test_repeat_metrics_of_an_mcq_repeat_uses_mcq_accuracy_as_headline():
    m = repeat_metrics(MCQ, prices={})
    assert m["accuracy"] == pytest.approx(1 / 3) and m["mcq_acc"] == pytest.approx(1 / 3)
    assert m["cost_usd"] == 0.0 and m["cost_per_case_usd"] == 0.0   # no tokens used
    assert repeat_metrics([]) == {"total_tokens": 0.0, "errors": 0.0, "warnings": 0.0, "string_fallbacks": 0.0,
                                  "unlinked_predictions": 0.0}


# ------------------------------------------------------------------------------------------ paired comparison


def test_mcnemar_exact_known_values():
    assert mcnemar_exact(0, 5) == 0.0625            # 2 * (1/2)^5
    assert mcnemar_exact(5, 0) == 0.0625
    assert mcnemar_exact(1, 9) == 0.021484375       # 2 * (1 + 10) / 1024
    assert mcnemar_exact(4, 1) == 0.375             # 2 * (1 + 5) / 32
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0
    # exact against a fraction computed independently
    expected = min(Fraction(1), 2 * Fraction(sum(math.comb(30, i) for i in range(11)), 2 ** 30))
    assert mcnemar_exact(10, 20) == pytest.approx(float(expected), rel=1e-12)
    # large n stays finite and sensible: normal approximation (|1000 - 1100| - 1) / sqrt(2100) = 2.16 -> p ~ 0.031
    p = mcnemar_exact(1000, 1100)
    assert 0.025 < p < 0.037 and p == mcnemar_exact(1100, 1000)
    assert mcnemar_exact(2500, 2500) == 1.0
    assert 0.0 <= mcnemar_exact(0, 3000) < 1e-300


def _rec(system: str, case_id: str, rank: int | None, repeat: int = 0) -> dict:
    return {"dataset": "d", "system": system, "model": "m", "repeat": repeat, "case_id": case_id, "status": "ok",
            "match": {"strict_rank": rank}}


def test_paired_comparison_counts_ci_and_mcnemar():
    # A hits c1..c5, B hits c2..c9 (10 shared cases); c11 only in A, c12 and c13 only in B
    a = [_rec("A", f"c{i}", 1 if i <= 5 else None) for i in range(1, 11)] + [_rec("A", "c11", 1)]
    b = [_rec("B", f"c{i}", 1 if 2 <= i <= 9 else None) for i in range(1, 11)]
    b += [_rec("B", "c12", 1), _rec("B", "c13", None)]
    res = paired(a, b)
    assert (res.n, res.only_a, res.only_b) == (10, 1, 2)
    assert res.acc_a == pytest.approx(0.5) and res.acc_b == pytest.approx(0.8)
    assert res.diff == pytest.approx(0.3)
    assert (res.b01, res.b10) == (4, 1)             # A missed & B hit: c6..c9; A hit & B missed: c1
    assert res.p_value == 0.375                      # 2 * (C(5,0) + C(5,1)) / 2^5
    assert res.ci_low <= 0.3 <= res.ci_high and -1 <= res.ci_low < res.ci_high <= 1
    again = paired(a, b)
    assert (again.ci_low, again.ci_high) == (res.ci_low, res.ci_high)   # deterministic for a seed
    reversed_ = paired(b, a)
    assert reversed_.diff == pytest.approx(-0.3) and (reversed_.b01, reversed_.b10) == (1, 4)


def test_paired_with_repeats_averages_hits_but_tests_repeat_zero():
    a = [_rec("A", "c1", 1, 0), _rec("A", "c1", None, 1), _rec("A", "c2", None, 0), _rec("A", "c2", None, 1)]
    b = [_rec("B", "c1", 1, 0), _rec("B", "c1", 1, 1), _rec("B", "c2", 1, 0)]
    res = paired(a, b)
    # per-case hit rates: A c1 = 0.5, c2 = 0; B c1 = 1, c2 = 1 -> acc 0.25 vs 1.0
    assert res.n == 2 and res.acc_a == pytest.approx(0.25) and res.acc_b == pytest.approx(1.0)
    assert res.diff == pytest.approx(0.75) and (res.repeats_a, res.repeats_b) == (2, 2)
    # repeat 0: c1 both hit (concordant), c2 A missed and B hit
    assert (res.b01, res.b10) == (1, 0) and res.p_value == 1.0


def test_paired_empty_and_disjoint():
    res = paired([], [])
    assert res.n == 0 and res.acc_a is None and res.diff is None and res.ci_low is None and res.p_value == 1.0
    res = paired([_rec("A", "x", 1)], [_rec("B", "y", 1)])
    assert (res.n, res.only_a, res.only_b) == (0, 1, 1)

"""Benchmark metrics over :class:`~clinicalrag.bench.records.CaseRecord` dicts, as pure functions (no I/O).

Conventions used throughout:

* Per-record functions (:func:`hit`, :func:`mcq_correct`) look at one record.
* Aggregate functions take the records of ONE (dataset, system, model, repeat) and return a float in [0, 1] for
  rates, or a plain number for counts, means and costs.
* Empty or undefined input: an aggregate whose denominator would be zero (no records, or no record the metric
  applies to, e.g. retrieval recall for a system without retrieval) returns ``None``; it never raises and never
  returns a made-up zero. Counts and sums return ``0``. :func:`avg_sd` of nothing returns ``(nan, nan)``.
* A case that failed (``status == "error"``) stays in every denominator and counts as a miss.
* :func:`summarise` computes every metric once per repeat and reports the mean and sample standard deviation
  across repeats, which is how the paper reports "Avg (SD)".
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Record = Mapping[str, Any]
Level = Literal["strict", "lenient"]
Prices = Mapping[str, Mapping[str, float]]

__all__ = [
    "Paired", "Reliability", "ReliabilityBin", "Summary", "accuracy_at", "avg_sd", "brier_score",
    "citation_validity", "completion_tokens_per_case", "cost_usd", "ddf1", "ddp", "ddr", "differential_overlap",
    "error_count", "error_rate", "escalation_rate", "evidence_recall", "expected_calibration_error", "fmt_avg_sd",
    "gtpa", "gtpa_at", "hit", "is_mcq", "latency_percentile", "llm_calls_per_case", "mcnemar_exact", "mcq_accuracy",
    "mcq_correct", "mrr", "normalise_name", "paired", "percentile", "prompt_tokens_per_case", "recall_at",
    "reliability", "repeat_metrics", "retrieval_n", "string_fallbacks", "summarise", "support_rate",
    "support_rate_per_case", "top1_confidences", "total_tokens", "unlinked_predictions", "warning_count",
]


# --------------------------------------------------------------------------------------------- per record


def is_mcq(record: Record) -> bool:
    """True when the record is a multiple-choice item, i.e. its gold option letter ``answer`` is set."""
    return record.get("answer") is not None


def mcq_correct(record: Record) -> bool:
    """True when the option the system chose is the gold option (``choice == answer``).

    A record without a gold option (not MCQ) or without a choice (no option matched the answer) is not correct.
    """
    answer = record.get("answer")
    choice = record.get("choice")
    return answer is not None and choice is not None and str(choice).strip().upper() == str(answer).strip().upper()


def _gold_rank(record: Record, level: Level) -> int | None:
    if level not in ("strict", "lenient"):
        raise ValueError(f"level must be 'strict' or 'lenient', not {level!r}")
    match = record.get("match") or {}
    rank = match.get("strict_rank" if level == "strict" else "lenient_rank")
    if level == "lenient" and rank is None:
        # a strict match is also a lenient one; a writer that filled only strict_rank must not lose it
        rank = match.get("strict_rank")
    return int(rank) if rank is not None else None


def hit(record: Record, k: int | None = 1, level: Level = "strict") -> bool:
    """Whether the gold diagnosis is within the first ``k`` predictions of one record.

    * Free-text records: ``strict_rank <= k`` (``level="strict"``: the gold concept or an equivalent) or
      ``lenient_rank <= k`` (``level="lenient"``: also its parent or child). A missing rank is a miss.
      ``k=None`` means anywhere in the differential.
    * MCQ records (``answer`` set): the top-1 hit is ``choice == answer`` whatever the level, since the system
      commits to one option. For ``k > 1`` the record also counts when the gold label is within the first ``k``
      items of its differential (``match`` ranks, when the writer filled them), so top-k never falls below top-1.
    * A failed case (``status == "error"``) is always a miss.
    """
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    if record.get("status") == "error":
        return False
    if is_mcq(record):
        if mcq_correct(record):
            return True
        if k == 1:
            return False
    rank = _gold_rank(record, level)
    return rank is not None and (k is None or rank <= k)


# --------------------------------------------------------------------------------------------- accuracy


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def accuracy_at(records: Sequence[Record], k: int = 1, level: Level = "strict") -> float | None:
    """Top-k accuracy: the share of records for which :func:`hit` ``(record, k, level)`` holds. None when empty."""
    return _mean(float(hit(r, k, level)) for r in records)


def mcq_accuracy(records: Sequence[Record]) -> float | None:
    """The share of MCQ records (``answer`` set) whose ``choice == answer``; records without ``answer`` are
    left out. None when there is no MCQ record."""
    return _mean(float(mcq_correct(r)) for r in records if is_mcq(r))


def gtpa(records: Sequence[Record], level: Level = "strict") -> float | None:
    """Ground-truth pathology accuracy (GTPA, as DDXPlus defines it): the share of records whose gold diagnosis is
    anywhere in the predicted differential, whatever its rank. None when empty."""
    return _mean(float(hit(r, None, level)) for r in records)


def gtpa_at(records: Sequence[Record], k: int, level: Level = "strict") -> float | None:
    """GTPA@k (DDXPlus): the share of records whose gold diagnosis is among the first ``k`` predictions. This is
    the same number as :func:`accuracy_at` ``(records, k)``. None when empty."""
    return accuracy_at(records, k, level)


# --------------------------------------------------------------------------------------------- differential overlap


def normalise_name(name: str) -> str:
    """The default name normaliser for differential overlap: lower case, trimmed, runs of whitespace as one space."""
    return re.sub(r"\s+", " ", str(name)).strip().lower()


def _overlap_one(record: Record, normalise: Callable[[str], str]) -> tuple[float, float, float] | None:
    gold = {normalise(x) for x in record.get("dataset_differential") or []}
    gold.discard("")
    if not gold:
        return None
    if record.get("status") == "error":
        predicted: set[str] = set()
    else:
        predicted = {normalise(p.get("diagnosis") or "") for p in record.get("predictions") or []}
        predicted.discard("")
    common = len(gold & predicted)
    recall = common / len(gold)
    precision = common / len(predicted) if predicted else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return recall, precision, f1


def differential_overlap(records: Sequence[Record],
                         normalise: Callable[[str], str] = normalise_name) -> dict[str, float] | None:
    """DDXPlus differential-diagnosis overlap between the predicted differential and the dataset's own one.

    For each record that has a non-empty ``dataset_differential`` (D) the predicted names (P, every prediction's
    ``diagnosis``) and D are normalised with ``normalise`` and compared as sets:
    DDR (recall) = |P ∩ D| / |D|, DDP (precision) = |P ∩ D| / |P| (0 when P is empty),
    DDF1 = 2·DDP·DDR / (DDP + DDR) (0 when both are 0). Each is then averaged over those records (DDF1 is the
    mean of per-record F1 scores, not the F1 of the means). Returns ``{"ddr", "ddp", "ddf1", "n"}``; None when
    no record has a dataset differential.
    """
    scores = [s for s in (_overlap_one(r, normalise) for r in records) if s is not None]
    if not scores:
        return None
    n = len(scores)
    return {"ddr": sum(s[0] for s in scores) / n, "ddp": sum(s[1] for s in scores) / n,
            "ddf1": sum(s[2] for s in scores) / n, "n": n}


def ddr(records: Sequence[Record], normalise: Callable[[str], str] = normalise_name) -> float | None:
    """DDXPlus differential recall; see :func:`differential_overlap`."""
    o = differential_overlap(records, normalise)
    return o["ddr"] if o else None


def ddp(records: Sequence[Record], normalise: Callable[[str], str] = normalise_name) -> float | None:
    """DDXPlus differential precision; see :func:`differential_overlap`."""
    o = differential_overlap(records, normalise)
    return o["ddp"] if o else None


def ddf1(records: Sequence[Record], normalise: Callable[[str], str] = normalise_name) -> float | None:
    """DDXPlus differential F1 (mean of per-record F1); see :func:`differential_overlap`."""
    o = differential_overlap(records, normalise)
    return o["ddf1"] if o else None


# --------------------------------------------------------------------------------------------- retrieval


def _with_retrieval(records: Sequence[Record]) -> list[Mapping[str, Any]]:
    return [r["retrieval"] for r in records if r.get("retrieval") is not None]


def retrieval_n(records: Sequence[Record]) -> int:
    """How many records have retrieval information (``retrieval`` not None): the denominator of
    :func:`recall_at` and :func:`mrr`."""
    return len(_with_retrieval(records))


def recall_at(records: Sequence[Record], k: int) -> float | None:
    """Candidate recall@k: among records with ``retrieval`` (n = :func:`retrieval_n`), the share whose gold concept
    is among the KG ranker's first ``k`` candidates (``candidate_rank <= k``; a missing rank is a miss).
    Records whose ``retrieval`` is None (systems without retrieval) are left out. None when n is 0."""
    return _mean(float(ret.get("candidate_rank") is not None and ret["candidate_rank"] <= k)
                 for ret in _with_retrieval(records))


def mrr(records: Sequence[Record], k: int = 10) -> float | None:
    """Mean reciprocal rank of the gold concept among the candidates, cut at ``k``: 1/candidate_rank when the rank
    is at most ``k``, else 0, averaged over records with ``retrieval``. None when there are none."""
    return _mean(1.0 / ret["candidate_rank"] if ret.get("candidate_rank") is not None
                 and 1 <= ret["candidate_rank"] <= k else 0.0 for ret in _with_retrieval(records))


def evidence_recall(records: Sequence[Record], k: int | None = None) -> float | None:
    """Evidence recall: among records whose ``retrieval`` reports evidence (an ``evidence`` count or an
    ``evidence_rank`` key), the share with at least one evidence item about the gold concept (within the first
    ``k`` items when ``k`` is given). None when no record reports evidence."""
    rets = [ret for ret in _with_retrieval(records) if "evidence" in ret or "evidence_rank" in ret]
    return _mean(float(ret.get("evidence_rank") is not None and (k is None or ret["evidence_rank"] <= k))
                 for ret in rets)


# --------------------------------------------------------------------------------------------- faithfulness


def _with_faithfulness(records: Sequence[Record]) -> list[Mapping[str, Any]]:
    return [r["faithfulness"] for r in records if r.get("faithfulness") is not None]


def support_rate(records: Sequence[Record]) -> float | None:
    """Pooled claim support rate: sum of SUPPORTED claims / sum of checked claims over all records with
    ``faithfulness``. None when no claim was checked."""
    f = _with_faithfulness(records)
    claims = sum(x.get("claims", 0) or 0 for x in f)
    return sum(x.get("supported", 0) or 0 for x in f) / claims if claims else None


def support_rate_per_case(records: Sequence[Record]) -> float | None:
    """Per-case claim support rate: the mean of supported/claims over records that checked at least one claim.
    None when there are none."""
    return _mean((x.get("supported", 0) or 0) / x["claims"] for x in _with_faithfulness(records)
                 if (x.get("claims") or 0) > 0)


def citation_validity(records: Sequence[Record]) -> float | None:
    """Citation validity: 1 - (sum of invalid citations / sum of citations) over records with ``faithfulness``.
    None when no citation was made."""
    f = _with_faithfulness(records)
    citations = sum(x.get("citations", 0) or 0 for x in f)
    return 1.0 - sum(x.get("invalid_citations", 0) or 0 for x in f) / citations if citations else None


def escalation_rate(records: Sequence[Record]) -> float | None:
    """The share of records with ``faithfulness`` whose answer was escalated (``escalated`` true). None when no
    record has faithfulness information."""
    return _mean(float(bool(x.get("escalated"))) for x in _with_faithfulness(records))


# --------------------------------------------------------------------------------------------- diagnostic confidence


def top1_confidences(records: Sequence[Record], level: Level = "strict") -> list[tuple[float, bool]]:
    """(confidence of the top prediction, whether the record is a top-1 hit per :func:`hit`) for every record
    whose first prediction carries a ``confidence``; records without predictions (failed cases, empty
    differentials) or without a confidence (systems without one, uncalibrated runs) are left out."""
    out = []
    for r in records:
        preds = r.get("predictions") or []
        conf = preds[0].get("confidence") if preds else None
        if conf is None:
            continue
        out.append((min(max(float(conf), 0.0), 1.0), hit(r, 1, level)))
    return out


def _bin_of(p: float, bins: int) -> int:
    return min(int(p * bins), bins - 1)


def brier_score(pairs: Sequence[tuple[float, bool]]) -> float | None:
    """Mean of (p - y)^2 over (probability, outcome) pairs. None when empty."""
    return _mean((p - float(y)) ** 2 for p, y in pairs)


def expected_calibration_error(pairs: Sequence[tuple[float, bool]], bins: int = 10) -> float | None:
    """ECE with ``bins`` equal-width bins of the probability ([0, 1/bins), ..., [1 - 1/bins, 1]): the mean over
    pairs of |observed accuracy - mean probability| of their bin, i.e. sum_b n_b/N * |acc_b - conf_b|. None when
    empty."""
    if bins < 1:
        raise ValueError("bins must be at least 1")
    if not pairs:
        return None
    acc: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for p, y in pairs:
        acc[_bin_of(p, bins)].append((p, y))
    n = len(pairs)
    return sum(len(v) / n * abs(sum(float(y) for _, y in v) / len(v) - sum(p for p, _ in v) / len(v))
               for v in acc.values())


@dataclass
class ReliabilityBin:
    low: float
    high: float
    n: int
    mean_confidence: float | None      # None for an empty bin
    accuracy: float | None


@dataclass
class Reliability:
    """Reliability of the top-1 confidences of some records: ``bins`` (all of them, empty ones with n = 0), ``n``
    pairs, ``ece``, ``brier``, the mean confidence and the observed top-1 accuracy of those pairs, and ``missing``:
    records left out because their top prediction had no confidence."""

    n: int
    bins: list[ReliabilityBin]
    ece: float
    brier: float
    mean_confidence: float
    accuracy: float
    missing: int = 0


def reliability(records: Sequence[Record], bins: int = 10, level: Level = "strict") -> Reliability | None:
    """The reliability table of the top-1 confidences (:func:`top1_confidences`) in ``bins`` equal-width bins, with
    ECE and Brier score. None when no record has a top-1 confidence."""
    pairs = top1_confidences(records, level)
    if not pairs:
        return None
    groups: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for p, y in pairs:
        groups[_bin_of(p, bins)].append((p, y))
    table = []
    for b in range(bins):
        v = groups.get(b, [])
        table.append(ReliabilityBin(low=b / bins, high=(b + 1) / bins, n=len(v),
                                    mean_confidence=sum(p for p, _ in v) / len(v) if v else None,
                                    accuracy=sum(float(y) for _, y in v) / len(v) if v else None))
    return Reliability(n=len(pairs), bins=table, ece=float(expected_calibration_error(pairs, bins)),
                       brier=float(brier_score(pairs)), mean_confidence=sum(p for p, _ in pairs) / len(pairs),
                       accuracy=sum(float(y) for _, y in pairs) / len(pairs), missing=len(records) - len(pairs))


# --------------------------------------------------------------------------------------------- latency and cost


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile: sort the n values ascending and take the one at 1-based rank ceil(q/100 · n),
    with rank at least 1 (so q=0 gives the minimum and q=100 the maximum). The result is always one of the
    values, never an interpolation. None for no values; ``q`` must be within [0, 100]."""
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within [0, 100], not {q}")
    ordered = sorted(float(v) for v in values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q * len(ordered) / 100))  # q·n first: exact for integer q
    return ordered[min(rank, len(ordered)) - 1]


def latency_percentile(records: Sequence[Record], q: float) -> float | None:
    """Nearest-rank percentile (see :func:`percentile`) of ``latency_ms`` over the records that have it,
    failed cases included. None when none has it."""
    return percentile((r["latency_ms"] for r in records if r.get("latency_ms") is not None), q)


def _usage(record: Record, key: str) -> int:
    return int((record.get("llm") or {}).get(key) or 0)


def llm_calls_per_case(records: Sequence[Record]) -> float | None:
    """Mean number of LLM calls per record (a record without usage counts 0). None when empty."""
    return _mean(_usage(r, "calls") for r in records)


def prompt_tokens_per_case(records: Sequence[Record]) -> float | None:
    """Mean prompt tokens per record. None when empty."""
    return _mean(_usage(r, "prompt_tokens") for r in records)


def completion_tokens_per_case(records: Sequence[Record]) -> float | None:
    """Mean completion tokens per record. None when empty."""
    return _mean(_usage(r, "completion_tokens") for r in records)


def total_tokens(records: Sequence[Record]) -> int:
    """Sum of prompt and completion tokens over the records (0 when empty)."""
    return sum(_usage(r, "prompt_tokens") + _usage(r, "completion_tokens") for r in records)


def cost_usd(records: Sequence[Record], prices: Prices | None) -> float | None:
    """LLM cost in US dollars: for each record, prompt_tokens/1e6 · price["prompt"] + completion_tokens/1e6 ·
    price["completion"], with ``price = prices[model]`` and ``model`` the record's ``llm.model`` (else its
    ``model``). Records that used no tokens cost nothing and need no price (so a run without an LLM costs 0.0).
    None when some record used tokens and its model has no price (or ``prices`` is None)."""
    total = 0.0
    for r in records:
        prompt, completion = _usage(r, "prompt_tokens"), _usage(r, "completion_tokens")
        if prompt == 0 and completion == 0:
            continue
        model = (r.get("llm") or {}).get("model") or r.get("model")
        price = (prices or {}).get(model) if model is not None else None
        if not price or price.get("prompt") is None or price.get("completion") is None:
            return None
        total += prompt / 1e6 * float(price["prompt"]) + completion / 1e6 * float(price["completion"])
    return total


# --------------------------------------------------------------------------------------------- errors and linking


def error_count(records: Sequence[Record]) -> int:
    """How many records failed (``status == "error"``)."""
    return sum(r.get("status") == "error" for r in records)


def error_rate(records: Sequence[Record]) -> float | None:
    """The share of records that failed (``status == "error"``). None when empty."""
    return error_count(records) / len(records) if records else None


def warning_count(records: Sequence[Record]) -> int:
    """Total number of warnings over the records."""
    return sum(len(r.get("warnings") or []) for r in records)


def string_fallbacks(records: Sequence[Record]) -> int:
    """How many records were scored by normalised string match because the gold label linked to no KG concept
    (``match.method == "string"``)."""
    return sum((r.get("match") or {}).get("method") == "string" for r in records)


def unlinked_predictions(records: Sequence[Record]) -> int:
    """Total predictions, over the records, that linked to no KG concept (``match.unlinked_predictions``)."""
    return sum(int((r.get("match") or {}).get("unlinked_predictions") or 0) for r in records)


# --------------------------------------------------------------------------------------------- repeats


def avg_sd(values: Iterable[float | None]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1) of the values, None values left out. One value gives SD 0.0;
    no value gives ``(nan, nan)``."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return math.nan, math.nan
    mean = sum(vals) / len(vals)
    if len(vals) == 1:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))


def fmt_avg_sd(mean: float | None, sd: float | None, pct: bool = True, *, repeats: int | None = None,
               digits: int = 1) -> str:
    """Format a mean and SD the way the paper does: ``"62.3 (1.2)"``.

    ``pct``: the values are fractions shown as percentages (times 100). The SD is left out (``"62.3"``) when
    ``sd`` is None or ``repeats == 1``. A missing or NaN mean gives ``"n/a"``.
    """
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "n/a"
    scale = 100.0 if pct else 1.0
    text = f"{mean * scale:.{digits}f}"
    if sd is None or repeats == 1 or (isinstance(sd, float) and math.isnan(sd)):
        return text
    return f"{text} ({sd * scale:.{digits}f})"


# --------------------------------------------------------------------------------------------- summaries


@dataclass
class Summary:
    """The metrics of one (dataset, system, model) over its repeats.

    ``n``: cases per repeat (the smallest repeat when an interrupted run left them uneven; see ``n_per_repeat``).
    ``repeats``: how many repeats there are. ``metrics``: metric key -> (mean, SD) across repeats, each metric
    computed once per repeat by :func:`repeat_metrics`; a metric that is undefined in every repeat is absent.
    ``mcq``: the records are multiple-choice items.
    """

    dataset: str
    system: str
    model: str
    n: int
    repeats: int
    metrics: dict[str, tuple[float, float]] = field(default_factory=dict)
    n_per_repeat: list[int] = field(default_factory=list)
    mcq: bool = False

    def mean(self, key: str) -> float | None:
        """The mean of a metric across repeats, or None when the metric is absent."""
        value = self.metrics.get(key)
        return value[0] if value is not None else None


def repeat_metrics(records: Sequence[Record], prices: Prices | None = None) -> dict[str, float]:
    """Every metric of the records of ONE (dataset, system, model, repeat), as ``key -> value``; undefined metrics
    (None) are left out. Keys:

    ``accuracy`` (the headline: ``mcq_acc`` for MCQ records, else ``top1``), ``top1``/``top3``/``top5``/``top10``
    (strict), ``top1_lenient``/``top3_lenient``/``top5_lenient``, ``gtpa``, ``mcq_acc``, ``ddr``/``ddp``/``ddf1``,
    ``retrieval_n`` (records with retrieval), ``recall@1``/``recall@5``/``recall@10``, ``mrr``,
    ``evidence_recall``, ``support_rate``, ``support_rate_case``, ``citation_validity``, ``escalation_rate``,
    ``latency_p50_ms``, ``latency_p95_ms``, ``llm_calls``, ``prompt_tokens``, ``completion_tokens`` (per case),
    ``total_tokens``, ``cost_usd`` (total of the repeat) and ``cost_per_case_usd`` (only when ``prices`` is given),
    ``error_rate``, and the counts in the repeat ``errors``, ``warnings``, ``string_fallbacks``,
    ``unlinked_predictions``; for records whose top prediction has a calibrated confidence: ``confidence_n``,
    ``mean_confidence``, ``ece`` (10 bins), ``brier``, and ``diagnostic_escalation_rate``.
    """
    out: dict[str, float | None] = {}
    for k in (1, 3, 5, 10):
        out[f"top{k}"] = accuracy_at(records, k, "strict")
    for k in (1, 3, 5):
        out[f"top{k}_lenient"] = accuracy_at(records, k, "lenient")
    out["gtpa"] = gtpa(records)
    out["mcq_acc"] = mcq_accuracy(records)
    out["accuracy"] = out["mcq_acc"] if out["mcq_acc"] is not None else out["top1"]
    overlap = differential_overlap(records)
    if overlap:
        out.update(ddr=overlap["ddr"], ddp=overlap["ddp"], ddf1=overlap["ddf1"])
    out["retrieval_n"] = retrieval_n(records) or None
    for k in (1, 5, 10):
        out[f"recall@{k}"] = recall_at(records, k)
    out["mrr"] = mrr(records, 10)
    out["evidence_recall"] = evidence_recall(records)
    out["support_rate"] = support_rate(records)
    out["support_rate_case"] = support_rate_per_case(records)
    out["citation_validity"] = citation_validity(records)
    out["escalation_rate"] = escalation_rate(records)
    pairs = top1_confidences(records)
    if pairs:
        out["confidence_n"] = len(pairs)
        out["mean_confidence"] = _mean(p for p, _ in pairs)
        out["ece"] = expected_calibration_error(pairs)
        out["brier"] = brier_score(pairs)
    out["diagnostic_escalation_rate"] = _mean(float(bool(r["diagnostic"].get("escalated"))) for r in records
                                              if r.get("diagnostic"))
    out["latency_p50_ms"] = latency_percentile(records, 50)
    out["latency_p95_ms"] = latency_percentile(records, 95)
    out["llm_calls"] = llm_calls_per_case(records)
    out["prompt_tokens"] = prompt_tokens_per_case(records)
    out["completion_tokens"] = completion_tokens_per_case(records)
    out["total_tokens"] = total_tokens(records)
    if prices is not None:
        cost = cost_usd(records, prices)
        out["cost_usd"] = cost
        out["cost_per_case_usd"] = cost / len(records) if cost is not None and records else None
    out["error_rate"] = error_rate(records)
    out["errors"] = error_count(records)
    out["warnings"] = warning_count(records)
    out["string_fallbacks"] = string_fallbacks(records)
    out["unlinked_predictions"] = unlinked_predictions(records)
    return {key: float(v) for key, v in out.items() if v is not None}


def summarise(records: Iterable[Record], prices: Prices | None = None) -> list[Summary]:
    """Group the records by (dataset, system, model), compute :func:`repeat_metrics` for each repeat, and
    aggregate each metric across repeats with :func:`avg_sd`. Groups come out in order of first appearance."""
    groups: dict[tuple[str, str, str], dict[int, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        key = (str(r.get("dataset", "")), str(r.get("system", "")), str(r.get("model", "none")))
        groups[key][int(r.get("repeat", 0) or 0)].append(r)
    summaries = []
    for (dataset, system, model), by_repeat in groups.items():
        per_repeat = [repeat_metrics(by_repeat[rep], prices) for rep in sorted(by_repeat)]
        keys = list(dict.fromkeys(k for m in per_repeat for k in m))
        sizes = [len(by_repeat[rep]) for rep in sorted(by_repeat)]
        summaries.append(Summary(
            dataset=dataset, system=system, model=model, n=min(sizes), repeats=len(sizes),
            metrics={k: avg_sd(m.get(k) for m in per_repeat) for k in keys}, n_per_repeat=sizes,
            mcq=any(is_mcq(r) for rs in by_repeat.values() for r in rs)))
    return summaries


# --------------------------------------------------------------------------------------------- paired comparison


def mcnemar_exact(b01: int, b10: int) -> float:
    """Exact two-sided McNemar test: under the null each of the n = b01 + b10 discordant pairs is equally likely
    to go either way, so p = min(1, 2 · P(X <= min(b01, b10))) with X ~ Binomial(n, 1/2). Computed with exact
    integer binomial coefficients, so it stays exact for n in the thousands. n = 0 gives 1.0."""
    if b01 < 0 or b10 < 0:
        raise ValueError("discordant counts must be non-negative")
    n = b01 + b10
    if n == 0:
        return 1.0
    low = min(b01, b10)
    term, tail = 1, 0  # term = C(n, i), built up exactly
    for i in range(low + 1):
        tail += term
        term = term * (n - i) // (i + 1)
    return min(1.0, (2 * tail) / (1 << n))  # exact integers; one correctly rounded division at the end


@dataclass
class Paired:
    """A paired comparison of system A and system B on the same cases.

    ``n``: cases present in both; ``only_a``/``only_b``: cases present in one only (left out). ``acc_a``,
    ``acc_b``: accuracy on the paired cases; ``diff = acc_b - acc_a``; ``ci_low``/``ci_high``: 95% percentile
    bootstrap interval of ``diff``. ``b01``: cases A missed and B hit; ``b10``: A hit and B missed; ``p_value``:
    exact McNemar test on them. ``repeats_a``/``repeats_b``: the largest number of repeats a case has per system.
    Accuracies, diff and CI are None when ``n`` is 0.
    """

    n: int
    only_a: int
    only_b: int
    acc_a: float | None
    acc_b: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    b01: int
    b10: int
    p_value: float
    repeats_a: int = 1
    repeats_b: int = 1


def _hits_by_case(records: Iterable[Record], k: int, level: Level) -> dict[tuple[str, str], dict[int, bool]]:
    out: dict[tuple[str, str], dict[int, bool]] = defaultdict(dict)
    for r in records:
        out[(str(r.get("dataset", "")), str(r.get("case_id")))][int(r.get("repeat", 0) or 0)] = hit(r, k, level)
    return out


def paired(records_a: Sequence[Record], records_b: Sequence[Record], k: int = 1, level: Level = "strict",
           n_boot: int = 10000, seed: int = 0) -> Paired:
    """Compare system B against system A on the cases both answered (top-``k`` hits at ``level``).

    Cases are matched by (dataset, case_id); A and B may be different systems, models or runs. The unit of
    analysis is the case, so repeats of one case are never treated as independent:

    * accuracy, ``diff`` and the bootstrap use each case's hit rate averaged over that system's repeats of it.
      With the same repeats on both sides this equals matching by (case_id, repeat) and averaging; with one
      repeat it is plain top-k accuracy;
    * McNemar needs one yes/no per case and system: it uses repeat 0 (or, when repeat 0 is missing, the lowest
      repeat present both sides have, else each side's lowest repeat).

    The 95% CI is the 2.5th and 97.5th percentile of the mean per-case difference over ``n_boot`` resamples of
    the paired cases with replacement, drawn with ``numpy.random.default_rng(seed)``, so it is deterministic
    for a seed.
    """
    hits_a, hits_b = _hits_by_case(records_a, k, level), _hits_by_case(records_b, k, level)
    common = [c for c in hits_a if c in hits_b]
    only_a = sum(c not in hits_b for c in hits_a)
    only_b = sum(c not in hits_a for c in hits_b)
    reps_a = max((len(v) for v in hits_a.values()), default=1)
    reps_b = max((len(v) for v in hits_b.values()), default=1)
    if not common:
        return Paired(n=0, only_a=only_a, only_b=only_b, acc_a=None, acc_b=None, diff=None, ci_low=None,
                      ci_high=None, b01=0, b10=0, p_value=1.0, repeats_a=reps_a, repeats_b=reps_b)
    score_a = np.array([sum(hits_a[c].values()) / len(hits_a[c]) for c in common], dtype=float)
    score_b = np.array([sum(hits_b[c].values()) / len(hits_b[c]) for c in common], dtype=float)
    b01 = b10 = 0
    for c in common:
        ha, hb = hits_a[c], hits_b[c]
        shared = sorted(set(ha) & set(hb))
        ya, yb = (ha[shared[0]], hb[shared[0]]) if shared else (ha[min(ha)], hb[min(hb)])
        b01 += (not ya) and yb
        b10 += ya and not yb
    d = score_b - score_a
    n = len(common)
    rng = np.random.default_rng(seed)
    means = np.empty(max(n_boot, 0), dtype=float)
    chunk = max(1, 2_000_000 // n)  # bounded memory for large n
    for start in range(0, len(means), chunk):
        size = min(chunk, len(means) - start)
        means[start:start + size] = d[rng.integers(0, n, size=(size, n))].mean(axis=1)
    if len(means):
        ci_low, ci_high = (float(x) for x in np.percentile(means, [2.5, 97.5]))
    else:
        ci_low = ci_high = None
    return Paired(n=n, only_a=only_a, only_b=only_b, acc_a=float(score_a.mean()), acc_b=float(score_b.mean()),
                  diff=float(d.mean()), ci_low=ci_low, ci_high=ci_high, b01=int(b01), b10=int(b10),
                  p_value=mcnemar_exact(b01, b10), repeats_a=reps_a, repeats_b=reps_b)

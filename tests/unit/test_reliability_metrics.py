"""The reliability of the top-1 diagnostic confidence (clinicalrag/bench/metrics.py, report.py) on hand-computed
records."""
from __future__ import annotations

import json

import pytest

from clinicalrag.bench.metrics import (
    brier_score,
    expected_calibration_error,
    reliability,
    repeat_metrics,
    summarise,
    top1_confidences,
)
from clinicalrag.bench.report import build_report


def _rec(case: str, conf: float | None, rank: int | None, **extra) -> dict:
    preds = [{"rank": 1, "diagnosis": "x", "confidence": conf}, {"rank": 2, "diagnosis": "y", "confidence": 0.01}]
    if conf is None:
        preds = [{"rank": 1, "diagnosis": "x"}]
    return {"dataset": "d", "system": "pipeline", "model": "none", "repeat": 0, "case_id": case, "status": "ok",
            "predictions": preds, "match": {"strict_rank": rank}, **extra}


RECORDS = [
    _rec("r1", 0.05, 1, diagnostic={"escalated": True}),
    _rec("r2", 0.05, None, diagnostic={"escalated": True}),
    _rec("r3", 0.15, 2, diagnostic={"escalated": False}),   # right at rank 2: a top-1 miss
    _rec("r4", 0.95, 1, diagnostic={"escalated": False}),
    _rec("r5", 1.0, None, diagnostic={"escalated": False}),  # 1.0 falls in the last bin
    {**_rec("r6", 0.9, 1), "status": "error", "predictions": []},  # failed: no prediction, left out
    _rec("r7", None, 1),                                     # no confidence (uncalibrated): left out
    _rec("r8", 0.35, None, answer="A", choice="A"),          # MCQ: the chosen option is the hit
]
PAIRS = [(0.05, True), (0.05, False), (0.15, False), (0.95, True), (1.0, False), (0.35, True)]


def test_top1_confidences_keep_only_records_with_one():
    assert top1_confidences(RECORDS) == PAIRS


def test_ece_and_brier_by_hand():
    # bins: [0, .1): 0.05, 0.05 -> acc 1/2 | [.1, .2): 0.15 -> 0 | [.3, .4): 0.35 -> 1 | [.9, 1]: 0.95, 1.0 -> 1/2
    ece = (2 * abs(0.5 - 0.05) + abs(0.0 - 0.15) + abs(1.0 - 0.35) + 2 * abs(0.5 - 0.975)) / 6
    assert ece == pytest.approx(2.65 / 6)
    assert expected_calibration_error(PAIRS) == pytest.approx(ece)
    assert brier_score(PAIRS) == pytest.approx((0.95 ** 2 + 0.05 ** 2 + 0.15 ** 2 + 0.05 ** 2 + 1 + 0.65 ** 2) / 6)
    assert expected_calibration_error([(0.3, True)], bins=1) == pytest.approx(0.7)
    assert expected_calibration_error([]) is None and brier_score([]) is None
    with pytest.raises(ValueError):
        expected_calibration_error(PAIRS, bins=0)
    # perfectly calibrated: ECE 0, Brier = the variance of the outcome
    fair = [(0.25, True)] + [(0.25, False)] * 3
    assert expected_calibration_error(fair) == pytest.approx(0.0)
    assert brier_score(fair) == pytest.approx(0.1875)


def test_reliability_table():
    rel = reliability(RECORDS)
    assert (rel.n, rel.missing) == (6, 2)
    assert rel.mean_confidence == pytest.approx(2.55 / 6) and rel.accuracy == pytest.approx(0.5)
    assert rel.ece == pytest.approx(2.65 / 6) and rel.brier == pytest.approx(2.3525 / 6)
    assert len(rel.bins) == 10 and sum(b.n for b in rel.bins) == 6
    filled = [(b.low, b.n, b.mean_confidence, b.accuracy) for b in rel.bins if b.n]
    assert filled == [(0.0, 2, pytest.approx(0.05), 0.5), (0.1, 1, pytest.approx(0.15), 0.0),
                      (0.3, 1, pytest.approx(0.35), 1.0), (0.9, 2, pytest.approx(0.975), 0.5)]
    assert rel.bins[5].n == 0 and rel.bins[5].mean_confidence is None
    assert reliability([_rec("z", None, 1)]) is None and reliability([]) is None


def test_repeat_metrics_and_summary_carry_calibration():
    m = repeat_metrics(RECORDS)
    assert m["confidence_n"] == 6 and m["mean_confidence"] == pytest.approx(0.425)
    assert m["ece"] == pytest.approx(2.65 / 6) and m["brier"] == pytest.approx(2.3525 / 6)
    assert m["diagnostic_escalation_rate"] == pytest.approx(2 / 5)
    plain = repeat_metrics([_rec("z", None, 1)])
    assert "ece" not in plain and "brier" not in plain and "diagnostic_escalation_rate" not in plain
    (s,) = summarise(RECORDS)
    assert s.mean("ece") == pytest.approx(2.65 / 6)


def test_report_has_a_reliability_section(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"run_id": "run", "dataset": {"name": "d"}}))
    (run / "records.jsonl").write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    text = build_report([run], tmp_path / "out", plots=False).read_text()
    assert "## Reliability of the diagnostic confidence" in text
    assert "| d | pipeline | none | 6 | 42.5 | 50.0 | 0.442 | 0.392 | 2 | 40.0 |" in text
    assert "| 0.9–1.0 | 2 | 97.5 | 50.0 |" in text and "| 0.0–0.1 | 2 | 5.0 | 50.0 |" in text
    assert "| 0.5–0.6 |" not in text

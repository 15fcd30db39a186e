"""benchmarks/fit_confidence.py on hand-made run folders: which records it uses (dev split, the system, with
features), how it labels predictions, and the calibration file it writes."""
from __future__ import annotations

import json
from itertools import count

import pytest

from agents.confidence import load_calibration
from benchmarks.fit_confidence import base_dataset, collect, main
from clinicalrag.bench.datasets import split_of


def _ids(split: str, n: int, prefix: str) -> list[str]:
    out = []
    for i in count():
        cid = f"{prefix}-{i}"
        if split_of(cid) == split:
            out.append(cid)
            if len(out) == n:
                return out


def _features(rank: int, right: bool) -> dict:
    return {"rank": rank, "cand": rank, "rel": 1.0 / rank, "gap": 0.1, "matched": 3 if right else 1,
            "findings": 4, "contra": 0, "kg": rank, "text": 1 if right else 0, "page": rank}


def _record(case_id: str, gold: int | None, *, system: str = "pipeline", features: bool = True,
            dataset: str = "toy/dev") -> dict:
    preds = []
    for r in (1, 2, 3):
        p = {"rank": r, "diagnosis": f"d{r}", "concept_id": f"D:{r}", "confidence": None}
        if features:
            p["features"] = _features(r, r == gold)
        preds.append(p)
    return {"system": system, "model": "none", "dataset": dataset, "repeat": 0, "case_id": case_id, "status": "ok",
            "predictions": preds, "match": {"strict_rank": gold}}


def _run(tmp_path, name: str, records: list[dict]):
    d = tmp_path / name
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"run_id": name, "code_version": "test",
                                                 "dataset": {"name": "toy/dev", "size": len(records)}}))
    (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return d


@pytest.fixture
def runs(tmp_path):
    dev = _ids("dev", 24, "toy")
    test = _ids("test", 3, "toy")
    recs = [_record(cid, gold=(1 if i % 3 == 0 else 2 if i % 3 == 1 else None)) for i, cid in enumerate(dev)]
    recs += [_record(cid, gold=1) for cid in test]                       # test half: never used
    recs += [_record(dev[0], gold=1, system="bm25")]                     # another system
    recs += [_record(_ids("dev", 25, "old")[-1], gold=1, features=False)]  # a run from before the features
    return [_run(tmp_path, "a", recs)], dev


def test_collect_uses_dev_records_of_the_system_with_features(runs):
    dirs, dev = runs
    got = collect([str(d) for d in dirs])
    assert got.cases == {"toy": 24}
    assert got.skipped == {"test-split case": 3, "other system": 1,
                           "no features (a run made before the confidence work)": 1}
    assert len(got.items) == 72
    # the label: the prediction whose rank is the strict match rank
    first = [it for it in got.items if it.group == f"toy/{dev[0]}"]
    assert [it.label for it in first] == [1, 0, 0]
    second = [it for it in got.items if it.group == f"toy/{dev[1]}"]
    assert [it.label for it in second] == [0, 1, 0]
    assert sum(it.label for it in got.items) == 16
    assert base_dataset("symptom2disease/dev (n=300, seed 0)") == "symptom2disease"


def test_main_writes_a_calibration_with_its_provenance(runs, tmp_path, capsys):
    dirs, _ = runs
    out = tmp_path / "cal.json"
    assert main([str(d) for d in dirs] + ["--out", str(out), "--provisional", "--folds", "3", "--note", "toy"]) == 0
    printed = capsys.readouterr().out
    assert "Top-1 reliability, out-of-fold (3-fold" in printed and "| all | 24 |" in printed
    cal = load_calibration(out)
    p = cal.provenance
    assert p["status"] == "provisional" and p["split"] == "dev" and p["datasets"] == {"toy": 24}
    assert (p["n_cases"], p["n_predictions"], p["positives"]) == (24, 72, 16)
    assert p["top1_accuracy"] == pytest.approx(8 / 24, abs=1e-4) and p["note"] == "toy"
    assert p["settings"]["l2"] in (0.1, 0.3, 1.0, 3.0, 10.0) and p["settings"]["cv_log_loss_by_l2"]
    assert p["runs"][0]["run_id"] == "a" and p["cross_validation"]["top1"]["all"]["n"] == 24
    # the fitted model puts the gold-like predictions above the others
    right, wrong = _features(1, True), _features(1, False)
    assert cal.predict(right) > cal.predict(wrong)


def test_dry_run_writes_nothing_and_unusable_records_fail(tmp_path, runs, capsys):
    dirs, _ = runs
    out = tmp_path / "none.json"
    assert main([str(d) for d in dirs] + ["--out", str(out), "--dry-run", "--l2", "1"]) == 0
    assert not out.exists()
    old = _run(tmp_path, "old", [_record(cid, gold=1, features=False) for cid in _ids("dev", 3, "x")])
    assert main([str(old), "--out", str(out)]) == 2
    assert "no usable dev-split records with features" in capsys.readouterr().err and not out.exists()

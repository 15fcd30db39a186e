"""Fit the diagnostic-confidence calibration (``agents/data/diagnostic_confidence.json``) on dev-split bench records.

Every prediction of a pipeline record carries the features of :func:`agents.confidence.item_features` (the bench
runner stores them); its label is 1 when it is the gold diagnosis (its rank is the record's strict match rank), else
0. A logistic model (:func:`agents.confidence.fit_calibration`, L2-regularised, standardised inputs) is fitted on all
predictions of the development halves; only records whose case is in the dev half (``datasets.split_of``) are used,
whatever the run's ``--split``, so a test case can never shape the calibration. Before the final fit, a K-fold
cross-validation grouped by case gives out-of-fold probabilities: their top-1 reliability table, ECE and Brier score
(per dataset and pooled) are printed as Markdown, next to those of a constant (the base rate) for comparison.

    clinicalrag bench run --dataset symptom2disease --split dev --limit 300 --systems pipeline --out RUNS/cal-s2d
    clinicalrag bench run --dataset ddxplus --split dev --limit 196 --systems pipeline --out RUNS/cal-ddxplus
    clinicalrag bench run --dataset medqa-free --split dev --systems pipeline --out RUNS/cal-medqa
    python benchmarks/fit_confidence.py RUNS/cal-s2d RUNS/cal-ddxplus RUNS/cal-medqa            # writes the file
    python benchmarks/fit_confidence.py RUNS/cal-* --provisional --report fit.md                  # labelled provisional
    python benchmarks/fit_confidence.py RUNS/cal-* --dry-run                                      # numbers only

Use one of ``medqa-free`` / ``medqa-mcq`` (they are the same cases). Records of another system (``--system``), of a
language model other than ``--model`` (default: none, the offline pipeline) and failed cases are left out.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.confidence import CALIBRATION_FILE, Calibration, fit_calibration  # noqa: E402
from clinicalrag.bench.datasets import split_of  # noqa: E402
from clinicalrag.bench.metrics import brier_score, expected_calibration_error  # noqa: E402
from clinicalrag.bench.report import load_run  # noqa: E402

BINS = 10
L2_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)


@dataclass
class Item:
    group: str              # dataset/case id: the unit of the cross-validation folds
    dataset: str
    rank: int
    features: dict[str, Any]
    label: int


@dataclass
class Collected:
    items: list[Item] = field(default_factory=list)
    cases: Counter = field(default_factory=Counter)          # dataset -> dev cases used
    skipped: Counter = field(default_factory=Counter)        # why records were left out
    runs: list[dict[str, Any]] = field(default_factory=list)


def base_dataset(name: str) -> str:
    """"symptom2disease" for "symptom2disease/dev" or "symptom2disease/dev (n=300, seed 0)"."""
    return str(name).split("/")[0].split(" ")[0]


def collect(run_dirs: list[str], system: str = "pipeline", model: str = "none", max_rank: int = 10) -> Collected:
    """The labelled predictions of the dev-split records of ``system`` with ``model`` in the run folders."""
    out = Collected()
    seen: set[tuple[str, str, int]] = set()
    for d in run_dirs:
        run = load_run(d)
        ds_info = run.manifest.get("dataset") or {}
        out.runs.append({"run_id": run.run_id, "dataset": ds_info.get("name"), "size": ds_info.get("size"),
                         "sampled": ds_info.get("sampled"), "seed": ds_info.get("seed"),
                         "code_version": run.manifest.get("code_version"),
                         "finished_at": run.manifest.get("finished_at")})
        for r in run.records:
            if r.get("system") != system:
                out.skipped["other system"] += 1
                continue
            if str(r.get("model") or "none") != model:
                out.skipped["other model"] += 1
                continue
            if r.get("status") == "error":
                out.skipped["failed case"] += 1
                continue
            case_id = str(r.get("case_id"))
            if split_of(case_id) != "dev":
                out.skipped["test-split case"] += 1
                continue
            ds = base_dataset(r.get("dataset", ""))
            key = (ds, case_id, int(r.get("repeat", 0) or 0))
            if key in seen:
                out.skipped["duplicate"] += 1
                continue
            preds = (r.get("predictions") or [])[:max_rank]
            if not preds:
                out.skipped["no prediction"] += 1
                continue
            if any("features" not in p for p in preds):
                out.skipped["no features (a run made before the confidence work)"] += 1
                continue
            seen.add(key)
            gold = (r.get("match") or {}).get("strict_rank")
            out.cases[ds] += 1
            for p in preds:
                out.items.append(Item(group=f"{ds}/{case_id}", dataset=ds, rank=int(p["rank"]),
                                      features=dict(p["features"]), label=int(gold is not None and p["rank"] == gold)))
    return out


def fold_of(group: str, folds: int) -> int:
    return int(hashlib.sha256(group.encode("utf-8")).hexdigest(), 16) % folds


def cross_validate(items: list[Item], folds: int, l2: float) -> list[float]:
    """Out-of-fold probabilities of every item (folds by case)."""
    probs = [0.0] * len(items)
    for k in range(folds):
        train = [it for it in items if fold_of(it.group, folds) != k]
        if not train:
            continue
        cal = fit_calibration([it.features for it in train], [it.label for it in train], l2=l2)
        for i, it in enumerate(items):
            if fold_of(it.group, folds) == k:
                probs[i] = cal.predict(it.features)
    return probs


def log_loss(items: list[Item], probs: list[float]) -> float:
    eps = 1e-6
    return -sum(math.log(min(max(p if it.label else 1 - p, eps), 1.0)) for it, p in zip(items, probs)) / len(items)


def choose_l2(items: list[Item], folds: int, grid: tuple[float, ...] = L2_GRID) -> tuple[float, dict[str, float]]:
    """The penalty of ``grid`` with the lowest out-of-fold log loss over all predictions, and every loss."""
    losses = {l2: log_loss(items, cross_validate(items, folds, l2)) for l2 in grid}
    best = min(losses, key=lambda l2: (round(losses[l2], 6), -l2))   # ties: the stronger penalty
    return best, {str(k): round(v, 5) for k, v in losses.items()}


def _top1(items: list[Item], probs: list[float]) -> list[tuple[str, float, bool]]:
    """(dataset, probability, hit) of each case's first prediction."""
    return [(it.dataset, p, bool(it.label)) for it, p in zip(items, probs) if it.rank == 1]


def reliability_markdown(rows: list[tuple[str, float, bool]], constant: float) -> tuple[str, dict[str, Any]]:
    """Markdown tables (per dataset and pooled: n, mean confidence, accuracy, ECE, Brier, and the constant's Brier;
    then the pooled bins) and the same numbers as a dict."""
    by_ds: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for ds, p, y in rows:
        by_ds[ds].append((p, y))
    by_ds["all"] = [(p, y) for _, p, y in rows]
    summary: dict[str, Any] = {}
    lines = ["| dataset | n | mean confidence | top-1 accuracy | ECE | Brier | Brier of a constant |",
             "|---|---|---|---|---|---|---|"]
    for ds, pairs in by_ds.items():
        if not pairs:
            continue
        acc = sum(y for _, y in pairs) / len(pairs)
        mean = sum(p for p, _ in pairs) / len(pairs)
        ece = expected_calibration_error(pairs, BINS)
        brier = brier_score(pairs)
        base = brier_score([(constant, y) for _, y in pairs])
        summary[ds] = {"n": len(pairs), "mean_confidence": round(mean, 4), "accuracy": round(acc, 4),
                       "ece": round(ece, 4), "brier": round(brier, 4), "brier_constant": round(base, 4)}
        lines.append(f"| {ds} | {len(pairs)} | {mean:.3f} | {acc:.3f} | {ece:.3f} | {brier:.3f} | {base:.3f} |")
    lines += ["", "| confidence | n | mean predicted | observed accuracy |", "|---|---|---|---|"]
    bins: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for p, y in by_ds["all"]:
        bins[min(int(p * BINS), BINS - 1)].append((p, y))
    table = []
    for b in sorted(bins):
        v = bins[b]
        mean, acc = sum(p for p, _ in v) / len(v), sum(y for _, y in v) / len(v)
        table.append({"low": b / BINS, "high": (b + 1) / BINS, "n": len(v), "mean_predicted": round(mean, 4),
                      "accuracy": round(acc, 4)})
        lines.append(f"| {b / BINS:.1f}–{(b + 1) / BINS:.1f} | {len(v)} | {mean:.3f} | {acc:.3f} |")
    summary["bins"] = table
    return "\n".join(lines), summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="bench run folders (records.jsonl + manifest.json)")
    ap.add_argument("--system", default="pipeline", help="the system whose records are used (default pipeline)")
    ap.add_argument("--model", default="none", help="the LLM model of the records (default none: offline)")
    ap.add_argument("--l2", type=float, default=None,
                    help="L2 penalty on the coefficients (default: chosen by cross-validated log loss from "
                         f"{', '.join(map(str, L2_GRID))})")
    ap.add_argument("--folds", type=int, default=5, help="cross-validation folds, grouped by case (default 5)")
    ap.add_argument("--max-rank", type=int, default=10, help="predictions per record used (default 10)")
    ap.add_argument("--out", default=str(CALIBRATION_FILE), help="the calibration file to write")
    ap.add_argument("--provisional", action="store_true",
                    help="label the parameters provisional (a small fit, to be replaced by one on the full dev split)")
    ap.add_argument("--note", default=None, help="a note kept in the provenance (e.g. why this fit was made)")
    ap.add_argument("--dry-run", action="store_true", help="print the numbers, write nothing")
    ap.add_argument("--report", default=None, help="also write the Markdown tables to this file")
    args = ap.parse_args(argv)

    got = collect(args.runs, args.system, args.model, args.max_rank)
    for why, n in sorted(got.skipped.items()):
        print(f"left out: {n} record(s): {why}", file=sys.stderr)
    if not got.items:
        print("no usable dev-split records with features: run `clinicalrag bench run --split dev --systems pipeline` "
              "with this code first", file=sys.stderr)
        return 2
    labels = [it.label for it in got.items]
    if not 0 < sum(labels) < len(labels):
        print("every prediction has the same label: nothing to calibrate", file=sys.stderr)
        return 2
    top1_rate = sum(it.label for it in got.items if it.rank == 1) / max(1, sum(it.rank == 1 for it in got.items))
    folds = max(2, args.folds)
    losses: dict[str, float] = {}
    if args.l2 is None:
        args.l2, losses = choose_l2(got.items, folds)
    probs = cross_validate(got.items, folds, args.l2)
    cv_md, cv = reliability_markdown(_top1(got.items, probs), top1_rate)
    cal = fit_calibration([it.features for it in got.items], labels, l2=args.l2)
    fit_md, fit = reliability_markdown(_top1(got.items, [cal.predict(it.features) for it in got.items]), top1_rate)
    provenance = {
        "status": "provisional" if args.provisional else "fitted",
        "datasets": dict(sorted(got.cases.items())), "split": "dev", "system": args.system, "model": args.model,
        "n_cases": sum(got.cases.values()), "n_predictions": len(got.items), "positives": sum(labels),
        "top1_accuracy": round(top1_rate, 4), "label": "prediction rank == strict match rank",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"), "runs": got.runs,
        "cross_validation": {"folds": folds, "grouped_by": "case", "log_loss": round(log_loss(got.items, probs), 5),
                             "top1": cv},
        "in_sample": {"top1": {k: v for k, v in fit.items() if k != "bins"}},
        "note": args.note,
        "settings": {"l2": args.l2, "folds": folds, "max_rank": args.max_rank,
                     "cv_log_loss_by_l2": losses or None},
    }
    cal = Calibration(features=cal.features, mean=cal.mean, scale=cal.scale, coef=cal.coef, intercept=cal.intercept,
                      provenance=provenance, l2=args.l2)
    text = "\n".join([
        f"Dev-split cases: {', '.join(f'{k} {v}' for k, v in sorted(got.cases.items()))} "
        f"({provenance['n_cases']} cases, {len(got.items)} predictions, {sum(labels)} correct); "
        f"top-1 accuracy {top1_rate:.3f}.", "",
        f"L2 penalty {args.l2:g}" + (f" (out-of-fold log loss by penalty: {losses})" if losses else "") + ".", "",
        f"Top-1 reliability, out-of-fold ({folds}-fold cross-validation grouped by case):", "", cv_md, "",
        "Top-1 reliability of the final fit on the same records (in-sample):", "", fit_md, "",
        "Coefficients (centred inputs):", "",
        *(f"- {n}: {c:+.3f}" for n, c in zip(cal.features, cal.coef)), f"- intercept: {cal.intercept:+.3f}", ""])
    print(text)
    if args.report:
        Path(args.report).write_text(text, encoding="utf-8")
    if not args.dry_run:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(cal.to_json(), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

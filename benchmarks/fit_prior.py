"""Fit the commonness prior of the differential (``agents/prior.py``) on the development halves of the benchmarks.

For every case of the chosen datasets' ``--split`` half (``clinicalrag.bench.datasets.split_of``), the offline
pipeline's candidate stage runs as a benchmark run would (intake normalisation, MEE, HKI retrieval and rank fusion
without an LLM, the prior off) with a pool of ``--pool`` fused candidates. The gold diagnosis is linked to KG
concepts by the benchmark's own matcher (strict: the gold concept or an equivalent). A conditional logit (softmax
over each case's candidates) over the fusion features (the fused score and rank, and where each ranking put the
candidate), the evidence feature and the commonness features (``knowledge/prior.py``) is fitted so that the gold
candidates get the highest probability; the L2 penalty (on the commonness weights; on every weight with
``--penalise all``) is chosen by cross-validation (leave one dataset out) unless given. Cases whose gold is not among
the candidates carry no information and are left out of the fit (they are counted).

The weights, the feature standardisation and the provenance (datasets, split, cases, date, code and KG versions,
feature list, the fit's own numbers) go to ``--out`` (default ``agents/data/commonness_prior.json``, which the
pipeline reads). ``--eval-split test`` also measures, on the other half, how the re-ranking moves the gold within
the candidate pool (top-1/3/5 of the pool before and after; the pipeline's differential numbers come from
``clinicalrag bench run --systems pipeline,pipeline:no-prior``).

    python benchmarks/fit_prior.py                                   # all dev cases of the four datasets
    python benchmarks/fit_prior.py --limit 30 --provisional          # a quick fit, labelled provisional
    python benchmarks/fit_prior.py --eval-split test --eval-limit 200 --save-rows rows.jsonl
    python benchmarks/fit_prior.py --from-rows rows.jsonl --l2 0.1   # refit without running the pipeline
    python benchmarks/fit_prior.py --drop 'icd_ch,fusion_log_rank'  # weight 0 on the log rank: utility monotone
                                                                     # in the fused score

DDXPlus runs only when the KG does not hold the DDXPlus conditions (its generator). About 0.1-0.5 s per case after a
start-up of 10-20 s on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

DATASETS = ("cases", "symptom2disease", "medqa-free", "ddxplus")
L2_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
# features left out by default: the ICD-10-CM chapters learn which chapters a benchmark's labels fall in (DDXPlus's
# immune and infectious conditions, Symptom2Disease's skin diseases) and move a candidate by up to 3 logits; held out
# one benchmark at a time they made the prior worse than no prior (docs/results.md)
# "contradicted" (findings a candidate expects that the patient does not have): fitted with a small *positive*
# weight (it marks diseases the KG describes richly, not a reason for them) and left out; the share of the
# findings explained (explained_rel) is kept: leave-one-dataset-out NLL 2.096 without it, 2.078 with it (dev halves)
DEFAULT_DROP = "icd_ch,contradicted"
# --rank-features (where each ranking put the candidate, agents/prior.RANK_FEATURES) is off by default: fitted with
# them (2026-12-03, every weight penalised, L2 1.0 by leave-one-dataset-out NLL) the bench's test halves moved DDXPlus
# top-1 +5.1 and top-5 -2.5 points, MedQA top-1 +3.0, Symptom2Disease within one text, and a hand-written case lost
# its first place; a refit without them did not beat the packaged weights either (docs/results.md)
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "agents" / "data" / "commonness_prior.json"

log = logging.getLogger("fit_prior")


@dataclass
class CaseRows:
    """One case's fused candidates (best first) and which of them are the gold diagnosis."""

    dataset: str
    case_id: str
    label: str
    candidates: list[dict[str, Any]]          # {"concept_id", "name", "score", "matched", "contradicted"}
    gold: list[int] = field(default_factory=list)
    linked: bool = True                       # the gold label links to a KG concept

    def to_json(self) -> dict[str, Any]:
        return self.__dict__

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CaseRows:
        return cls(**d)


# ---------------------------------------------------------------------------------------------- collection
def candidate_stage(res: Any, text: str, pool: int) -> list[Any]:
    """The fused candidates of the offline pipeline for a presentation, the prior off, ``pool`` of them at most."""
    from agents.guard import strip_instructions  # noqa: PLC0415
    from agents.hki import RetrievalParams  # noqa: PLC0415
    from graph.config import PipelineConfig  # noqa: PLC0415
    from graph.inputs import join_turns, normalise_presentation  # noqa: PLC0415

    cfg = PipelineConfig(use_prior=False)
    clean, _ = normalise_presentation(text, cfg.max_presentation_chars)      # the intake node's steps
    msg, _ = strip_instructions(clean)
    presentation, _, _ = join_turns([], msg if msg.strip() else "(no clinical content)", cfg.max_presentation_chars)
    ex, _ = res.mee.extract(presentation).capped(cfg.max_entities)
    p = RetrievalParams.from_config(cfg)
    p = replace(p, differential_k=max(p.differential_k, pool // 2))
    return res.hki.retrieve(ex, presentation, p).candidates[:pool]


def collect(res: Any, dataset: str, split: str, limit: int | None, seed: int, pool: int,
            progress: bool = True) -> tuple[list[CaseRows], dict[str, Any]]:
    from clinicalrag.bench import datasets  # noqa: PLC0415
    from clinicalrag.bench.matching import LabelMatcher  # noqa: PLC0415

    if dataset == "ddxplus" and datasets.ddxplus_conditions_in_kg(res.kg):
        raise SystemExit("the knowledge graph holds the DDXPlus conditions (the generator of the DDXPlus patients); "
                         "fit without ddxplus or rebuild the KG without them")
    ds = datasets.load_dataset(dataset, limit=limit, seed=seed, split=split)
    matcher = LabelMatcher(res.kg, datasets.label_aliases(dataset))
    rows: list[CaseRows] = []
    t0 = time.perf_counter()
    for i, case in enumerate(ds.cases, 1):
        cands = candidate_stage(res, case.text, pool)
        gold_ids = matcher.gold_concepts(case)
        gold = matcher.closure(gold_ids)
        rows.append(CaseRows(
            dataset=dataset, case_id=case.id, label=case.label,
            candidates=[{"concept_id": c.concept_id, "name": c.name, "score": c.score, "matched": list(c.matched),
                         "contradicted": list(c.contradicted), "ranks": dict(c.ranks)} for c in cands],
            gold=[j for j, c in enumerate(cands) if matcher.closure([c.concept_id]) & gold],
            linked=bool(gold_ids)))
        if progress and (i % 25 == 0 or i == len(ds.cases)):
            print(f"  {ds.name}: {i}/{len(ds.cases)} cases, {time.perf_counter() - t0:.0f}s", file=sys.stderr,
                  flush=True)
    info = {"dataset": ds.name, "total_in_split": ds.total, "cases": len(ds.cases), "sampled": ds.sampled,
            "seed": seed, "case_ids_sha256": ds.case_ids_sha256, "sha256": ds.sha256,
            "seconds": round(time.perf_counter() - t0, 1)}
    return rows, info


# ---------------------------------------------------------------------------------------------- fitting
def design(rows: list[CaseRows], features: Any, names: list[str]) -> list[np.ndarray]:
    from agents.prior import feature_rows  # noqa: PLC0415
    from agents.types import Candidate  # noqa: PLC0415

    return [feature_rows(features, [Candidate(**c) for c in r.candidates], names) for r in rows]


def standardise(xs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    allx = np.vstack([x for x in xs if len(x)])
    mean = allx.mean(axis=0)
    scale = allx.std(axis=0)
    scale[scale < 1e-9] = 1.0
    return mean, scale


def fit(xs: list[np.ndarray], golds: list[list[int]], l2: float, n_fusion: int):
    """``n_fusion``: how many leading features go unpenalised (0: the penalty shrinks every weight)."""
    from agents.prior import fit_conditional_logit  # noqa: PLC0415

    penalise = [False] * n_fusion + [True] * (xs[0].shape[1] - n_fusion)
    return fit_conditional_logit(xs, golds, l2=l2, penalise=penalise)


def nll(beta: np.ndarray, xs: list[np.ndarray], golds: list[list[int]]) -> float:
    total, n = 0.0, 0
    for x, g in zip(xs, golds):
        if not g or not len(x):
            continue
        u = x @ beta
        p = np.exp(u - u.max())
        p /= p.sum()
        total -= math.log(max(float(p[g].sum()), 1e-300))
        n += 1
    return total / max(n, 1)


def choose_l2(xs: list[np.ndarray], golds: list[list[int]], n_fusion: int, folds: int = 5,
              seed: int = 0, groups: Sequence[str] | None = None) -> tuple[float, dict[str, float]]:
    """The L2 penalty of :data:`L2_GRID` with the lowest cross-validated NLL over the informative cases: folds of
    cases, or (``groups``, one label per case, at least two distinct) one fold per group — leave one benchmark out,
    so the penalty is the one that carries to a kind of presentation the fit has not seen."""
    idx = [i for i, g in enumerate(golds) if g]
    if groups is not None and len({groups[i] for i in idx}) >= 2:
        names = sorted({groups[i] for i in idx})
        parts = [[i for i in idx if groups[i] == g] for g in names]
    else:
        rng = np.random.default_rng(seed)
        rng.shuffle(idx)
        parts = [idx[f::folds] for f in range(folds)]
    scores: dict[str, float] = {}
    for l2 in L2_GRID:
        losses = []
        for part in parts:
            test = set(part)
            train = [i for i in idx if i not in test]
            if not train or not test:
                continue
            r = fit([xs[i] for i in train], [golds[i] for i in train], l2, n_fusion)
            losses.append(nll(r.beta, [xs[i] for i in part], [golds[i] for i in part]) * len(part))
        scores[str(l2)] = sum(losses) / max(len(idx), 1)
    best = min(L2_GRID, key=lambda v: scores[str(v)])
    return best, scores


# ---------------------------------------------------------------------------------------------- evaluation
def ranks(xs: list[np.ndarray], golds: list[list[int]], beta: np.ndarray | None) -> list[int | None]:
    """The 1-based rank of the first gold candidate of each case (None: no gold among the candidates), in fused
    order (``beta`` None) or ordered by the model's utility."""
    out: list[int | None] = []
    for x, g in zip(xs, golds):
        if not g:
            out.append(None)
            continue
        if beta is None:
            order = list(range(len(x)))
        else:
            u = x @ beta
            order = sorted(range(len(x)), key=lambda i: (-u[i], i))
        pos = {j: k for k, j in enumerate(order, 1)}
        out.append(min(pos[j] for j in g))
    return out


def topk(rk: list[int | None], ks=(1, 3, 5, 10)) -> dict[str, float]:
    n = len(rk) or 1
    return {f"top{k}": round(100 * sum(1 for r in rk if r is not None and r <= k) / n, 1) for k in ks}


def evaluate(rows: list[CaseRows], xs: list[np.ndarray], beta: np.ndarray, keep: int = 10) -> dict[str, Any]:
    """Per dataset: top-k of the candidate pool in fused order and re-ranked by the prior, over all cases (a case
    whose gold is not among the candidates counts as a miss both ways). Ranks past ``keep`` (the differential's
    list length) count as misses too."""
    out: dict[str, Any] = {}
    for ds in dict.fromkeys(r.dataset for r in rows):
        sel = [i for i, r in enumerate(rows) if r.dataset == ds]
        golds = [rows[i].gold for i in sel]
        before = ranks([xs[i] for i in sel], golds, None)
        after = ranks([xs[i] for i in sel], golds, beta)
        before = [r if r is not None and r <= keep else None for r in before]
        after = [r if r is not None and r <= keep else None for r in after]
        out[ds] = {"cases": len(sel), "gold_linked": sum(rows[i].linked for i in sel),
                   "gold_in_pool": sum(bool(g) for g in golds),
                   "fusion": topk(before), "prior": topk(after),
                   "improved": sum(1 for a, b in zip(after, before) if (a or 99) < (b or 99)),
                   "worsened": sum(1 for a, b in zip(after, before) if (a or 99) > (b or 99))}
    return out


# ---------------------------------------------------------------------------------------------- main
def command(args: argparse.Namespace) -> str:
    """The command that collects the same cases and fits the same way (no file paths: they are the machine's)."""
    parts = ["python benchmarks/fit_prior.py", f"--datasets {args.datasets}", f"--split {args.split}"]
    if args.limit is not None:
        parts.append(f"--limit {args.limit}")
    parts += [f"--seed {args.seed}", f"--pool {args.pool}", f"--l2 {args.l2}",
              f"--cv {args.cv}", f"--drop '{args.drop}'"]
    if args.rank_features:
        parts.append("--rank-features")
    if args.penalise != "commonness":
        parts.append(f"--penalise {args.penalise}")
    if args.eval_split:
        parts.append(f"--eval-split {args.eval_split}" + (f" --eval-limit {args.eval_limit}"
                                                          if args.eval_limit is not None else ""))
    if args.provisional:
        parts.append("--provisional")
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated (default: %(default)s)")
    ap.add_argument("--split", default="dev", choices=("dev", "test", "all"), help="the half fitted on")
    ap.add_argument("--limit", type=int, default=None, help="cases per dataset (default: the whole half)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pool", type=int, default=20, help="fused candidates per case (default: %(default)s)")
    ap.add_argument("--l2", default="auto", help="L2 penalty, or 'auto' (5-fold CV over %s)" % (L2_GRID,))
    ap.add_argument("--cv", choices=("datasets", "cases"), default="datasets",
                    help="how --l2 auto cross-validates: leave one dataset out, or 5 folds of cases "
                         "(default: %(default)s)")
    ap.add_argument("--drop", default=DEFAULT_DROP,
                    help="comma-separated prefixes of evidence or commonness features to leave out ('' keeps all; "
                         "default: %(default)s)")
    ap.add_argument("--rank-features", action="store_true",
                    help="also fit where each ranking put the candidate (agents/prior.RANK_FEATURES; off: measured "
                         "and not kept, docs/results.md)")
    ap.add_argument("--penalise", choices=("commonness", "all"), default="commonness",
                    help="the weights the L2 penalty shrinks: the commonness ones, or every weight, the case "
                         "features' too (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="weights JSON (default: agents/data/...)")
    ap.add_argument("--eval-split", choices=("dev", "test"), default=None,
                    help="also measure the re-ranking on this half (not fitted on)")
    ap.add_argument("--eval-limit", type=int, default=None, help="cases per dataset for --eval-split")
    ap.add_argument("--provisional", action="store_true", help="label the weights provisional (a small fit)")
    ap.add_argument("--save-rows", type=Path, default=None, help="write the collected candidates (JSON lines)")
    ap.add_argument("--from-rows", type=Path, default=None,
                    help="fit on candidates saved by --save-rows instead of running the pipeline")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from agents.prior import (EVIDENCE_FEATURES, FUSION_FEATURES, MODEL_FORMAT, RANK_FEATURES,  # noqa: PLC0415
                              n_case_features)
    from graph.tracing import code_version  # noqa: PLC0415
    from knowledge.prior import FEATURES, PriorFeatures  # noqa: PLC0415

    drop = tuple(x.strip() for x in args.drop.split(",") if x.strip())
    names = [*FUSION_FEATURES, *(RANK_FEATURES if args.rank_features else ()),
             *(f for f in (*EVIDENCE_FEATURES, *FEATURES) if not (drop and f.startswith(drop)))]
    t0 = time.perf_counter()
    res = None
    infos: dict[str, Any] = {}
    eval_rows: list[CaseRows] = []
    if args.from_rows:
        rows = []
        for line in args.from_rows.read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            part = d.pop("part", "fit")
            if part == "info":
                infos = d["datasets"]
                args.datasets = ",".join(infos)
                args.split, args.limit, args.seed, args.pool = d["split"], d["limit"], d["seed"], d["pool"]
                args.eval_split, args.eval_limit = d.get("eval_split"), d.get("eval_limit")
            elif part == "fit":
                rows.append(CaseRows.from_json(d))
            else:
                eval_rows.append(CaseRows.from_json(d))
        from knowledge.kg import load_or_build  # noqa: PLC0415

        kg = load_or_build()
    else:
        from agents.llm import LLMConfig  # noqa: PLC0415
        from graph.context import Resources  # noqa: PLC0415

        res = Resources(llm_config=LLMConfig())
        res.warm()
        kg = res.kg
        print(f"resources ready in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        rows = []
        for ds in [d.strip() for d in args.datasets.split(",") if d.strip()]:
            r, info = collect(res, ds, args.split, args.limit, args.seed, args.pool)
            rows += r
            infos[ds] = info
            if args.eval_split:
                er, _ = collect(res, ds, args.eval_split, args.eval_limit, args.seed, args.pool)
                eval_rows += er
        if args.save_rows:
            with args.save_rows.open("w", encoding="utf-8") as fh:
                fh.write(json.dumps({"part": "info", "datasets": infos, "split": args.split, "limit": args.limit,
                                     "seed": args.seed, "pool": args.pool, "eval_split": args.eval_split,
                                     "eval_limit": args.eval_limit}) + "\n")
                for part, rr in (("fit", rows), ("eval", eval_rows)):
                    for r in rr:
                        fh.write(json.dumps({"part": part, **r.to_json()}, ensure_ascii=False) + "\n")
    features = PriorFeatures.for_kg(kg)
    collected_s = time.perf_counter() - t0

    raw = design(rows, features, names)
    mean, scale = standardise(raw)
    xs = [(x - mean) / scale for x in raw]
    # a fusion feature named in --drop keeps its place in the model file (the format starts with both) and gets
    # weight 0: its column is zeroed before the fit ("fusion_log_rank": utility monotone in the fused score)
    zeroed = [j for j, n in enumerate(names) if n in FUSION_FEATURES and drop and n.startswith(drop)]
    for x in xs:
        x[:, zeroed] = 0.0
    golds = [r.gold for r in rows]
    n_case = n_case_features(names)
    n_fusion = n_case if args.penalise == "commonness" else 0   # the features the penalty leaves alone
    informative = sum(bool(g) for g in golds)
    if not informative:
        raise SystemExit("no case has its gold diagnosis among the candidates: nothing to fit")
    if args.l2 == "auto":
        l2, cv = choose_l2(xs, golds, n_fusion, seed=args.seed,
                           groups=[r.dataset for r in rows] if args.cv == "datasets" else None)
    else:
        l2, cv = float(args.l2), {}
    result = fit(xs, golds, l2, n_fusion)
    # the case features alone (fusion and evidence: what the commonness part is compared with)
    fusion_only = fit([x[:, :n_case] for x in xs], golds, l2, n_fusion)
    beta = result.beta

    report: dict[str, Any] = {"dev": evaluate(rows, xs, beta)}
    if eval_rows:
        ex = [(x - mean) / scale for x in design(eval_rows, features, names)]
        report[args.eval_split or "eval"] = evaluate(eval_rows, ex, beta)
        report[f"{args.eval_split}_nll"] = {
            "prior": round(nll(beta, ex, [r.gold for r in eval_rows]), 4),
            "fusion_only": round(nll(np.concatenate([fusion_only.beta, np.zeros(len(names) - n_case)]), ex,
                                     [r.gold for r in eval_rows]), 4)}

    doc = {
        "format": MODEL_FORMAT,
        "what": "commonness prior of the differential: conditional-logit weights over standardised features "
                "(agents/prior.py); utility = sum_j weights[j] * (x_j - mean[j]) / scale[j]",
        "provisional": bool(args.provisional),
        "note": ("PROVISIONAL: a small development fit to prove the code; refit on the full development halves "
                 "before reporting numbers" if args.provisional else "fitted on the development halves"),
        "features": names,
        "weights": {n: round(float(b), 6) for n, b in zip(names, beta)},
        "mean": {n: round(float(v), 6) for n, v in zip(names, mean)},
        "scale": {n: round(float(v), 6) for n, v in zip(names, scale)},
        "provenance": {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "code_version": code_version(), "kg_version": str(getattr(kg, "version", "")),
            "feature_table": features.version, "split": args.split, "seed": args.seed, "pool": args.pool,
            "limit_per_dataset": args.limit, "datasets": infos,
            "cases": len(rows), "cases_gold_in_pool": informative,
            "command": command(args),
        },
        "fit": {"l2": l2, "l2_cv": args.cv, "l2_cv_nll": {k: round(v, 4) for k, v in cv.items()},
                "nll_per_case": {"uniform": round(result.nll_start, 4), "fusion_only": round(fusion_only.nll, 4),
                                 "prior": round(result.nll, 4)},
                "iterations": result.iterations, "converged": result.converged,
                "seconds": round(time.perf_counter() - t0 - collected_s, 2)},
        "evaluation": report,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({"fit": doc["fit"], "evaluation": report, "cases": len(rows),
                      "gold_in_pool": informative, "seconds": round(time.perf_counter() - t0, 1)}, indent=1))
    print("weights:", ", ".join(f"{n} {b:+.3f}" for n, b in sorted(zip(names, beta), key=lambda t: -abs(t[1]))
                                if abs(b) > 1e-3), file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`clinicalrag bench`: diagnosis-benchmark experiments (datasets, systems, repeated runs, reports).

    clinicalrag bench datasets
    clinicalrag bench run --dataset symptom2disease --systems pipeline,bm25 --limit 100 [--repeats 3]
        [--llm local | --llm-base-url URL --llm-model NAME] [--concurrency 4] [--out DIR]
    clinicalrag bench report RUN_DIR [RUN_DIR ...] [--out DIR] [--baseline pipeline]
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from clinicalrag.llm_options import add_provider_arguments, llm_config


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="benchmark experiments: direct LLM vs pipeline, ablations, baselines",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="bench_command", metavar="SUBCOMMAND")
    sub.required = True

    d = sub.add_parser("datasets", help="list the benchmark datasets")
    d.set_defaults(func=cmd_datasets)

    r = sub.add_parser("run", help="run systems over a dataset (resumable)")
    r.add_argument("--dataset", required=True,
                   help="ddxplus, symptom2disease, medqa-mcq, medqa-free, cases, or a .jsonl/.csv file")
    r.add_argument("--systems", default="pipeline,bm25",
                   help="comma-separated system specs (pipeline, direct, bm25, pipeline:no-mee, pipeline:cap=1024, "
                        "pipeline:src=G, ...) or groups: ablations, caps, sources (default: pipeline,bm25)")
    r.add_argument("--limit", type=int, help="sample this many cases (seeded, stratified by label)")
    r.add_argument("--seed", type=int, default=0, help="sampling seed; repeat r uses LLM seed + r (default 0)")
    r.add_argument("--split", choices=["all", "dev", "test"], default="all",
                   help="one fixed half of the dataset: choose settings on dev, report on test (default: all)")
    r.add_argument("--repeats", type=int, default=1, help="repeated runs per system, reported as Avg(SD)")
    r.add_argument("--out", help="run folder (default: $CLINICALRAG_HOME/runs/<dataset>-<model>-s<seed>-n<limit>); "
                                 "an existing folder is resumed")
    r.add_argument("--llm-base-url", help="OpenAI-compatible endpoint (default: CLINICALRAG_LLM_BASE_URL)")
    r.add_argument("--llm-model", help="model name (default: CLINICALRAG_LLM_MODEL)")
    r.add_argument("--llm-config", help="LLM config file (.toml/.yaml)")
    r.add_argument("--temperature", type=float, help="sampling temperature (default 0, as in the paper)")
    r.add_argument("--llm-timeout", type=float, help="seconds per LLM call")
    r.add_argument("--llm-max-retries", type=int, help="retries on timeouts, rate limits (429) and 5xx, with backoff")
    r.add_argument("--no-llm", action="store_true", help="ignore any configured LLM (deterministic agents only)")
    add_provider_arguments(r)
    r.add_argument("--concurrency", type=int, default=1, help="cases in flight at once (for hosted endpoints)")
    r.add_argument("--cache", help="LLM response cache file (default: $CLINICALRAG_HOME/cache/llm-responses.sqlite)")
    r.add_argument("--no-cache", action="store_true", help="always call the LLM")
    r.add_argument("--prices", help="JSON price table: {model: {prompt: USD per 1M tokens, completion: ...}}")
    r.add_argument("--allow-ddxplus-kg", action="store_true",
                   help="run DDXPlus even though the KG holds the DDXPlus conditions (results flagged as inflated)")
    r.add_argument("--no-report", action="store_true", help="do not write the report after the run")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_run)

    rep = sub.add_parser("report", help="tables (Markdown) and plots (PNG) from one or more run folders")
    rep.add_argument("runs", nargs="+", help="run folders")
    rep.add_argument("--out", help="report folder (default: the first run folder's report/)")
    rep.add_argument("--baseline", help="system the others are compared with (default: pipeline when present)")
    rep.add_argument("--prices", help="JSON price table (default: the runs' own)")
    rep.add_argument("--no-plots", action="store_true")
    rep.set_defaults(func=cmd_report)


def _prices(path: str | None):
    from clinicalrag.cli import UserError  # noqa: PLC0415

    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read the price table {path}: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UserError(f"{path}: expected {{model: {{\"prompt\": USD per 1M tokens, \"completion\": ...}}}}")
    return data


def cmd_datasets(args: argparse.Namespace) -> int:
    from clinicalrag.bench.datasets import DATASETS  # noqa: PLC0415

    for name, spec in DATASETS.items():
        print(f"{name:18} {spec.kind:5} {spec.description}")
    print("A .jsonl or .csv file with text and label (optional id, options, answer) works too.")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from clinicalrag.bench.runner import BenchError, BenchSettings, run_bench  # noqa: PLC0415
    from clinicalrag.bench.systems import expand, split_specs  # noqa: PLC0415
    from clinicalrag.cli import UserError  # noqa: PLC0415
    from knowledge import paths  # noqa: PLC0415

    llm = llm_config(args, {"base_url": args.llm_base_url, "model": args.llm_model, "temperature": args.temperature,
                            "timeout": args.llm_timeout, "max_retries": args.llm_max_retries}, args.llm_config)
    model = llm.model if llm.enabled else "none"
    if args.out:
        out = Path(args.out)
    else:
        split = "" if args.split == "all" else f"-{args.split}"
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_",
                      f"{Path(args.dataset).stem}{split}-{model}-s{args.seed}-n{args.limit or 'all'}")
        out = paths.home() / "runs" / slug
    cache = None if args.no_cache else Path(args.cache or paths.home() / "cache" / "llm-responses.sqlite")
    settings = BenchSettings(dataset=args.dataset, systems=expand(split_specs(args.systems)), out=out,
                             limit=args.limit, seed=args.seed, split=args.split, repeats=args.repeats, llm=llm,
                             concurrency=args.concurrency,
                             cache_path=cache, prices=_prices(args.prices), progress=not args.quiet,
                             allow_ddxplus_kg=args.allow_ddxplus_kg)
    try:
        run_dir = run_bench(settings)
    except BenchError as exc:
        raise UserError(str(exc)) from exc
    except KeyboardInterrupt:
        print(f"\ninterrupted: the finished cases are in {out}; run the same command again to resume")
        return 130
    print(f"records: {run_dir / 'records.jsonl'}")
    if not args.no_report:
        from clinicalrag.bench.report import build_report  # noqa: PLC0415

        md = build_report([run_dir], run_dir / "report", prices=settings.prices)
        print(f"report:  {md}")
        _print_summary(md)
    return 0


def _print_summary(md: Path) -> None:
    """The report's Table 1 on the terminal."""
    lines = md.read_text(encoding="utf-8").splitlines()
    t1 = next((i for i, x in enumerate(lines) if x.startswith("## Table 1")), 0)
    start = next((i for i in range(t1, len(lines)) if lines[i].startswith("|")), None)
    if start is None:
        return
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    print("\n".join(lines[start:end]))


def cmd_report(args: argparse.Namespace) -> int:
    from clinicalrag.bench.report import build_report  # noqa: PLC0415
    from clinicalrag.cli import UserError  # noqa: PLC0415

    runs = [Path(r) for r in args.runs]
    for r in runs:
        if not (r / "records.jsonl").exists():
            raise UserError(f"{r} is not a run folder (no records.jsonl)")
    out = Path(args.out) if args.out else runs[0] / "report"
    md = build_report(runs, out, baseline=args.baseline, prices=_prices(args.prices), plots=not args.no_plots)
    print(f"report: {md}")
    _print_summary(md)
    return 0

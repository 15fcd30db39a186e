"""A Markdown report (with PNG plots) over one or more benchmark run folders.

:func:`load_run` reads a run folder (``manifest.json`` + ``records.jsonl``); :func:`build_report` combines runs,
summarises them with :mod:`clinicalrag.bench.metrics` and writes ``report.md`` plus ``accuracy.png``,
``ablation.png`` and ``latency.png`` next to it. Percentages are "Avg (SD)" across repeats, as in the paper.
"""
from __future__ import annotations

import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clinicalrag.bench.metrics import Paired, Prices, Summary, fmt_avg_sd, paired, reliability, summarise
from clinicalrag.bench.records import MANIFEST_FILE, RECORDS_FILE

log = logging.getLogger(__name__)

REPORT_FILE = "report.md"
ACCURACY_PNG = "accuracy.png"
ABLATION_PNG = "ablation.png"
LATENCY_PNG = "latency.png"

DATA_NOTE = ("The datasets are synthetic patient simulations and exam-style questions, not electronic health "
             "records (EHRs); these numbers describe benchmark behaviour, not clinical performance.")

# the order variants are listed in, after the unmodified system
_MODIFIER_ORDER = ["no-mee", "no-knl", "no-krg", "no-verifier", "cap", "src"]
_BASE_ORDER = {"direct": 0, "bm25": 1, "pipeline": 3}
_NA = "–"


@dataclass
class Run:
    """One run folder: its manifest, its records, and what loading had to skip.

    ``skipped_lines``: lines of ``records.jsonl`` that were not valid JSON (normally the last line of an
    interrupted run). ``duplicates``: records whose (system, repeat, case_id) had already been read; the later
    record wins.
    """

    path: Path
    manifest: dict[str, Any]
    records: list[dict[str, Any]]
    skipped_lines: int = 0
    duplicates: int = 0

    @property
    def run_id(self) -> str:
        """The manifest's run id, else the folder name."""
        return str(self.manifest.get("run_id") or self.path.name)


def load_run(run_dir: str | Path) -> Run:
    """Read a run folder. A line of ``records.jsonl`` that is not valid JSON (the truncated last line of an
    interrupted run) is skipped with a logged warning and counted in ``Run.skipped_lines``. A missing manifest is
    tolerated (empty manifest, warning); a missing records file gives a run without records."""
    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"no run folder at {path}")
    manifest: dict[str, Any] = {}
    manifest_path = path / MANIFEST_FILE
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    else:
        log.warning("%s has no %s", path.name, MANIFEST_FILE)
    by_key: dict[tuple[str, int, str], dict[str, Any]] = {}
    skipped = duplicates = 0
    records_path = path / RECORDS_FILE
    lines = records_path.read_text(encoding="utf-8").splitlines() if records_path.exists() else []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            record = exc
        if not isinstance(record, dict):
            where = "the last line" if number == len(lines) else f"line {number}"
            log.warning("%s: skipping %s of %s, which is not a complete record (%s)",
                        path.name, where, RECORDS_FILE, record if isinstance(record, Exception) else "not an object")
            skipped += 1
            continue
        key = (str(record.get("system", "")), int(record.get("repeat", 0) or 0), str(record.get("case_id")))
        if key in by_key:
            duplicates += 1
        by_key[key] = record
    return Run(path=path, manifest=manifest, records=list(by_key.values()), skipped_lines=skipped,
               duplicates=duplicates)


# ------------------------------------------------------------------------------------------------ combining runs


def _group_key(record: Mapping[str, Any]) -> tuple[str, str, str]:
    return str(record.get("dataset", "")), str(record.get("system", "")), str(record.get("model", "none"))


def dataset_label(manifest: Mapping[str, Any]) -> str | None:
    """``"ddxplus (n=490, seed 0)"`` for a run on a sample of a dataset; None for a run on the whole dataset."""
    ds = manifest.get("dataset") or {}
    if not ds.get("sampled"):
        return None
    return f"{ds.get('name')} (n={ds.get('size')}, seed {ds.get('seed')})"


def _combine(runs: Sequence[Run]) -> tuple[list[dict[str, Any]], list[str]]:
    """All records of all runs. When several runs hold the same (dataset, system, model), the later runs' repeats
    are renumbered after the earlier ones so they count as further repeats instead of colliding."""
    next_repeat: dict[tuple[str, str, str], int] = {}
    combined: list[dict[str, Any]] = []
    notes: list[str] = []
    for run in runs:
        label = dataset_label(run.manifest)
        if label:   # a sample of a dataset is its own row: runs on other samples are not repeats of it
            run.records = [dict(r, dataset=label) for r in run.records]
        repeats: dict[tuple[str, str, str], set[int]] = defaultdict(set)
        for r in run.records:
            repeats[_group_key(r)].add(int(r.get("repeat", 0) or 0))
        offsets = {}
        for key, reps in repeats.items():
            offsets[key] = next_repeat.get(key, 0)
            if offsets[key]:
                notes.append(f"{key[1]} [{key[2]}] on {key[0]} from run {run.run_id}: repeats renumbered from "
                             f"{offsets[key]} (the same system was in an earlier run)")
            next_repeat[key] = offsets[key] + max(reps) + 1
        for r in run.records:
            offset = offsets[_group_key(r)]
            combined.append(dict(r, repeat=int(r.get("repeat", 0) or 0) + offset) if offset else r)
    return combined, notes


# ------------------------------------------------------------------------------------------------ ordering


def split_system(system: str) -> tuple[str, list[str]]:
    """``"pipeline:no-mee,cap=2048"`` -> ``("pipeline", ["no-mee", "cap=2048"])``."""
    base, _, mods = system.partition(":")
    return base, [m.strip() for m in mods.split(",") if m.strip()]


def _modifier_key(mod: str) -> tuple[int, float, str]:
    name, _, value = mod.partition("=")
    rank = _MODIFIER_ORDER.index(name) if name in _MODIFIER_ORDER else len(_MODIFIER_ORDER)
    number = -float(value) if re.fullmatch(r"\d+(\.\d+)?", value) else 0.0  # larger caps first
    return rank, number, mod


def system_sort_key(system: str) -> tuple:
    """Report order: direct, bm25, other baselines, then the pipeline; each base first, then its variants
    (no-mee, no-knl, no-krg, no-verifier, caps from large to small, sources, others)."""
    base, mods = split_system(system)
    return (_BASE_ORDER.get(base, 2), base, len(mods) > 0, [_modifier_key(m) for m in mods])


def _ordered(summaries: list[Summary]) -> list[Summary]:
    datasets = list(dict.fromkeys(s.dataset for s in summaries))
    models = list(dict.fromkeys(s.model for s in summaries))
    return sorted(summaries, key=lambda s: (datasets.index(s.dataset), system_sort_key(s.system),
                                            models.index(s.model)))


# ------------------------------------------------------------------------------------------------ formatting


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    def line(cells: Sequence[Any]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
    return [line(headers), "|" + "|".join("---" for _ in headers) + "|", *(line(r) for r in rows), ""]


def _cell(s: Summary, key: str, *, pct: bool = True, digits: int = 1) -> str:
    value = s.metrics.get(key)
    if value is None:
        return "n/a"
    return fmt_avg_sd(value[0], value[1], pct, repeats=s.repeats, digits=digits)


def _pp(value: float | None) -> str:
    """A difference of two fractions in percentage points, signed."""
    return _NA if value is None else f"{value * 100:+.1f}"


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}"


def _label(system: str, model: str) -> str:
    return f"{system} [{model}]"


def _manifest_facts(run: Run) -> list[Any]:
    m = run.manifest
    ds = m.get("dataset") or {}
    machine = m.get("machine") or {}
    load = ", ".join(f"{k}: {_short(v)}" for k, v in machine.items() if "load" in k.lower())
    hardware = ", ".join(f"{label}{machine[k]}{unit}" for k, label, unit in (
        ("platform", "", ""), ("python", "Python ", ""), ("cpu_count", "", " CPUs"), ("cpus", "", " CPUs"))
        if machine.get(k))
    systems = m.get("systems") or {}
    models = sorted({str(r.get("model")) for r in run.records}) or [str((m.get("llm") or {}).get("model", _NA))]
    return [run.run_id, ds.get("name", _NA), ds.get("size", _NA), ds.get("sampled", _NA), ds.get("seed", _NA),
            ", ".join(models), ", ".join(systems) or ", ".join(sorted({str(r.get("system")) for r in run.records})),
            m.get("repeats", _NA), m.get("code_version", _NA), hardware or _NA, load or _NA, len(run.records),
            run.skipped_lines]


def _short(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "/".join(_short(v) for v in value)
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


# ------------------------------------------------------------------------------------------------ paired pairs


def _comparisons(summaries: list[Summary], baseline: str | None) -> list[tuple[str, tuple[str, str], tuple[str, str]]]:
    """(dataset, (system A, model A), (system B, model B)) to compare: direct vs pipeline per model (vs the offline
    pipeline when the model ran no pipeline), then each
    system against the baseline of the same dataset and model. Systems run without an LLM (model "none") are
    compared against the baseline under every model when the baseline was not run without one."""
    out: list[tuple[str, tuple[str, str], tuple[str, str]]] = []
    seen: set[tuple[str, frozenset]] = set()

    def add(dataset: str, a: tuple[str, str], b: tuple[str, str]) -> None:
        key = (dataset, frozenset((a, b)))
        if a != b and key not in seen:
            seen.add(key)
            out.append((dataset, a, b))

    for dataset in dict.fromkeys(s.dataset for s in summaries):
        here = [s for s in summaries if s.dataset == dataset]
        models = list(dict.fromkeys(s.model for s in here))
        offline = {s.system for s in here if s.model == "none"}
        for model in models:
            systems = [s.system for s in here if s.model == model]
            if "direct" in systems and "pipeline" in systems:
                add(dataset, ("direct", model), ("pipeline", model))
            elif "direct" in systems and model != "none" and "pipeline" in offline:
                # the model alone against the offline pipeline on the same cases
                add(dataset, ("direct", model), ("pipeline", "none"))
        for model in models:
            systems = [s.system for s in here if s.model == model]
            base = baseline if baseline in systems else "pipeline" if "pipeline" in systems else systems[0]
            for system in systems:
                add(dataset, (base, model), (system, model))
        none_systems = [s.system for s in here if s.model == "none"]
        if none_systems and baseline not in none_systems and "pipeline" not in none_systems:
            for model in models:
                systems = [s.system for s in here if s.model == model]
                base = baseline if baseline in systems else "pipeline" if "pipeline" in systems else None
                if model != "none" and base:
                    for system in none_systems:
                        add(dataset, (base, model), (system, "none"))
    return out


# ------------------------------------------------------------------------------------------------ the report


@dataclass
class _Context:
    runs: list[Run]
    records: list[dict[str, Any]]
    summaries: list[Summary]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]]
    priced: bool
    notes: list[str] = field(default_factory=list)


def build_report(run_dirs: Sequence[str | Path], out_dir: str | Path, *, baseline: str | None = None,
                 prices: Prices | None = None, plots: bool = True) -> Path:
    """Write ``out_dir/report.md`` (and, with ``plots``, the PNGs it links to) for the given run folders and
    return the Markdown path.

    ``baseline``: the system every other system is compared with (paired test) on the same dataset and model;
    by default "pipeline" when present, else the first system. ``prices``: model -> {"prompt", "completion"} in
    USD per 1M tokens; by default the runs' manifests' prices, merged.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = [load_run(d) for d in run_dirs]
    records, notes = _combine(runs)
    if prices is None:
        merged: dict[str, Mapping[str, float]] = {}
        for run in runs:
            merged.update(run.manifest.get("prices") or {})
        prices = merged or None
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[_group_key(r)].append(r)
    ctx = _Context(runs=runs, records=records, summaries=_ordered(summarise(records, prices)), groups=groups,
                   priced=prices is not None, notes=notes)

    pictures: dict[str, bool] = {}
    if plots:
        pictures = _write_plots(ctx, out)
    lines = [*_header(ctx), *_table1(ctx), *_table2(ctx), *_retrieval(ctx), *_faithfulness(ctx), *_reliability(ctx),
             *_cost(ctx), *_llm_calls(ctx),
             *_linking(ctx), *_ddxplus(ctx), *_paired_section(ctx, baseline), *_errors(ctx),
             *_plots_section(pictures)]
    path = out / REPORT_FILE
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


def _header(ctx: _Context) -> list[str]:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# ClinicalRAG benchmark report", "", f"Generated {now} from {len(ctx.runs)} run(s).", "",
             DATA_NOTE, "",
             ("Accuracy cells are Avg (SD) in % across repeats (sample SD; no SD with one repeat). A case that "
              "failed counts as a miss."), "", "## Runs", ""]
    lines += _table(["Run", "Dataset", "Size", "Sampled", "Seed", "Model", "Systems", "Repeats", "Code version",
                     "Machine", "Load", "Records", "Skipped lines"], [_manifest_facts(r) for r in ctx.runs])
    for note in ctx.notes:
        lines.append(f"- {note}")
    if ctx.notes:
        lines.append("")
    return lines


def _errored(ctx: _Context, dataset: str, system: str) -> bool:
    return any(r.get("status") == "error" for (d, s, _), rs in ctx.groups.items() if d == dataset and s == system
               for r in rs)


def _table1(ctx: _Context) -> list[str]:
    models = list(dict.fromkeys(s.model for s in ctx.summaries))
    by_key = {(s.dataset, s.system, s.model): s for s in ctx.summaries}
    rows, flagged = [], False
    for dataset, system in dict.fromkeys((s.dataset, s.system) for s in ctx.summaries):
        mark = ""
        if _errored(ctx, dataset, system):
            mark, flagged = " †", True
        cells = [_cell(by_key[(dataset, system, m)], "accuracy") if (dataset, system, m) in by_key else _NA
                 for m in models]
        rows.append([dataset, system + mark, *cells])
    lines = ["## Table 1 — accuracy by system and model", "",
             ("Top-1 accuracy, Avg (SD) in %; for multiple-choice datasets, the share of questions answered "
              "with the gold option."), ""]
    lines += _table(["Dataset", "System", *models], rows)
    if flagged:
        lines += ["† some cases of this system failed (they count as misses); see Errors and warnings.", ""]
    for dataset in dict.fromkeys(s.dataset for s in ctx.summaries):
        here = [s for s in ctx.summaries if s.dataset == dataset]
        mcq = any(s.mcq for s in here)
        headers = ["System", "Model", "n", "Repeats", "Top-1", "Top-3", "Top-5", "Top-1 lenient", "GTPA"]
        headers += ["MCQ accuracy"] if mcq else []
        rows = []
        for s in here:
            row = [s.system, s.model, s.n, s.repeats, _cell(s, "top1"), _cell(s, "top3"), _cell(s, "top5"),
                   _cell(s, "top1_lenient"), _cell(s, "gtpa")]
            rows.append(row + ([_cell(s, "mcq_acc")] if mcq else []))
        lines += [f"### {dataset}", ""]
        lines += _table(headers, rows)
    return lines


def _variant_rows(ctx: _Context) -> list[tuple[Summary, Summary]]:
    """(base summary, variant summary) for every system with modifiers whose base ran on the same dataset and
    model; the base itself comes first, paired with itself."""
    by_key = {(s.dataset, s.system, s.model): s for s in ctx.summaries}
    out: list[tuple[Summary, Summary]] = []
    for s in ctx.summaries:
        base, mods = split_system(s.system)
        if not mods or (s.dataset, base, s.model) not in by_key:
            continue
        ref = by_key[(s.dataset, base, s.model)]
        if (ref, ref) not in out:
            out.append((ref, ref))
        out.append((ref, s))
    order = {id(s): i for i, s in enumerate(ctx.summaries)}
    return sorted(out, key=lambda pair: (order[id(pair[0])], order[id(pair[1])] if pair[1] is not pair[0] else -1))


def _table2(ctx: _Context) -> list[str]:
    lines = ["## Table 2 — ablations and input caps", ""]
    pairs = _variant_rows(ctx)
    if not pairs:
        return lines + ["No ablation or input-cap variants in these runs.", ""]
    lines += [("Each variant against its unmodified system (normally \"pipeline\") on the same dataset and "
               "model. Δ Top-1 is the difference of the mean top-1 accuracies in percentage points (see the paired "
               "comparisons for confidence intervals)."), ""]
    rows = []
    for ref, s in pairs:
        top1, ref1 = s.mean("top1"), ref.mean("top1")
        delta = "ref" if s is ref else _pp(top1 - ref1 if top1 is not None and ref1 is not None else None)
        rows.append([s.dataset, s.model, s.system, _cell(s, "top1"), _cell(s, "top3"), delta])
    return lines + _table(["Dataset", "Model", "System", "Top-1", "Top-3", "Δ Top-1 (pp)"], rows)


def _section(title: str, intro: str, headers: list[str], rows: list[list[Any]]) -> list[str]:
    if not rows:
        return []
    return [f"## {title}", "", intro, "", *_table(headers, rows)]


def _retrieval(ctx: _Context) -> list[str]:
    rows = [[s.dataset, s.system, s.model, f"{s.mean('retrieval_n') or 0:.0f}", _cell(s, "recall@1"),
             _cell(s, "recall@5"), _cell(s, "recall@10"), _cell(s, "mrr", pct=False, digits=3),
             _cell(s, "evidence_recall")] for s in ctx.summaries if "recall@1" in s.metrics]
    return _section("Retrieval", "Rank of the gold concept among the knowledge-graph ranker's candidates (%), MRR "
                    "cut at 10; evidence recall: at least one evidence item about the gold concept (%).",
                    ["Dataset", "System", "Model", "n", "Recall@1", "Recall@5", "Recall@10", "MRR",
                     "Evidence recall"], rows)


def _faithfulness(ctx: _Context) -> list[str]:
    keys = ("support_rate", "support_rate_case", "citation_validity", "escalation_rate")
    rows = [[s.dataset, s.system, s.model, *(_cell(s, k) for k in keys)]
            for s in ctx.summaries if any(k in s.metrics for k in keys)]
    return _section("Faithfulness", "Claim support rate: supported claims / checked claims, pooled and as the mean "
                    "per case; citation validity: 1 - invalid citations / citations; escalation: share of "
                    "answers escalated (all in %).",
                    ["Dataset", "System", "Model", "Support rate", "Support rate (per case)",
                     "Citation validity", "Escalation rate"], rows)


def _reliability(ctx: _Context) -> list[str]:
    """Calibration of the top-1 diagnostic confidence: per (dataset, system, model) the pooled ECE and Brier score,
    then the bins (predicted confidence against observed top-1 accuracy)."""
    groups = [(s, reliability(ctx.groups[(s.dataset, s.system, s.model)])) for s in ctx.summaries]
    groups = [(s, rel) for s, rel in groups if rel is not None]
    if not groups:
        return []
    lines = ["## Reliability of the diagnostic confidence", "",
             ("The calibrated probability that the top diagnosis is right (`diagnostic_confidence`), against how often "
              "it was (top-1, strict; MCQ: the chosen option), over all repeats. ECE: expected calibration error over "
              "10 equal-width bins (0 is perfect); Brier: mean squared error of the probability; diagnostic "
              "escalation: answers escalated because the leading diagnoses explain few findings or the top one is "
              "unlikely. Apart from the faithfulness above: an answer whose claims are all supported can still name "
              "the wrong disease."), ""]
    lines += _table(["Dataset", "System", "Model", "n", "Mean confidence (%)", "Top-1 accuracy (%)", "ECE",
                     "Brier", "Without confidence", "Diagnostic escalation (%)"],
                    [[s.dataset, s.system, s.model, rel.n, f"{rel.mean_confidence * 100:.1f}",
                      f"{rel.accuracy * 100:.1f}", f"{rel.ece:.3f}", f"{rel.brier:.3f}", rel.missing,
                      _cell(s, "diagnostic_escalation_rate")] for s, rel in groups])
    for s, rel in groups:
        lines += [f"### {s.dataset} — {_label(s.system, s.model)}", ""]
        lines += _table(["Confidence", "n", "Mean predicted (%)", "Observed accuracy (%)"],
                        [[f"{b.low:.1f}–{b.high:.1f}", b.n, f"{b.mean_confidence * 100:.1f}",
                          f"{b.accuracy * 100:.1f}"] for b in rel.bins if b.n])
    return lines


def _cost(ctx: _Context) -> list[str]:
    headers = ["Dataset", "System", "Model", "Latency p50 (ms)", "Latency p95 (ms)", "LLM calls / case",
               "Prompt tokens / case", "Completion tokens / case"]
    if ctx.priced:
        headers += ["Cost / case (USD)", "Cost / repeat (USD)"]
    rows = []
    for s in ctx.summaries:
        row = [s.dataset, s.system, s.model, _cell(s, "latency_p50_ms", pct=False, digits=0),
               _cell(s, "latency_p95_ms", pct=False, digits=0), _cell(s, "llm_calls", pct=False),
               _cell(s, "prompt_tokens", pct=False, digits=0), _cell(s, "completion_tokens", pct=False, digits=0)]
        if ctx.priced:
            row += [_cell(s, "cost_per_case_usd", pct=False, digits=4), _cell(s, "cost_usd", pct=False, digits=4)]
        rows.append(row)
    note = " Cost is n/a for a model without a price." if ctx.priced else " No prices were given, so no cost."
    return _section("Cost", "Latency percentiles are nearest-rank over the cases of a repeat; token counts are "
                    "means per case." + note, headers, rows)


def _llm_calls(ctx: _Context) -> list[str]:
    """Per call type (the agent that asked: propose, generate, verify, direct, ...): logical calls per case, the
    share whose first reply could not be used as it came (a repair was needed, or it failed), and the share that
    errored (HTTP, timeout); for the LLM path, how often the answer's first diagnosis came from the model and how
    often the model and the knowledge-based ranking disagreed."""
    rows = []
    for (dataset, system, model), recs in sorted(ctx.groups.items()):
        if model in ("none", None):
            continue
        tags: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for r in recs:
            for tag, t in ((r.get("llm") or {}).get("by_tag") or {}).items():
                acc = tags[tag]
                acc[0] += int(t.get("calls", 0))
                acc[1] += int(t.get("parse_errors", 0))
                acc[2] += int(t.get("errors", 0))
        with_model = [r for r in recs if r.get("proposals") is not None]
        first_model = sum(bool(r.get("predictions")) and "model" in (r["predictions"][0].get("origins") or [])
                          for r in with_model)
        disagree = sum(bool(r.get("disagreement")) for r in with_model)
        for tag, (calls, perr, err) in sorted(tags.items()):
            rows.append([dataset, system, model, tag, f"{calls / max(1, len(recs)):.2f}",
                         f"{100 * perr / calls:.1f} % ({perr}/{calls})" if calls else "n/a",
                         f"{100 * err / calls:.1f} % ({err}/{calls})" if calls else "n/a",
                         f"{100 * first_model / len(with_model):.0f} %" if with_model else "",
                         f"{100 * disagree / len(with_model):.0f} %" if with_model else ""])
    if not rows:
        return []
    return _section("LLM calls by type", "Logical calls per case by the agent that made them (a structured-mode "
                    "fallback or a repair is part of its call); parse errors: first replies that were not valid JSON "
                    "of the schema (repaired or lost); errors: HTTP failures and timeouts. For the pipeline with a "
                    "model: the share of answers whose first diagnosis the model had proposed, and of answers where "
                    "the model's first choice and the knowledge-based ranking's differed.",
                    ["Dataset", "System", "Model", "Call", "Calls / case", "Parse errors", "Errors",
                     "First diagnosis from the model", "Disagreement"], rows)


def _linking(ctx: _Context) -> list[str]:
    rows = [[s.dataset, s.system, s.model, _cell(s, "string_fallbacks", pct=False),
             _cell(s, "unlinked_predictions", pct=False)] for s in ctx.summaries]
    return _section("Linking", "Per repeat: gold labels that did not link to a knowledge-graph concept (scored by "
                    "normalised string match), and predictions that linked to no concept.",
                    ["Dataset", "System", "Model", "String-fallback gold labels", "Unlinked predictions"], rows)


def _ddxplus(ctx: _Context) -> list[str]:
    rows = [[s.dataset, s.system, s.model, _cell(s, "ddr"), _cell(s, "ddp"), _cell(s, "ddf1")]
            for s in ctx.summaries if "ddf1" in s.metrics]
    return _section("Differential overlap (DDXPlus)", "The predicted differential against the dataset's own, by "
                    "normalised name: recall (DDR), precision (DDP) and per-case F1 (DDF1), in %.",
                    ["Dataset", "System", "Model", "DDR", "DDP", "DDF1"], rows)


def _paired_section(ctx: _Context, baseline: str | None) -> list[str]:
    rows = []
    for dataset, (sa, ma), (sb, mb) in _comparisons(ctx.summaries, baseline):
        res: Paired = paired(ctx.groups[(dataset, sa, ma)], ctx.groups[(dataset, sb, mb)], k=1, level="strict")
        ci = _NA if res.ci_low is None else f"[{_pp(res.ci_low)}, {_pp(res.ci_high)}]"
        acc_a = _NA if res.acc_a is None else f"{res.acc_a * 100:.1f}"
        acc_b = _NA if res.acc_b is None else f"{res.acc_b * 100:.1f}"
        rows.append([dataset, _label(sa, ma), _label(sb, mb), res.n, acc_a, acc_b, _pp(res.diff), ci, res.b01,
                     res.b10, _p(res.p_value), f"{res.only_a}/{res.only_b}"])
    return _section("Paired comparisons", "Top-1 (strict) on the cases both systems answered, matched by case id. "
                    "Accuracies average each case over its repeats; diff = B - A in percentage points with a 95% "
                    "percentile bootstrap interval over cases; McNemar's exact test on repeat 0 (b01: A missed "
                    "and B hit, b10: A hit and B missed). Excluded: cases only A / only B had.",
                    ["Dataset", "A", "B", "n", "Acc A (%)", "Acc B (%)", "Diff (pp)", "95% CI", "b01", "b10",
                     "p", "Excluded"], rows)


def _errors(ctx: _Context) -> list[str]:
    lines = ["## Errors and warnings", ""]
    rows, flagged = [], []
    for s in ctx.summaries:
        rs = ctx.groups[(s.dataset, s.system, s.model)]
        errors = [r for r in rs if r.get("status") == "error"]
        warnings = sum(len(r.get("warnings") or []) for r in rs)
        if not errors and not warnings:
            continue
        common = Counter(str(r.get("error") or "unknown")[:80] for r in errors).most_common(1)
        rows.append([s.dataset, s.system, s.model, len(rs), len(errors), _cell(s, "error_rate"), warnings,
                     f"{common[0][0]} ({common[0][1]}×)" if common else _NA])
        if errors:
            flagged.append(_label(s.system, s.model) + f" on {s.dataset}")
    if rows:
        lines += _table(["Dataset", "System", "Model", "Records", "Errors", "Error rate (%)", "Warnings",
                         "Most common error"], rows)
    else:
        lines += ["No case failed and no warning was recorded.", ""]
    if flagged:
        lines += ["Systems with failed cases (counted as misses): " + "; ".join(flagged) + ".", ""]
    uneven = [f"{_label(s.system, s.model)} on {s.dataset}: cases per repeat "
              + "/".join(str(n) for n in s.n_per_repeat) for s in ctx.summaries if len(set(s.n_per_repeat)) > 1]
    if uneven:
        lines += ["Repeats of unequal size (an interrupted run?); n in the tables is the smallest:", "",
                  *(f"- {u}" for u in uneven), ""]
    for run in ctx.runs:
        if run.skipped_lines or run.duplicates:
            lines.append(f"- run {run.run_id}: {run.skipped_lines} unreadable record line(s) skipped, "
                         f"{run.duplicates} duplicate record(s) replaced by the later one")
    if any(run.skipped_lines or run.duplicates for run in ctx.runs):
        lines.append("")
    return lines


def _plots_section(pictures: dict[str, bool]) -> list[str]:
    captions = {ACCURACY_PNG: "Top-1 and top-3 accuracy per system (error bars: SD across repeats)",
                ABLATION_PNG: "Change in top-1 accuracy of each variant against its unmodified system",
                LATENCY_PNG: "Latency p50 and p95 per system"}
    shown = [name for name, ok in pictures.items() if ok]
    if not shown:
        return []
    lines = ["## Plots", ""]
    for name in shown:
        lines += [f"![{captions[name]}]({name})", ""]
    return lines


# ------------------------------------------------------------------------------------------------ plots


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _panel_labels(summaries: list[Summary]) -> list[str]:
    several_models = len({s.model for s in summaries}) > 1
    return [_label(s.system, s.model) if several_models else s.system for s in summaries]


def _style_panel(ax, ys, here: list[Summary], dataset: str, xlabel: str) -> None:
    """One horizontal-bar panel: system labels top-down, axis label, title, grid, legend outside on the right."""
    ax.set_yticks(ys, _panel_labels(here), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(dataset, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _write_plots(ctx: _Context, out: Path) -> dict[str, bool]:
    plt = _pyplot()
    datasets = list(dict.fromkeys(s.dataset for s in ctx.summaries))
    done = {ACCURACY_PNG: False, ABLATION_PNG: False, LATENCY_PNG: False}
    if not datasets:
        return done

    def figure(panels: list[list[Any]]):
        heights = [max(1.5, 0.42 * len(p) + 1.0) for p in panels]
        fig, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights)), squeeze=False,
                                 gridspec_kw={"height_ratios": heights})
        return fig, [a[0] for a in axes]

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        done[name] = True

    # accuracy: horizontal grouped bars (labels stay readable with ~10 systems)
    panels = [[s for s in ctx.summaries if s.dataset == d] for d in datasets]
    fig, axes = figure(panels)
    try:
        for ax, dataset, here in zip(axes, datasets, panels):
            ys = list(range(len(here)))
            for offset, key, name in ((-0.2, "top1", "Top-1"), (0.2, "top3", "Top-3")):
                means = [(s.metrics.get(key) or (0.0, 0.0))[0] * 100 for s in here]
                sds = [(s.metrics.get(key) or (0.0, 0.0))[1] * 100 if s.repeats > 1 else 0.0 for s in here]
                ax.barh([y + offset for y in ys], means, height=0.38, label=name,
                        xerr=sds if any(sds) else None, capsize=2, error_kw={"elinewidth": 0.8})
            ax.set_xlim(0, 100)
            _style_panel(ax, ys, here, dataset, "accuracy (%)")
        save(fig, ACCURACY_PNG)
    finally:
        plt.close(fig)

    # ablation: Δ top-1 of each variant against its base
    variants = [(ref, s) for ref, s in _variant_rows(ctx) if ref is not s]
    ab_panels = [[p for p in variants if p[1].dataset == d] for d in datasets]
    ab_sets = [(d, p) for d, p in zip(datasets, ab_panels) if p]
    if ab_sets:
        fig, axes = figure([p for _, p in ab_sets])
        try:
            for ax, (dataset, pairs) in zip(axes, ab_sets):
                deltas = [((s.mean("top1") or 0.0) - (ref.mean("top1") or 0.0)) * 100 for ref, s in pairs]
                ys = list(range(len(pairs)))
                colours = ["tab:red" if d < 0 else "tab:blue" for d in deltas]
                ax.barh(ys, deltas, height=0.6, color=colours)
                ax.axvline(0, color="black", linewidth=0.8)
                for y, d in zip(ys, deltas):
                    ax.annotate(f"{d:+.1f}", (d, y), xytext=(3 if d >= 0 else -3, 0), textcoords="offset points",
                                ha="left" if d >= 0 else "right", va="center", fontsize=8)
                ax.margins(x=0.15)
                ax.set_yticks(ys, _panel_labels([s for _, s in pairs]), fontsize=8)
                ax.invert_yaxis()
                ax.set_xlabel("Δ top-1 vs unmodified system (percentage points)")
                ax.set_title(dataset, fontsize=10)
                ax.grid(axis="x", alpha=0.3)
            save(fig, ABLATION_PNG)
        finally:
            plt.close(fig)

    # latency: p50 and p95 per system, seconds
    lat_panels = [[s for s in p if "latency_p50_ms" in s.metrics] for p in panels]
    lat_sets = [(d, p) for d, p in zip(datasets, lat_panels) if p]
    if lat_sets:
        fig, axes = figure([p for _, p in lat_sets])
        try:
            for ax, (dataset, here) in zip(axes, lat_sets):
                ys = list(range(len(here)))
                values = []
                for offset, key, name in ((-0.2, "latency_p50_ms", "p50"), (0.2, "latency_p95_ms", "p95")):
                    secs = [(s.mean(key) or 0.0) / 1000 for s in here]
                    values += secs
                    ax.barh([y + offset for y in ys], secs, height=0.38, label=name)
                positive = [v for v in values if v > 0]
                if positive and max(positive) / min(positive) > 100:
                    ax.set_xscale("log")
                _style_panel(ax, ys, here, dataset, "latency per case (s)")
            save(fig, LATENCY_PNG)
        finally:
            plt.close(fig)
    return done

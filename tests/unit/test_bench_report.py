"""The benchmark report over two small hand-written run folders: numbers in the right table cells, valid PNGs."""
from __future__ import annotations

import json
import logging

import pytest

from clinicalrag.bench.report import build_report, load_run, split_system, system_sort_key

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# run A: symptom2disease, model m1, two repeats, cases c1..c5; strict rank of the gold diagnosis per case
RANKS_A = {
    "pipeline": {0: [1, 1, 1, 2, None], 1: [1, 1, 1, 1, None]},          # top-1 0.6, 0.8 -> 70.0 (14.1)
    "pipeline:no-mee": {0: [1, None, 1, 3, None], 1: [1, None, 2, 3, None]},  # top-1 0.4, 0.2 -> 30.0 (14.1)
    "direct": {0: [2, 1, None, None, None], 1: [2, 1, None, None]},    # c5 of repeat 1 is the truncated line
}
CANDIDATE_RANKS = [1, 2, 1, 6, None]   # recall@1 2/5, @5 3/5, @10 4/5; MRR (1 + 1/2 + 1 + 1/6) / 5 = 0.533


def _record_a(system: str, repeat: int, i: int, rank: int | None) -> dict:
    pipeline = system.startswith("pipeline")
    return {
        "v": 1, "system": system, "model": "m1", "dataset": "symptom2disease", "repeat": repeat,
        "case_id": f"c{i + 1}", "label": "asthma", "answer": None,
        "predictions": [{"rank": 1, "diagnosis": "asthma", "concept_id": "DOID:2841"}],
        "choice": None,
        "match": {"strict_rank": rank, "lenient_rank": rank, "method": "concept", "gold_concepts": ["DOID:2841"],
                  "unlinked_predictions": 0},
        "retrieval": {"candidate_rank": CANDIDATE_RANKS[i], "candidates": 20} if pipeline else None,
        "faithfulness": ({"claims": 2, "supported": 1, "contradicted": 0, "citations": 2, "invalid_citations": 0,
                          "escalated": i == 4} if pipeline else None),
        "dataset_differential": [], "status": "verified" if pipeline else "ok", "error": None, "warnings": [],
        # pipeline latencies: repeat 0 1000..5000 ms, repeat 1 1500..5500 ms -> p50 3000, 3500 -> 3250 (354)
        "latency_ms": (1000.0 * (i + 1) + 500.0 * repeat) if pipeline else 200.0,
        "llm": ({"model": "m1", "calls": 2, "prompt_tokens": 1000, "completion_tokens": 100} if pipeline
                else {"model": "m1", "calls": 1, "prompt_tokens": 500, "completion_tokens": 50}),
        "finished_at": "2026-01-01T00:00:00Z",
    }


# run B: medqa-mcq, model m2, one repeat, questions q1..q4 (gold A, C, B, D)
ANSWERS = ["A", "C", "B", "D"]
CHOICES_B = {"direct": ["A", "B", None, "D"],     # q3 failed -> 2/4 = 50.0
             "pipeline": ["A", "C", "B", "A"]}   # 3/4 = 75.0


def _record_b(system: str, i: int, choice: str | None) -> dict:
    failed = system == "direct" and i == 2
    return {
        "v": 1, "system": system, "model": "m2", "dataset": "medqa-mcq", "repeat": 0, "case_id": f"q{i + 1}",
        "label": "option text", "answer": ANSWERS[i], "predictions": [], "choice": choice,
        "match": {"strict_rank": None, "lenient_rank": None, "method": "string", "gold_concepts": [],
                  "unlinked_predictions": 1},
        "retrieval": None, "faithfulness": None, "dataset_differential": [],
        "status": "error" if failed else "ok", "error": "LLM timeout" if failed else None,
        "warnings": ["no option matched"] if choice is None else [], "latency_ms": 800.0,
        "llm": {"model": "m2", "calls": 1, "prompt_tokens": 300, "completion_tokens": 30},
        "finished_at": "2026-01-01T00:00:00Z",
    }


def _manifest(run_id: str, name: str, size: int, model: str, systems: list[str], repeats: int) -> dict:
    return {"run_id": run_id, "created_at": "2026-01-01T00:00:00Z", "finished_at": None,
            "code_version": "0.1.0+abc1234", "command": ["clinicalrag", "bench", "run"],
            "dataset": {"name": name, "size": size, "sampled": False, "seed": 7},
            "systems": {s: {"kind": s.split(":")[0]} for s in systems}, "llm": {"model": model},
            "repeats": repeats, "seed": 7, "limit": None, "kg_version": None, "index_version": None,
            "machine": {"platform": "Linux", "python": "3.11", "cpu_count": 2, "load_start": [0.5, 0.4, 0.3],
                        "load_end": [1.0, 0.9, 0.8]},
            "prices": {"m1": {"prompt": 1.0, "completion": 2.0}} if model == "m1" else None}


@pytest.fixture
def runs(tmp_path):
    run_a, run_b = tmp_path / "run-a", tmp_path / "run-b"
    run_a.mkdir()
    run_b.mkdir()
    (run_a / "manifest.json").write_text(json.dumps(
        _manifest("run-a", "symptom2disease", 5, "m1", list(RANKS_A), 2)))
    lines = [json.dumps(_record_a(system, rep, i, rank))
             for system, reps in RANKS_A.items() for rep, ranks in reps.items() for i, rank in enumerate(ranks)]
    truncated = json.dumps(_record_a("direct", 1, 4, None))[:57]       # an interrupted write: no closing brace
    (run_a / "records.jsonl").write_text("\n".join(lines) + "\n" + truncated)
    (run_b / "manifest.json").write_text(json.dumps(_manifest("run-b", "medqa-mcq", 4, "m2", list(CHOICES_B), 1)))
    lines = [json.dumps(_record_b(system, i, c)) for system, choices in CHOICES_B.items()
             for i, c in enumerate(choices)]
    (run_b / "records.jsonl").write_text("\n".join(lines) + "\n")
    return run_a, run_b


def _table_after(markdown: str, heading: str) -> list[dict[str, str]]:
    """The first Markdown table after the line starting with ``heading``, as header -> cell dicts."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    first = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("|"))
    block = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        block.append([c.strip() for c in line.strip().strip("|").split("|")])
    header, rows = block[0], block[2:]
    return [dict(zip(header, row, strict=True)) for row in rows]


def _row(rows: list[dict[str, str]], **where: str) -> dict[str, str]:
    found = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    assert len(found) == 1, (where, rows)
    return found[0]


def test_load_run_skips_the_truncated_last_line(runs, caplog):
    with caplog.at_level(logging.WARNING):
        run = load_run(runs[0])
    assert run.run_id == "run-a" and run.skipped_lines == 1 and run.duplicates == 0
    assert len(run.records) == 10 + 10 + 9
    assert "last line" in caplog.text


def test_report_tables_paired_lines_and_plots(runs, tmp_path):
    out = tmp_path / "report"
    path = build_report(list(runs), out)
    assert path == out / "report.md"
    md = path.read_text()

    assert "not electronic health records" in md
    run_rows = _table_after(md, "## Runs")
    run_a = _row(run_rows, Run="run-a")
    assert (run_a["Dataset"], run_a["Size"], run_a["Seed"], run_a["Repeats"]) == ("symptom2disease", "5", "7", "2")
    assert run_a["Skipped lines"] == "1" and run_a["Code version"] == "0.1.0+abc1234"
    assert "load_start: 0.50/0.40/0.30" in run_a["Load"]

    t1 = _table_after(md, "## Table 1")
    assert _row(t1, Dataset="symptom2disease", System="pipeline") == {
        "Dataset": "symptom2disease", "System": "pipeline", "m1": "70.0 (14.1)", "m2": "–"}
    assert _row(t1, Dataset="symptom2disease", System="pipeline:no-mee")["m1"] == "30.0 (14.1)"
    # direct: repeat 0 1/5 = 0.20, repeat 1 (4 cases left) 1/4 = 0.25 -> 22.5, SD 0.05 / sqrt(2) = 3.5
    assert _row(t1, Dataset="symptom2disease", System="direct")["m1"] == "22.5 (3.5)"
    assert _row(t1, Dataset="medqa-mcq", System="direct †")["m2"] == "50.0"   # one repeat: no SD; flagged
    assert _row(t1, Dataset="medqa-mcq", System="pipeline")["m2"] == "75.0"

    detail = _table_after(md, "### symptom2disease")
    pipe = _row(detail, System="pipeline", Model="m1")
    assert (pipe["n"], pipe["Repeats"], pipe["Top-3"], pipe["Top-5"]) == ("5", "2", "80.0 (0.0)", "80.0 (0.0)")
    assert _row(detail, System="direct")["n"] == "4"
    assert _row(_table_after(md, "### medqa-mcq"), System="pipeline")["MCQ accuracy"] == "75.0"

    t2 = _table_after(md, "## Table 2")
    assert _row(t2, System="pipeline")["Δ Top-1 (pp)"] == "ref"
    no_mee = _row(t2, System="pipeline:no-mee")
    assert (no_mee["Top-1"], no_mee["Top-3"], no_mee["Δ Top-1 (pp)"]) == ("30.0 (14.1)", "60.0 (0.0)", "-40.0")

    retrieval = _row(_table_after(md, "## Retrieval"), System="pipeline")
    assert (retrieval["n"], retrieval["Recall@1"], retrieval["Recall@5"], retrieval["Recall@10"]) == (
        "5", "40.0 (0.0)", "60.0 (0.0)", "80.0 (0.0)")
    assert retrieval["MRR"] == "0.533 (0.000)"
    faith = _row(_table_after(md, "## Faithfulness"), System="pipeline")
    assert (faith["Support rate"], faith["Citation validity"], faith["Escalation rate"]) == (
        "50.0 (0.0)", "100.0 (0.0)", "20.0 (0.0)")

    cost = _table_after(md, "## Cost")
    pipe_cost = _row(cost, Dataset="symptom2disease", System="pipeline")
    assert pipe_cost["Latency p50 (ms)"] == "3250 (354)" and pipe_cost["Latency p95 (ms)"] == "5250 (354)"
    assert pipe_cost["Cost / case (USD)"] == "0.0012 (0.0000)"          # 1000 * 1/1e6 + 100 * 2/1e6
    assert _row(cost, Dataset="symptom2disease", System="direct")["Cost / case (USD)"] == "0.0006 (0.0000)"
    assert _row(cost, Dataset="medqa-mcq", System="pipeline")["Cost / case (USD)"] == "n/a"   # m2 has no price

    linking = _row(_table_after(md, "## Linking"), Dataset="medqa-mcq", System="pipeline")
    assert linking["String-fallback gold labels"] == "4.0" and linking["Unlinked predictions"] == "4.0"

    paired_rows = _table_after(md, "## Paired comparisons")
    # direct vs pipeline, per-case hit rates over both repeats: direct 1/5, pipeline (1+1+1+0.5+0)/5 = 0.7;
    # repeat 0: pipeline alone hits c1 and c3 -> b01 = 2, b10 = 0, p = 2 * (1/2)^2 = 0.5
    dp = _row(paired_rows, Dataset="symptom2disease", A="direct [m1]", B="pipeline [m1]")
    assert (dp["n"], dp["Acc A (%)"], dp["Acc B (%)"], dp["Diff (pp)"]) == ("5", "20.0", "70.0", "+50.0")
    assert (dp["b01"], dp["b10"], dp["p"], dp["Excluded"]) == ("2", "0", "0.5000", "0/0")
    # baseline pipeline vs no-mee: 0.7 -> (1 + 0 + 0.5 + 0 + 0)/5 = 0.3; repeat 0: only pipeline hits c2
    pm = _row(paired_rows, A="pipeline [m1]", B="pipeline:no-mee [m1]")
    assert (pm["Diff (pp)"], pm["b01"], pm["b10"], pm["p"]) == ("-40.0", "0", "1", "1.0000")
    low, high = (float(x) for x in pm["95% CI"].strip("[]").split(","))
    assert low <= -40.0 <= high
    assert not [r for r in paired_rows if r["A"] == "pipeline [m1]" and r["B"] == "direct [m1]"]  # not twice
    # MCQ: direct 2/4, pipeline 3/4; pipeline alone right on q2, q3, direct alone on q4 -> p = 2 * 4/8 = 1
    mcq = _row(paired_rows, Dataset="medqa-mcq", A="direct [m2]", B="pipeline [m2]")
    assert (mcq["n"], mcq["Diff (pp)"], mcq["b01"], mcq["b10"], mcq["p"]) == ("4", "+25.0", "2", "1", "1.0000")

    errors = _row(_table_after(md, "## Errors and warnings"), Dataset="medqa-mcq", System="direct")
    assert (errors["Errors"], errors["Error rate (%)"], errors["Warnings"]) == ("1", "25.0", "1")
    assert "LLM timeout" in errors["Most common error"]
    assert "Systems with failed cases (counted as misses): direct [m2] on medqa-mcq." in md
    assert "run run-a: 1 unreadable record line(s) skipped" in md

    for name in ("accuracy.png", "ablation.png", "latency.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 5000
        assert f"]({name})" in md                       # linked relatively


def test_report_with_another_baseline_and_no_plots(runs, tmp_path):
    path = build_report([runs[0]], tmp_path / "r2", baseline="direct", prices={}, plots=False)
    md = path.read_text()
    assert not list((tmp_path / "r2").glob("*.png")) and ".png)" not in md
    rows = _table_after(md, "## Paired comparisons")
    # direct 0.2 vs no-mee 0.3 per case averaged over repeats -> +10.0
    assert _row(rows, A="direct [m1]", B="pipeline:no-mee [m1]")["Diff (pp)"] == "+10.0"
    assert _row(_table_after(md, "## Cost"), System="pipeline")["Cost / case (USD)"] == "n/a"   # no price for m1


def test_the_same_system_in_two_runs_counts_as_more_repeats(runs, tmp_path):
    md = build_report([runs[0], runs[0]], tmp_path / "r3", plots=False).read_text()
    pipe = _row(_table_after(md, "### symptom2disease"), System="pipeline")
    # repeats 0, 1 and again 0, 1 renumbered 2, 3: top-1 0.6, 0.8, 0.6, 0.8 -> 70.0, SD sqrt(4 * 0.01 / 3) = 11.5
    assert (pipe["Repeats"], pipe["Top-1"]) == ("4", "70.0 (11.5)")
    assert "repeats renumbered from 2" in md


def test_system_names_and_order():
    assert split_system("pipeline:no-mee,cap=2048") == ("pipeline", ["no-mee", "cap=2048"])
    assert split_system("direct") == ("direct", [])
    names = ["pipeline:cap=1024", "pipeline:src=G", "bm25", "pipeline", "pipeline:no-krg", "direct",
             "pipeline:cap=2048", "pipeline:no-mee"]
    assert sorted(names, key=system_sort_key) == [
        "direct", "bm25", "pipeline", "pipeline:no-mee", "pipeline:no-krg", "pipeline:cap=2048",
        "pipeline:cap=1024", "pipeline:src=G"]


def test_a_sample_is_its_own_dataset_row():
    from clinicalrag.bench.report import dataset_label

    assert dataset_label({"dataset": {"name": "ddxplus", "size": 2611, "sampled": False, "seed": 0}}) is None
    assert dataset_label({"dataset": {"name": "ddxplus", "size": 490, "sampled": True, "seed": 0}}) == \
        "ddxplus (n=490, seed 0)"


def test_direct_is_compared_with_the_offline_pipeline(tmp_path):
    """A model's direct answers and an offline (no-LLM) pipeline run on the same cases are paired."""
    import json

    from clinicalrag.bench.report import build_report

    def run(name: str, system: str, model: str, hits: list[bool]):
        d = tmp_path / name
        d.mkdir()
        (d / "manifest.json").write_text(json.dumps({"run_id": name, "dataset": {"name": "cases", "size": 4},
                                                     "llm": {"model": model}, "repeats": 1}))
        recs = [{"system": system, "model": model, "dataset": "cases", "repeat": 0, "case_id": f"c{i}",
                 "label": "x", "predictions": [{"rank": 1, "diagnosis": "x"}], "status": "ok",
                 "match": {"strict_rank": 1 if h else None, "lenient_rank": 1 if h else None, "method": "concept"},
                 "llm": {}, "latency_ms": 1.0} for i, h in enumerate(hits)]
        (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        return d

    md = build_report([run("q", "direct", "m", [True, True, False, False]),
                       run("o", "pipeline", "none", [True, False, False, False])], tmp_path / "rep", plots=False)
    rows = [x for x in md.read_text().splitlines() if x.startswith("| cases | direct [m] | pipeline [none] |")]
    assert len(rows) == 1 and "| 50.0 | 25.0 | -25.0 |" in rows[0]

"""The benchmark harness end to end on real data: a small Symptom2Disease sample through the deterministic pipeline,
an ablation and the BM25 disease-page baseline; resuming after an interruption; the report; the command line; and
the LLM response cache against a real HTTP server."""
from __future__ import annotations

import json

import pytest
from support.llama_server import ok

from agents.llm import LLMClient, LLMConfig
from clinicalrag.bench.records import MANIFEST_FILE, RECORDS_FILE
from clinicalrag.bench.runner import BenchError, BenchSettings, run_bench
from clinicalrag.cli import main as cli_main
from graph.context import Resources

SYSTEMS = ["pipeline", "pipeline:no-mee", "bm25"]
N = 20


@pytest.fixture(scope="module")
def resources(knowledge):
    kg, index = knowledge
    return Resources(llm_config=LLMConfig(), kg=kg, index=index)


@pytest.fixture(scope="module")
def run_dir(resources, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "s2d"
    return run_bench(BenchSettings(dataset="symptom2disease", systems=SYSTEMS, out=out, limit=N, seed=3,
                                   progress=False), resources=resources)


def _records(run_dir):
    return [json.loads(x) for x in (run_dir / RECORDS_FILE).read_text().splitlines()]


def test_run_writes_one_record_per_system_and_case(run_dir):
    recs = _records(run_dir)
    assert len(recs) == N * len(SYSTEMS)
    assert {r["system"] for r in recs} == set(SYSTEMS)
    assert len({(r["system"], r["case_id"]) for r in recs}) == len(recs)
    m = json.loads((run_dir / MANIFEST_FILE).read_text())
    assert m["dataset"]["name"] == "symptom2disease" and m["dataset"]["size"] == N and m["dataset"]["total"] == 1200
    assert m["dataset"]["sha256"] and m["dataset"]["case_ids_sha256"]
    assert set(m["systems"]) == set(SYSTEMS) and m["finished_at"]
    assert m["systems"]["pipeline:no-mee"]["config"]["use_mee"] is False
    assert m["code_version"] and m["machine"]["cpus"] >= 1
    # stratified: 20 cases over 24 labels -> 20 distinct labels
    assert len({r["label"] for r in recs if r["system"] == "bm25"}) == N
    for r in recs:
        assert r["status"] != "error", r
        assert [p["rank"] for p in r["predictions"]] == list(range(1, len(r["predictions"]) + 1))
        # every S2D label links to KG diseases through the alias table, except jaundice (a finding, not a disease)
        assert r["match"]["method"] == ("string" if r["label"] == "Jaundice" else "concept"), r["label"]
    pipe = [r for r in recs if r["system"] == "pipeline"]
    assert all(r["retrieval"] is not None and r["faithfulness"] is not None for r in pipe)
    # each pipeline prediction carries its calibrated confidence and the features it came from; baselines none
    for r in pipe:
        assert r["diagnostic"] is not None and r["diagnostic"]["level"] in ("low", "moderate", "high", "unknown")
        for p in r["predictions"]:
            assert p["features"]["rank"] == p["rank"] and 0.0 <= p["confidence"] <= 1.0, p
        if r["predictions"]:
            assert r["diagnostic"]["top"] == r["predictions"][0]["confidence"]
    assert all(r["diagnostic"] is None and "confidence" not in str(r["predictions"]) for r in recs
               if r["system"] == "bm25")
    # the systems are measured, not assumed: some case is a hit for some system, and the baselines differ
    assert any(r["match"]["strict_rank"] == 1 for r in recs)
    assert [r["predictions"][:1] for r in pipe] != [r["predictions"][:1] for r in recs if r["system"] == "bm25"]


def test_resume_after_interruption_runs_only_what_is_missing(run_dir, resources, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    lines = (copy / RECORDS_FILE).read_text().splitlines()
    # keep 25 whole records and half of the 26th: a run killed mid-write
    (copy / RECORDS_FILE).write_text("\n".join(lines[:25]) + "\n" + lines[25][: len(lines[25]) // 2])
    run_bench(BenchSettings(dataset="symptom2disease", systems=SYSTEMS, out=copy, limit=N, seed=3, progress=False),
              resources=resources)
    recs = _records(copy)
    assert len(recs) == N * len(SYSTEMS)
    assert len({(r["system"], r["case_id"]) for r in recs}) == len(recs)
    # the resumed records agree with the uninterrupted run (deterministic systems)
    first = {(r["system"], r["case_id"]): r["predictions"] for r in _records(run_dir)}
    assert all(first[(r["system"], r["case_id"])] == r["predictions"] for r in recs)
    # a finished run resumed again does nothing
    run_bench(BenchSettings(dataset="symptom2disease", systems=SYSTEMS, out=copy, limit=N, seed=3, progress=False),
              resources=resources)
    assert len(_records(copy)) == N * len(SYSTEMS)


def test_resume_refuses_another_sample(run_dir, resources):
    with pytest.raises(BenchError, match="sampled cases"):
        run_bench(BenchSettings(dataset="symptom2disease", systems=SYSTEMS, out=run_dir, limit=N, seed=4,
                                progress=False), resources=resources)


def test_resume_refuses_a_folder_made_on_another_graph(run_dir, resources, tmp_path):
    """A run folder made before the graph changed holds the old graph's answers: resuming it would report them as
    this code's, so it is refused."""
    import shutil

    copy = tmp_path / "other-graph"
    shutil.copytree(run_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["kg_version"] = "0123456789abcdef+m00000000"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BenchError, match="knowledge graph '0123456789abcdef"):
        run_bench(BenchSettings(dataset="symptom2disease", systems=SYSTEMS, out=copy, limit=N, seed=3,
                                progress=False), resources=resources)


def test_report_tables_and_plots(run_dir, tmp_path):
    from clinicalrag.bench.report import build_report

    md = build_report([run_dir], tmp_path / "report")
    text = md.read_text()
    assert "Table 1" in text and "Table 2" in text
    for s in SYSTEMS:
        assert f"| {s} " in text or f"| {s}|" in text, s
    pngs = list((tmp_path / "report").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_cli_run_and_bad_input(knowledge, tmp_path, capsys):
    out = tmp_path / "cli"
    assert cli_main(["bench", "run", "--dataset", "symptom2disease", "--systems", "bm25", "--limit", "5",
                     "--out", str(out), "--quiet", "--no-llm"]) == 0
    printed = capsys.readouterr().out
    assert "report" in printed and "bm25" in printed
    assert len(_records(out)) == 5
    assert cli_main(["bench", "run", "--dataset", "symptom2disease", "--systems", "pipline", "--out",
                     str(tmp_path / "x"), "--no-llm"]) == 2
    assert "unknown system 'pipline'" in capsys.readouterr().err
    assert cli_main(["bench", "run", "--dataset", "symptom2disease", "--systems", "direct", "--out",
                     str(tmp_path / "y"), "--no-llm"]) == 2
    assert "needs an LLM" in capsys.readouterr().err
    assert cli_main(["bench", "run", "--dataset", "no-such-set", "--out", str(tmp_path / "z"), "--no-llm"]) == 2
    assert cli_main(["bench", "report", str(tmp_path / "nothing-here")]) == 2


def test_response_cache_answers_a_repeated_request_without_a_call(faulty_server, tmp_path):
    faulty_server.queue(ok("Influenza."), ok("a second, different answer"))
    cfg = LLMConfig(base_url=faulty_server.base_url, model="m", cache_path=str(tmp_path / "c.sqlite"), max_retries=0)
    msgs = [{"role": "user", "content": "fever and cough for three days"}]
    a = LLMClient(cfg).chat(msgs)
    b = LLMClient(cfg).chat(msgs)                    # a new client (a re-run): same request -> the stored answer
    c = LLMClient(cfg).chat(msgs, seed=7)            # another seed (another repeat): a new call
    assert (a.text, a.cached) == ("Influenza.", False)
    assert (b.text, b.cached) == ("Influenza.", True)
    assert (c.text, c.cached) == ("a second, different answer", False)
    assert len(faulty_server.chat_requests()) == 2


def test_ddxplus_refused_when_the_kg_holds_its_generator(tmp_path):
    """DDXPlus patients were generated from the DDXPlus conditions: with those in the KG the run is refused (or,
    when forced, flagged in the manifest)."""
    import networkx as nx

    from knowledge.kg.graph import KnowledgeGraph

    g = nx.MultiDiGraph()
    g.add_node("DDX:Pneumonia", name="Pneumonia", category="disease", synonyms=[], synonym_scopes=[], xrefs={},
               sources=["ddxplus-conditions"])
    kg = KnowledgeGraph(g, version="with-ddxplus")
    res = Resources(llm_config=LLMConfig(), kg=kg)
    with pytest.raises(BenchError, match="DDXPlus conditions"):
        run_bench(BenchSettings(dataset="ddxplus", systems=["bm25"], out=tmp_path / "a", limit=5, progress=False),
                  resources=res)
    assert not (tmp_path / "a" / RECORDS_FILE).exists()


@pytest.mark.slow
@pytest.mark.llm
def test_llm_systems_with_a_real_server_and_the_response_cache(knowledge, llama_server, tmp_path):
    """direct vs pipeline through llama.cpp (SmolLM2-135M; its answers are poor, the mechanism is what is checked):
    model and token accounting per case, and a re-run answered from the response cache without a call."""
    kg, index = knowledge
    llm = LLMConfig(base_url=llama_server.base_url, model=llama_server.model, timeout=300, max_tokens=256,
                    max_retries=0)
    res = Resources(llm_config=llm, kg=kg, index=index)
    settings = dict(dataset="medqa-mcq", systems=["direct", "pipeline:cap=1024"], limit=2, llm=llm,
                    cache_path=tmp_path / "cache.sqlite", progress=False)
    first = run_bench(BenchSettings(out=tmp_path / "one", **settings), resources=res)
    recs = _records(first)
    assert len(recs) == 4
    for r in recs:
        assert r["model"] == llama_server.model and r["status"] != "error", r
        assert r["llm"]["calls"] >= 1 and r["llm"]["prompt_tokens"] > 0 and r["llm"]["cached"] == 0
        assert r["answer"] in "ABCD" and (r["choice"] is None or r["choice"] in "ABCD")
    assert all(r["llm"]["calls"] <= 4 for r in recs)
    m = json.loads((first / MANIFEST_FILE).read_text())
    assert m["llm"]["model"] == llama_server.model and "api_key" in m["llm"]
    again = _records(run_bench(BenchSettings(out=tmp_path / "two", **settings), resources=res))
    assert all(r["llm"]["cached"] == r["llm"]["calls"] for r in again), [r["llm"] for r in again]
    assert [r["predictions"] for r in again] == [r["predictions"] for r in recs]

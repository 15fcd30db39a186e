"""Run systems over a dataset and append one record per (system, repeat, case) to ``<run_dir>/records.jsonl``.

A run folder is resumable: records already there are skipped, so an interrupted run (Ctrl-C, a crash, a killed
machine) continues where it stopped, and adding a system to a finished run runs only that system. The manifest
beside the records says what was run (code version, dataset checksum and sampled ids, seed, systems and their
config hashes, model, machine), so two runs can be compared and reproduced. A run folder belongs to one dataset
sample, one model and one knowledge graph and index: resuming it with another refuses (after the graph changes, a
resumed folder would report the old graph's answers as the new code's).

LLM answers go through an optional response cache keyed by the request (model, messages, settings, seed): a re-run
of unchanged cases makes no calls. Repeat ``r`` uses seed ``seed + r`` so repeats are separate requests.
"""
from __future__ import annotations

import copy
import json
import logging
import os
import platform
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .matching import LabelMatcher, predictions_from_differential
from .records import MANIFEST_FILE, RECORD_VERSION, RECORDS_FILE, Case, CaseRecord, Manifest, task_key
from .systems import System, parse_system

log = logging.getLogger(__name__)

MAX_PREDICTIONS = 10


class BenchError(ValueError):
    """A benchmark that cannot run as asked (bad dataset/system, a conflicting run folder, a missing LLM)."""


@dataclass
class BenchSettings:
    dataset: str
    systems: list[str]
    out: Path
    limit: int | None = None
    seed: int = 0
    split: str = "all"                    # "dev" / "test": one fixed half of the dataset (datasets.split_of)
    repeats: int = 1
    llm: Any = None                       # agents.llm.LLMConfig (None or disabled: no LLM)
    concurrency: int = 1
    cache_path: Path | None = None        # LLM response cache (None: no cache)
    prices: dict[str, Any] | None = None
    progress: bool = True
    allow_ddxplus_kg: bool = False        # run DDXPlus although the KG holds its generator (flagged everywhere)
    command: list[str] = field(default_factory=list)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def options_block(options: dict[str, str]) -> str:
    return "\n".join(["", "Answer options:", *[f"{k}. {v}" for k, v in options.items()]])


# ---------------------------------------------------------------------------------------------- one case
def _rank_of(ids_in_order: list[set[str]], gold: set[str]) -> int | None:
    return next((i for i, ids in enumerate(ids_in_order, 1) if ids & gold), None)


def _faithfulness(result: dict[str, Any]) -> dict[str, Any] | None:
    v = result.get("verification")
    if not v:
        return None
    claims = v.get("claims") or []
    return {"claims": len(claims), "supported": sum(c.get("verdict") == "SUPPORTED" for c in claims),
            "contradicted": sum(c.get("verdict") == "CONTRADICTED" for c in claims),
            "citations": sum(len(c.get("citations") or []) for c in claims) + len(v.get("fabricated_citations") or []),
            "invalid_citations": len(v.get("fabricated_citations") or []),
            "escalated": bool(_evidence_reasons(result))}


DIAGNOSTIC_PREFIX = "diagnostic: "   # graph.result.DIAGNOSTIC_PREFIX (reasons about the diagnosis, not the claims)


def _evidence_reasons(result: dict[str, Any]) -> list[str]:
    """The escalation reasons about evidence and verification (the faithfulness record's ``escalated``, as before
    diagnostic escalation existed)."""
    return [r for r in (result.get("escalation") or {}).get("reasons") or [] if not r.startswith(DIAGNOSTIC_PREFIX)]


def _with_confidence(predictions: list[dict[str, Any]], result: dict[str, Any]) -> dict[str, Any] | None:
    """Adds each prediction's calibrated confidence and features (from the result's ``diagnostic_confidence``) and
    returns the record's ``diagnostic`` block; None when the result has no diagnostic confidence."""
    block = result.get("diagnostic_confidence")
    if not block:
        return None
    by_rank = {it.get("rank"): it for it in block.get("items") or []}
    for p in predictions:
        it = by_rank.get(p.get("rank"))
        if it is not None:
            p["confidence"] = it.get("confidence")
            p["features"] = it.get("features") or {}
    reasons = (result.get("escalation") or {}).get("reasons") or []
    return {"top": block.get("top"), "level": block.get("level"), "findings": block.get("findings"),
            "top_explains": block.get("top_explains"), "leading_explain": block.get("leading_explain"),
            "escalated": any(r.startswith(DIAGNOSTIC_PREFIX) for r in reasons),
            "calibration": block.get("calibration")}


class CaseRunner:
    """Runs one system on one case and turns the outcome into a :class:`CaseRecord`."""

    def __init__(self, rag_llm: Any, rag_plain: Any, matcher: LabelMatcher, dataset: str, bm25: Any = None):
        self.rag_llm = rag_llm          # ClinicalRAG with the LLM (None without one)
        self.rag_plain = rag_plain      # ClinicalRAG without an LLM
        self.matcher = matcher
        self.dataset = dataset
        self.bm25 = bm25

    def run(self, system: System, case: Case, repeat: int, rag_llm: Any = None) -> CaseRecord:
        rag_llm = rag_llm or self.rag_llm
        uses_llm = system.kind == "direct" or (system.kind == "pipeline" and system.use_llm and rag_llm is not None)
        rec: CaseRecord = {
            "v": RECORD_VERSION, "system": system.spec, "model": "none", "dataset": self.dataset, "repeat": repeat,
            "case_id": case.id, "label": case.label, "answer": case.answer, "predictions": [], "choice": None,
            "retrieval": None, "faithfulness": None, "diagnostic": None,
            "dataset_differential": list(case.differential),
            "status": "ok", "error": None, "warnings": [], "latency_ms": 0.0,
            "llm": {"model": None, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "errors": 0, "cached": 0},
        }
        t0 = time.perf_counter()
        ranked: list[dict[str, Any]] = []      # predictions, then the remaining candidates (MCQ option mapping)
        answer_text = ""
        try:
            if system.kind == "bm25":
                pages = self.bm25.rank(case.text, k=50)
                ranked = [{"rank": p["rank"], "diagnosis": p["name"], "concept_id": p["concept_id"]} for p in pages]
                rec["predictions"] = ranked[:MAX_PREDICTIONS]
                gold = self.matcher.closure(self.matcher.gold_concepts(case))
                rec["retrieval"] = {"candidate_rank": _rank_of([{p["concept_id"]} for p in pages], gold) if gold
                                    else None, "candidates": len(pages)}
            elif system.kind == "ranker":
                cands = self._ranker(system, case)
                rec["predictions"] = [{"rank": i, "diagnosis": c.name, "concept_id": c.concept_id}
                                      for i, c in enumerate(cands[:MAX_PREDICTIONS], 1)]
                ranked = [{"rank": i, "diagnosis": c.name, "concept_id": c.concept_id} for i, c in enumerate(cands, 1)]
                gold = self.matcher.closure(self.matcher.gold_concepts(case))
                rec["retrieval"] = {"candidate_rank": _rank_of([self.matcher.closure([c.concept_id]) for c in cands],
                                                               gold) if gold else None,
                                    "candidates": len(cands)}
            else:
                rag = rag_llm if uses_llm else self.rag_plain
                text = case.text
                if case.options and uses_llm:
                    text += options_block(case.options)
                result = rag.ask(text, system.config(), audit=False)
                rec["status"] = result.get("status") or "ok"
                rec["warnings"] = list(result.get("warnings") or [])
                rec["llm"] = {**rec["llm"], **(result.get("llm") or {})}
                if uses_llm:
                    rec["model"] = (result.get("llm") or {}).get("model") or "unknown"
                answer_text = result.get("answer") or ""
                rec["predictions"] = predictions_from_differential(result.get("differential") or [], MAX_PREDICTIONS)
                if system.kind == "pipeline":
                    rec["diagnostic"] = _with_confidence(rec["predictions"], result)
                    for p, d in zip(rec["predictions"], result.get("differential") or []):
                        p["origins"] = list(d.get("origins") or [])
                    if uses_llm:   # the LLM path: what the model proposed, and whether it disagreed
                        rec["proposals"] = [{"rank": x["rank"], "name": x["name"], "concept_id": x["concept_id"],
                                             "alternative": bool(x.get("alternative"))}
                                            for x in result.get("proposals") or []]
                        rec["disagreement"] = result.get("disagreement") is not None
                cands = result.get("candidates") or []
                ranked = [{k: p[k] for k in ("rank", "diagnosis", "concept_id") if k in p} for p in rec["predictions"]]
                shown = {p.get("concept_id") for p in ranked}
                ranked += [{"rank": len(ranked) + i + 1, "diagnosis": c["name"], "concept_id": c["concept_id"]}
                           for i, c in enumerate(c for c in cands if c["concept_id"] not in shown)]
                if system.kind == "pipeline":
                    gold = self.matcher.closure(self.matcher.gold_concepts(case))
                    evidence = result.get("evidence") or []
                    rec["retrieval"] = {
                        "candidate_rank": _rank_of([self.matcher.closure([c["concept_id"]]) for c in cands], gold)
                        if gold else None,
                        "candidates": len(cands),
                        "evidence_rank": _rank_of([set(e.get("concept_ids") or []) for e in evidence], gold)
                        if gold else None,
                        "evidence": len(evidence)}
                    rec["faithfulness"] = _faithfulness(result)
        except Exception as exc:  # noqa: BLE001 - one failing case must not end the run; it counts as a miss
            from graph.pipeline import InputError  # noqa: PLC0415

            rec["status"] = "error"
            rec["error"] = (str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}")[:500]
            log.warning("case %s (%s) failed: %s", case.id, system.spec, rec["error"])
        rec["latency_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        rec["match"] = self.matcher.match(case, rec["predictions"])
        if case.options:
            rec["choice"] = self.matcher.choose_option(case.options, ranked, answer_text)
        rec["finished_at"] = _now()
        return rec


    def _ranker(self, system: System, case: Case) -> list[Any]:
        res = self.rag_plain.resources
        age = sex = None
        if system.gold_findings:
            if not (case.meta or {}).get("findings"):
                raise BenchError(f"case {case.id} lists no findings (ranker:gold-findings needs the hand-written "
                                 "cases dataset)")
            pos, neg = gold_finding_entities(res.kg, case.meta["findings"])
        else:
            from agents.ranker import ranking_findings  # noqa: PLC0415

            ex = res.mee.extract(case.text)
            pos, neg = ranking_findings(ex)
            age, sex = ex.age_years, ex.sex
        return res.ranker.rank(pos, neg, k=50, age=age, sex=sex)


def gold_finding_entities(kg: Any, findings: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(positive, negated) entities for listed finding phrases, each resolved with the KG's own lookup
    (symptoms, then phenotypes); :class:`BenchError` naming every phrase that resolves to nothing."""
    from agents.types import Entity  # noqa: PLC0415

    pos, neg, missing = [], [], []
    for f in findings:
        hits = kg.lookup(f["text"], categories=["symptom", "phenotype"])
        if not hits:
            missing.append(f["text"])
            continue
        e = Entity(text=f["text"], category="symptom", concept_id=hits[0].id, concept_name=hits[0].name,
                   negated=bool(f.get("negated", False)))
        (neg if e.negated else pos).append(e)
    if missing:
        raise BenchError(f"finding phrase(s) not found in the KG: {missing}")
    return pos, neg


# ---------------------------------------------------------------------------------------------- run folder
class RecordLog:
    """The append-only records file of a run (one JSON object per line; a torn last line is ignored)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def done(self) -> set[tuple[str, int, str]]:
        keys: set[tuple[str, int, str]] = set()
        if not self.path.exists():
            return keys
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue          # a line cut by an interruption: that case runs again
                keys.add(task_key(r["system"], r["repeat"], r["case_id"]))
        return keys

    def repair(self) -> None:
        """Cut a torn last line (an interrupted write) so new records start on a line of their own."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with self.path.open("r+b") as fh:
                fh.truncate(cut)

    def append(self, rec: dict[str, Any]) -> None:
        line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _check_resume(old: dict[str, Any], new: Manifest) -> None:
    for key, what in (("case_ids_sha256", "sampled cases"), ("name", "dataset")):
        if old.get("dataset", {}).get(key) != new["dataset"].get(key):
            raise BenchError(f"the run folder holds another {what} ({old.get('dataset', {}).get(key)!r}); "
                             "use a new --out folder, or the same --dataset/--limit/--seed")
    if (old.get("llm") or {}).get("model") != (new.get("llm") or {}).get("model"):
        raise BenchError(f"the run folder was made with model {(old.get('llm') or {}).get('model')!r}; "
                         "use a new --out folder for another model")
    for key, what in (("kg_version", "knowledge graph"), ("index_version", "index")):
        if old.get(key) and old.get(key) != new.get(key):
            # records made on another graph or index would be counted as this code's: a stale result, silently
            raise BenchError(f"the run folder was made on {what} {old.get(key)!r}, this code has {new.get(key)!r}: "
                             "records of two versions do not mix; use a new --out folder")
    if int(old.get("repeats", 1)) > new["repeats"]:
        new["repeats"] = int(old["repeats"])


# ---------------------------------------------------------------------------------------------- the run
def run_bench(settings: BenchSettings, resources: Any = None) -> Path:
    """Run (or resume) a benchmark; returns the run folder. ``resources``: shared :class:`graph.context.Resources`
    to reuse (default: from ``$CLINICALRAG_HOME``), e.g. a notebook's or a test's."""
    from agents.llm import LLMClient, LLMConfig  # noqa: PLC0415
    from graph.context import Resources  # noqa: PLC0415
    from graph.pipeline import ClinicalRAG  # noqa: PLC0415
    from graph.tracing import code_version  # noqa: PLC0415

    from . import datasets  # noqa: PLC0415

    if settings.repeats < 1:
        raise BenchError("--repeats must be at least 1")
    if settings.concurrency < 1:
        raise BenchError("--concurrency must be at least 1")
    try:
        systems = [parse_system(s) for s in settings.systems]
    except ValueError as exc:
        raise BenchError(str(exc)) from exc
    if not systems:
        raise BenchError("no systems to run")
    llm_cfg = settings.llm if settings.llm is not None and settings.llm.enabled else None
    if llm_cfg is None and any(s.needs_llm for s in systems):
        raise BenchError("the direct system needs an LLM: pass --llm-base-url and --llm-model (or --llm local)")
    if llm_cfg is not None and settings.cache_path is not None:
        llm_cfg = llm_cfg.model_copy(update={"cache_path": str(settings.cache_path)})
    try:
        ds = datasets.load_dataset(settings.dataset, limit=settings.limit, seed=settings.seed, split=settings.split)
    except ValueError as exc:
        raise BenchError(str(exc)) from exc
    if not ds.cases:
        raise BenchError(f"dataset {ds.name} has no cases")

    res = resources if resources is not None else Resources(llm_config=LLMConfig())
    kg = res.kg
    warnings = list(ds.warnings)
    base_name = ds.name.split("/")[0]
    if base_name == "ddxplus" and datasets.ddxplus_conditions_in_kg(kg):
        msg = ("the knowledge graph contains the DDXPlus conditions, the generator of the DDXPlus patients: "
               "results on DDXPlus would be inflated. Rebuild the KG without them (`clinicalrag kg build`).")
        if not settings.allow_ddxplus_kg:
            raise BenchError(msg)
        log.warning("%s Running anyway (--allow-ddxplus-kg); the manifest records it.", msg)
        warnings.append("DDXPLUS CONDITIONS IN THE KG: " + msg)
    # two views of the shared resources: without an LLM, and (per repeat) with one
    plain = copy.copy(res)
    plain.client, plain.llm_config = None, LLMConfig()
    rag_plain = ClinicalRAG(plain)

    def rag_for_repeat(r: int):
        if llm_cfg is None:
            return None
        cfg = llm_cfg.model_copy(update={"seed": (llm_cfg.seed or 0) + r})
        view = copy.copy(res)
        view.llm_config, view.client = cfg, LLMClient(cfg)
        return ClinicalRAG(view)

    bm25 = res.baseline_pages if any(s.kind == "bm25" for s in systems) else None
    prior_info = None         # which commonness prior (agents/prior.py) the pipeline systems re-rank with
    if any(s.kind == "pipeline" and s.config().use_prior for s in systems):
        prior_info = res.prior.describe() if res.prior is not None else {"missing": True}
    matcher = LabelMatcher(kg, datasets.label_aliases(base_name))
    runner = CaseRunner(None, rag_plain, matcher, ds.name, bm25)

    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    index_version = None
    try:
        index_version = res.index.manifest().get("version")
    except Exception:  # noqa: BLE001 - a bm25-only run works without an index
        pass
    manifest: Manifest = {
        "run_id": out.name, "created_at": _now(), "finished_at": None, "code_version": code_version(),
        "command": settings.command or sys.argv,
        "dataset": {"name": ds.name, "kind": ds.kind, "source_ids": list(ds.source_ids), "sha256": ds.sha256,
                    "total": ds.total, "size": len(ds.cases), "sampled": ds.sampled, "seed": ds.seed,
                    "case_ids_sha256": ds.case_ids_sha256, "labels": len(ds.labels)},
        "systems": {s.spec: s.describe() for s in systems},
        "llm": ({k: v for k, v in llm_cfg.public_dict().items() if k != "cache_path"} if llm_cfg else
                {"model": "none"}),
        "repeats": settings.repeats, "seed": settings.seed, "limit": settings.limit,
        "kg_version": str(getattr(kg, "version", None)), "index_version": index_version,
        "machine": {**_machine(), "load_avg_start": [round(x, 2) for x in os.getloadavg()]},
        "prices": settings.prices, "warnings": warnings, "commonness_prior": prior_info,
    }
    mpath = out / MANIFEST_FILE
    if mpath.exists():
        old = json.loads(mpath.read_text(encoding="utf-8"))
        _check_resume(old, manifest)
        manifest["created_at"] = old.get("created_at", manifest["created_at"])
        manifest["systems"] = {**old.get("systems", {}), **manifest["systems"]}
        manifest["resumed"] = int(old.get("resumed", 0)) + 1
    _write_json(mpath, manifest)

    records = RecordLog(out / RECORDS_FILE)
    records.repair()
    done = records.done()
    tasks = [(s, r, c) for r in range(settings.repeats) for s in systems for c in ds.cases
             if task_key(s.spec, r, c.id) not in done]
    log.info("bench %s: %d cases x %d systems x %d repeats; %d already done, %d to run", ds.name, len(ds.cases),
             len(systems), settings.repeats, len(done), len(tasks))
    rags: dict[int, Any] = {}

    def work(task) -> dict[str, Any]:
        s, r, c = task
        if r not in rags:
            rags[r] = rag_for_repeat(r)
        return runner.run(s, c, r, rag_llm=rags[r])

    from tqdm.auto import tqdm  # noqa: PLC0415

    bar = tqdm(total=len(tasks), disable=not settings.progress or not tasks, unit="case", dynamic_ncols=True,
               desc=f"{ds.name}")
    errors = 0
    completed = False
    try:
        if settings.concurrency == 1:
            for t in tasks:
                rec = work(t)
                records.append(rec)
                errors += rec["status"] == "error"
                bar.set_postfix_str(f"{t[0].spec} r{t[1]}" + (f" errors {errors}" if errors else ""), refresh=False)
                bar.update()
        else:
            for r in range(settings.repeats):      # build the per-repeat clients before the threads start
                rags[r] = rag_for_repeat(r)
            with ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
                pending = set()
                it = iter(tasks)
                for t in it:
                    pending.add(pool.submit(work, t))
                    if len(pending) >= settings.concurrency * 2:
                        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                        for f in finished:
                            rec = f.result()
                            records.append(rec)
                            errors += rec["status"] == "error"
                            bar.update()
                for f in pending:
                    rec = f.result()
                    records.append(rec)
                    errors += rec["status"] == "error"
                    bar.update()
        completed = True
    finally:
        bar.close()
        manifest["finished_at"] = _now() if completed else None
        manifest["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
        _write_json(mpath, manifest)
    if errors:
        log.warning("%d case(s) failed; they count as misses and are listed in the report", errors)
    return out

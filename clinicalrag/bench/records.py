"""The shapes a benchmark run reads and writes: a :class:`Case` in, one :class:`CaseRecord` out per (system,
repeat, case), appended as one JSON line to ``<run_dir>/records.jsonl``, and ``<run_dir>/manifest.json``.

Everything the metrics and the report need is in the records, so a report can be rebuilt from a run folder alone
and two run folders can be compared.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

RECORDS_FILE = "records.jsonl"
MANIFEST_FILE = "manifest.json"
RECORD_VERSION = 1


@dataclass(frozen=True)
class Case:
    """One benchmark item.

    ``text``: the presentation as a clinician would type it (for MCQ datasets: the question stem, without the
    options). ``label``: the gold diagnosis as the dataset names it. ``options``: letter -> option text for MCQ
    datasets (``answer`` is then the gold letter). ``differential``: the dataset's own differential where it
    has one (DDXPlus: condition names), for differential-overlap metrics. ``meta``: anything else (age, sex,
    source row).
    """

    id: str
    text: str
    label: str
    options: dict[str, str] | None = None
    answer: str | None = None
    differential: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)


class Prediction(TypedDict, total=False):
    rank: int                     # 1-based
    diagnosis: str                # as the system wrote it
    concept_id: str | None        # KG concept the system or the matcher linked it to (None: unlinkable)
    confidence: float | None      # pipeline: calibrated P(this is the diagnosis) (None: uncalibrated)
    features: dict[str, Any]      # pipeline: what the confidence is computed from (agents.confidence.item_features)
    origins: list[str]            # pipeline: the rankings that put it forward (kg, text, page, site, sign, model)


class Match(TypedDict, total=False):
    strict_rank: int | None       # rank of the first prediction that is the gold concept (or an equivalent)
    lenient_rank: int | None      # ... the gold concept, an equivalent, its parent or its child
    method: Literal["concept", "string"]  # "string": the gold label did not link; normalised string match used
    gold_concepts: list[str]      # KG concepts the gold label linked to (empty when unlinkable)
    unlinked_predictions: int     # predictions that linked to no concept


class Retrieval(TypedDict, total=False):
    candidate_rank: int | None    # rank of the gold concept among the KG ranker's candidates (None: absent)
    candidates: int               # how many candidates there were
    evidence_rank: int | None     # rank of the first evidence item about the gold concept
    evidence: int


class Faithfulness(TypedDict, total=False):
    claims: int                   # claims the verifier checked
    supported: int                # of which SUPPORTED
    contradicted: int
    citations: int                # citations in the draft as generated
    invalid_citations: int        # citations of evidence the turn did not have (removed by the verifier)
    escalated: bool


class Diagnostic(TypedDict, total=False):
    top: float | None             # calibrated probability that the top prediction is the diagnosis
    level: str                    # "high" / "moderate" / "low" / "unknown" (uncalibrated)
    findings: int                 # current findings with a concept id
    top_explains: int             # of them, explained by the top prediction
    leading_explain: int          # ... by the leading predictions together
    escalated: bool               # escalated for a diagnostic reason
    calibration: str              # where the probabilities come from, or "uncalibrated"


class LLMUsage(TypedDict, total=False):
    model: str | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    errors: int
    cached: int                   # calls answered from the response cache


class CaseRecord(TypedDict, total=False):
    v: int                        # RECORD_VERSION
    system: str                   # the system spec as given, e.g. "pipeline", "pipeline:no-mee", "direct", "bm25"
    model: str                    # LLM model name, or "none"
    dataset: str                  # e.g. "ddxplus", "symptom2disease", "medqa-mcq", "medqa-free", "file:foo.jsonl"
    repeat: int                   # 0-based repeat index
    case_id: str
    label: str                    # gold label as in the dataset
    answer: str | None            # gold option letter (MCQ datasets)
    predictions: list[Prediction]  # the ranked differential (at most 10)
    choice: str | None            # MCQ: the option letter the system's answer maps to (None: no option matched)
    match: Match
    retrieval: Retrieval | None   # None for systems without retrieval (direct)
    faithfulness: Faithfulness | None  # None for systems without a verifier
    diagnostic: Diagnostic | None  # pipeline: the result's diagnostic confidence (None for other systems)
    dataset_differential: list[str]  # the dataset's differential (DDXPlus), else []
    status: str                   # the pipeline's status, "ok" for baselines, "error" when the case failed
    error: str | None             # why the case failed (the case still counts as a miss)
    warnings: list[str]
    latency_ms: float
    llm: LLMUsage
    finished_at: str              # ISO-8601 UTC


class Manifest(TypedDict, total=False):
    run_id: str
    created_at: str
    finished_at: str | None
    code_version: str             # package version + git commit (+ "-dirty")
    command: list[str]
    dataset: dict[str, Any]       # name, source ids, sha256 of the source files, size, sampled, seed, case_ids_sha256
    systems: dict[str, dict[str, Any]]  # spec -> {"config": PipelineConfig dump, "config_hash": ..., "kind": ...}
    llm: dict[str, Any]           # public LLM config (no key), or {"model": "none"}
    repeats: int
    seed: int
    limit: int | None
    kg_version: str | None
    index_version: str | None
    machine: dict[str, Any]       # platform, python, cpu count, load average at start and end
    prices: dict[str, Any] | None  # model -> {"prompt": USD per 1M tokens, "completion": USD per 1M tokens}
    commonness_prior: dict[str, Any] | None  # the prior the pipeline re-ranked with (agents.prior describe())


def task_key(system: str, repeat: int, case_id: str) -> tuple[str, int, str]:
    """The identity of one unit of work; a resumed run skips the keys its records file already has."""
    return (system, int(repeat), str(case_id))

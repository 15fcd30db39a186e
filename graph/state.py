"""Typed graph state, its input and output schemas, and the reducers.

Values are the agents' own pydantic models (no dict round trips); the SQLite checkpointer serialises them, so a
conversation thread (``--thread ID``) keeps its earlier turns in ``history``. Every other field belongs to one
turn: ``intake`` resets the plain fields with new values and the reducer fields with
:class:`langgraph.types.Overwrite`.

Reducers:

- ``warnings``, ``escalation``: append, keeping the first occurrence of a repeated line;
- ``events``: append (one event per node: name, ms, summary, LLM call metadata — no prompts);
- ``evidence``: merge by evidence id (a re-retrieval adds to what the turn found; the higher score wins),
  ordered by score.

Prompts and raw LLM outputs are not in the state: they go to the audit log and to the custom stream.
"""
from __future__ import annotations

from typing import Annotated, Any

from typing_extensions import TypedDict   # pydantic (JSON schemas for Studio) needs it before Python 3.12

from agents.grader import Grade
from agents.hki import RetrievalParams
from agents.types import (
    Candidate,
    ClaimCheck,
    DifferentialItem,
    Disagreement,
    Draft,
    Duration,
    Entity,
    Evidence,
    Extraction,
    MustNotMissItem,
    ProposedDiagnosis,
    Reference,
    Sentence,
    Verification,
)


# ---- reducers -------------------------------------------------------------------------------------------------

def add_unique(left: list[str] | None, right: list[str] | None) -> list[str]:
    """``left`` then the lines of ``right`` it does not hold yet (order kept)."""
    out = list(left or [])
    seen = set(out)
    for line in right or []:
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out


def add_events(left: list[dict] | None, right: list[dict] | None) -> list[dict]:
    return list(left or []) + list(right or [])


def merge_evidence(left: list[Evidence] | None, right: list[Evidence] | None) -> list[Evidence]:
    """Union by id; an item seen again keeps its higher-scoring version; ordered by score (stable)."""
    by_id: dict[str, Evidence] = {}
    for ev in [*(left or []), *(right or [])]:
        old = by_id.get(ev.id)
        if old is None or ev.score > old.score:
            by_id[ev.id] = ev
    order = {eid: i for i, eid in enumerate(by_id)}
    return sorted(by_id.values(), key=lambda e: (-e.score, order[e.id]))


# ---- schemas --------------------------------------------------------------------------------------------------

class InputState(TypedDict):
    """What a caller sends: this turn's text. The run's configuration is in the Context."""

    message: str


class Result(TypedDict, total=False):
    """The structured answer (what ``clinicalrag ask --json`` prints). See :func:`graph.result.build_result`."""

    status: str
    error: str | None            # the input error when status == "rejected"
    answer: str
    differential: list[dict[str, Any]]
    must_not_miss: list[dict[str, Any]]   # dangerous diagnoses compatible with the findings (agents.must_not_miss)
    next_steps: list[str]
    escalation: dict[str, Any]
    verification: dict[str, Any] | None
    references: list[dict[str, Any]]
    reference_map: dict[str, int]
    evidence: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    proposals: list[dict[str, Any]]          # the language model's own differential (LLM path)
    disagreement: dict[str, Any] | None      # the model's first choice vs the knowledge-based ranking's
    extraction: dict[str, Any] | None
    presentation: str | None
    thread_id: str | None
    mode: str
    config: dict[str, Any]
    config_hash: str
    warnings: list[str]
    attempts: int
    trace: list[dict[str, Any]]
    llm: dict[str, Any]
    latency_ms: float
    run_id: str | None
    diagnostic_confidence: dict[str, Any] | None   # how likely the diagnosis is (apart from verification)


class OutputState(TypedDict):
    result: Result


class State(TypedDict, total=False):
    # input
    message: str                  # this turn's text as sent
    # the turn
    history: list[str]            # the thread's turns so far, this one included (kept by the checkpointer)
    presentation: str             # what the agents see: the thread's turns joined
    input_error: str | None       # set by intake when the message cannot be processed
    started_at: float             # wall-clock start of the turn (for latency_ms)
    # agents
    extraction: Extraction
    proposals: list[ProposedDiagnosis]   # the language model's own differential (empty without an LLM)
    params: RetrievalParams       # current retrieval parameters (widened by the corrective step)
    expansions: list[str]
    evidence: Annotated[list[Evidence], merge_evidence]
    candidates: list[Candidate]
    coverage: dict[str, list[str]]
    grade: Grade | None
    attempts: int                 # corrective attempts used (retrieval and verification share the budget)
    sentences: list[Sentence]
    draft: Draft | None           # after verification: the verifier's cleaned draft
    verification: Verification | None
    escalation: Annotated[list[str], add_unique]   # reasons; the turn is escalated when there is one
    references: list[Reference]
    reference_map: dict[str, int]
    must_not_miss: list[MustNotMissItem]   # beside the differential, whether or not the differential has them
    # bookkeeping
    warnings: Annotated[list[str], add_unique]
    events: Annotated[list[dict[str, Any]], add_events]
    # output
    result: Result


# Types the checkpointer may rebuild from a thread's checkpoints.
STATE_TYPES: tuple[type, ...] = (Extraction, Entity, Duration, RetrievalParams, Evidence, Candidate, Grade,
                                 Sentence, Draft, DifferentialItem, Verification, ClaimCheck, Reference,
                                 MustNotMissItem, ProposedDiagnosis, Disagreement)

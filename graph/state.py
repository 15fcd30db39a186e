"""Typed graph state. Values are plain JSON-able data (dicts/lists) so the SQLite checkpointer can keep
conversation threads; agents' pydantic models are rebuilt at the node boundary."""
from __future__ import annotations

from typing import Any, TypedDict


class RunState(TypedDict, total=False):
    # input
    message: str                 # this turn's text
    history: list[str]           # earlier turns of the thread (kept by the checkpointer)
    presentation: str            # what the agents see: history + message
    config: dict[str, Any]       # PipelineConfig.model_dump()
    # agents
    extraction: dict[str, Any]
    params: dict[str, Any]       # current retrieval parameters (widened by the corrective step)
    expansions: list[str]
    evidence: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    coverage: dict[str, list[str]]
    grade: dict[str, Any]
    attempts: int                # corrective attempts used (retrieval and verification share the budget)
    sentences: list[dict[str, Any]]
    draft: dict[str, Any]
    verification: dict[str, Any] | None
    escalation: dict[str, Any]   # {"escalated": bool, "reasons": [...]}
    references: list[dict[str, Any]]
    reference_map: dict[str, int]
    # bookkeeping
    warnings: list[str]
    events: list[dict[str, Any]]  # per node: name, ms, summary, llm calls (model, tokens, latency, prompts)

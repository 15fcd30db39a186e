"""The product API: ``ClinicalRAG.ask(presentation) -> result dict``, a thin caller of the compiled graph.

Everything a run does happens inside the graph (input check, status, escalation, LLM budget, audit record), so
``clinicalrag ask``, an API server and LangGraph's server (``langgraph.json``) get the same result for the same
input. This module adds only what a library caller wants on top: a SQLite checkpointer for conversation threads,
and :class:`InputError` raised for a message the graph rejected.
"""
from __future__ import annotations

import sqlite3
import threading
from typing import Any

from .config import PipelineConfig
from .context import Context, Resources
from .inputs import MAX_CHARS, InputError, check_presentation, normalise_presentation
from .state import STATE_TYPES
from .workflow import compile_graph, graph as _graph

Runtime = Resources
"""Former name of :class:`graph.context.Resources` (kept for existing callers)."""


def sqlite_checkpointer(path):
    """A SQLite checkpointer that rebuilds the state's own types (and only those beyond LangGraph's safe set)."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # noqa: PLC0415
    from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: PLC0415

    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False),
                       serde=JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES))


class ClinicalRAG:
    """``ask(presentation) -> result dict`` over shared :class:`Resources`."""

    def __init__(self, resources: Resources | None = None, checkpoint_path=None):
        self.resources = resources or Resources()
        self._checkpoint_path = checkpoint_path
        self._threaded = None
        self._lock = threading.Lock()

    @property
    def rt(self) -> Resources:
        """Former name of :attr:`resources`."""
        return self.resources

    def graph(self, threaded: bool):
        """The compiled graph: the process's one without persistence, or (for threads) one with this object's
        SQLite checkpointer, compiled on first use."""
        if not threaded:
            return _graph
        with self._lock:
            if self._threaded is None:
                from knowledge import paths  # noqa: PLC0415

                path = self._checkpoint_path or (paths.home() / "threads.sqlite")
                self._threaded = compile_graph(checkpointer=sqlite_checkpointer(path))
            return self._threaded

    def context(self, config: PipelineConfig | None = None, audit: bool = True) -> Context:
        return Context(config=config or PipelineConfig(), audit=audit, resources=self.resources)

    def run_config(self, cfg: PipelineConfig, thread_id: str | None) -> dict[str, Any]:
        # run name, tags and metadata also label the run in LangSmith when its tracing env vars are set
        out: dict[str, Any] = {"recursion_limit": cfg.recursion_limit, "run_name": "clinicalrag",
                               "tags": [cfg.mode], "metadata": {"config_hash": cfg.digest()}}
        if thread_id:
            out["configurable"] = {"thread_id": thread_id}
        return out

    def ask(self, presentation: Any, config: PipelineConfig | None = None, thread_id: str | None = None,
            audit: bool = True) -> dict[str, Any]:
        """The result of one turn; :class:`InputError` when the message cannot be processed."""
        cfg = config or PipelineConfig()
        out = self.graph(bool(thread_id)).invoke({"message": presentation}, self.run_config(cfg, thread_id),
                                                  context=self.context(cfg, audit))
        result = dict(out["result"])
        if result.get("status") == "rejected":
            raise InputError(result.get("error") or "the presentation cannot be processed")
        return result


__all__ = ["ClinicalRAG", "Resources", "Runtime", "Context", "InputError", "check_presentation",
           "normalise_presentation", "MAX_CHARS", "sqlite_checkpointer"]

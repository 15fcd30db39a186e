"""Entry point for LangGraph's own server / Studio (see langgraph.json): the process's compiled graph.

Input ``{"message": "..."}``; context (optional) ``{"config": {PipelineConfig fields}, "audit": true}``;
resources come from ``$CLINICALRAG_HOME`` and ``CLINICALRAG_LLM_*``. The server brings its own checkpointer."""
from __future__ import annotations

from graph.workflow import graph   # absolute: the server loads this file by its path


def make_graph(config=None):
    """The same compiled graph (kept for configurations that name a factory)."""
    return graph


__all__ = ["graph", "make_graph"]

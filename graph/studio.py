"""Entry point for LangGraph's own server / Studio (see langgraph.json): the compiled graph over a default
Runtime (knowledge from $CLINICALRAG_HOME, LLM from CLINICALRAG_LLM_* env). Input: {"message": "..."} and,
optionally, "config" with PipelineConfig fields."""
from __future__ import annotations

from .pipeline import Runtime
from .workflow import build_graph


def make_graph(config=None):
    return build_graph(Runtime())

"""Unit-test building blocks: real small objects, no data mirror, no knowledge graph, no index.

``resources`` is a real :class:`graph.context.Resources` without an LLM and without an embedder (the verifier
then uses its lexical and negation checks only); the tests never touch its KG or index. ``runtime(**cfg)`` is a
real :class:`langgraph.runtime.Runtime` whose context carries a :class:`PipelineConfig` built from ``cfg``.
``asthma`` is the hand-written turn of :mod:`asthma_case`.
"""
from __future__ import annotations

import pytest
from asthma_case import asthma_state
from langgraph.runtime import Runtime

from agents.llm import LLMConfig
from graph.config import PipelineConfig
from graph.context import Context, Resources


@pytest.fixture
def resources(tmp_path):
    return Resources(llm_config=LLMConfig(), audit_path=tmp_path / "audit.jsonl", embedder=None)


@pytest.fixture
def runtime(resources):
    def make(*, audit: bool = True, writer=None, **cfg) -> Runtime:
        ctx = Context(config=PipelineConfig(**cfg), audit=audit, resources=resources)
        return Runtime(context=ctx, stream_writer=writer) if writer else Runtime(context=ctx)
    return make


@pytest.fixture
def asthma() -> dict:
    return asthma_state()

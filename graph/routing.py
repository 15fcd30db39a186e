"""Routing: pure functions of the state and the run's configuration, typed with the nodes they can go to."""
from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from .context import Context, context_of
from .state import State


def route_intake(state: State, runtime: Runtime[Context]) -> Literal["mee", "direct", "finalize"]:
    if state.get("input_error"):
        return "finalize"
    return "direct" if context_of(runtime).config.mode == "direct" else "mee"


def route_grade(state: State, runtime: Runtime[Context]) -> Literal["knl", "correct", "escalate_retrieval"]:
    g = state.get("grade")
    if g is not None and g.sufficient:
        return "knl"
    if state.get("attempts", 0) < context_of(runtime).config.max_attempts:
        return "correct"
    return "escalate_retrieval"


def route_generate(state: State, runtime: Runtime[Context]) -> Literal["verify", "krg"]:
    return "verify" if context_of(runtime).config.use_verifier else "krg"


def route_verify(state: State, runtime: Runtime[Context]) -> Literal["krg", "correct", "escalate"]:
    v = state.get("verification")
    if v is not None and v.passed:
        return "krg"
    if state.get("escalation"):          # retrieval was already exhausted: don't loop again
        return "escalate"
    if state.get("attempts", 0) < context_of(runtime).config.max_attempts:
        return "correct"
    return "escalate"

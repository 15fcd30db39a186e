"""The routers alone: pure functions of the state and the run's configuration."""
from __future__ import annotations

import typing

import pytest

from agents.grader import Grade
from agents.types import Verification
from graph import routing

WEAK = Grade(sufficient=False, coverage=0.0, n_evidence=0, reasons=["only 0 evidence items (need 3)"])
GOOD = Grade(sufficient=True, coverage=1.0, n_evidence=5)


def test_route_intake(runtime):
    assert routing.route_intake({"input_error": "empty"}, runtime()) == "finalize"
    assert routing.route_intake({"input_error": "empty"}, runtime(mode="direct")) == "finalize"
    assert routing.route_intake({"input_error": None}, runtime(mode="direct")) == "direct"
    assert routing.route_intake({"input_error": None}, runtime()) == "mee"


@pytest.mark.parametrize("grade, attempts, max_attempts, to", [
    (GOOD, 0, 2, "knl"), (GOOD, 2, 2, "knl"), (WEAK, 0, 2, "correct"), (WEAK, 1, 2, "correct"),
    (WEAK, 2, 2, "escalate_retrieval"), (WEAK, 0, 0, "escalate_retrieval"), (None, 0, 2, "correct")])
def test_route_grade(runtime, grade, attempts, max_attempts, to):
    assert routing.route_grade({"grade": grade, "attempts": attempts}, runtime(max_attempts=max_attempts)) == to


def test_route_generate(runtime):
    assert routing.route_generate({}, runtime()) == "verify"
    assert routing.route_generate({}, runtime(use_verifier=False)) == "krg"


@pytest.mark.parametrize("passed, escalation, attempts, to", [
    (True, [], 0, "krg"), (True, ["retrieval: weak"], 2, "krg"),
    (False, [], 0, "correct"), (False, [], 1, "correct"), (False, [], 2, "escalate"),
    (False, ["retrieval: weak"], 0, "escalate")])   # retrieval already exhausted: no second loop
def test_route_verify(runtime, passed, escalation, attempts, to):
    state = {"verification": Verification(passed=passed), "escalation": escalation, "attempts": attempts}
    assert routing.route_verify(state, runtime(max_attempts=2)) == to


def test_routers_declare_their_targets():
    """The Literal return types are what LangGraph draws and checks; they name real nodes."""
    from graph.workflow import build

    names = set(build().nodes)
    for fn in (routing.route_intake, routing.route_grade, routing.route_generate, routing.route_verify):
        targets = typing.get_args(typing.get_type_hints(fn)["return"])
        assert targets and set(targets) <= names, fn.__name__

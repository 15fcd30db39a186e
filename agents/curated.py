"""What the curated tables of the agents share (``data/pain_sites.yaml``, ``data/classic_signs.yaml``): a KG concept
written with its name, a text field that must say something, reading a YAML file through its pydantic model with
errors that name the file, and the check that an id names the concept written beside it."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from knowledge.kg.normalize import normalise

M = TypeVar("M", bound=BaseModel)


# a denial earlier in the clause: "denies smoking", "no history of intravenous drug use", "never smoked",
# "does not drink", "a non-smoker"; "but", "however" end its reach ("never smoked but drinks heavily")
DENIED_BEFORE = re.compile(
    r"(?:\b(?:no|not|never|without|denies|denied|denying|negative\s+for|free\s+of|nor|quit\s+drinking|abstains?"
    r"|abstinent|stopped\s+drinking)\b(?:(?!\b(?:but|however|although|though|yet|and\s+(?:has|is|was|reports|admits|"
    r"uses|drinks|smokes))\b)[^.;:!?\n]){0,50}|\bnon-?)\Z", re.I)


def denied_before(before: str) -> bool:
    """The words right before a mention deny it for the patient (see ``DENIED_BEFORE``)."""
    return DENIED_BEFORE.search(before) is not None


class NamedConcept(BaseModel):
    """A KG concept as a curated file writes it: the id and the concept's KG name (checked against the graph)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str


def clean_text(v: str) -> str:
    """A text field with its whitespace normalised; empty is an error (a pydantic field validator's body)."""
    v = " ".join(v.split())
    if not v:
        raise ValueError("must not be empty")
    return v


def read_curated(path: Path, model: type[M], what: str, error: type[Exception],
                 ids: Callable[[M], Sequence[str]]) -> M:
    """The file at ``path`` read as ``model``; ``error`` ("<what>: …", naming the file) when it cannot be read, does
    not follow the format or uses an id twice (``ids``: the ids the file defines)."""
    try:
        data = model.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError) as exc:
        raise error(f"{what}: cannot read {path.name}: {exc}") from exc
    except ValidationError as exc:
        raise error(f"{what}: {path.name} does not follow the format: {exc}") from exc
    seen = list(ids(data))
    if len(set(seen)) != len(seen):
        raise error(f"{what}: an id is used twice in {path.name}")
    return data


def concept_problem(kg: Any, ref: NamedConcept, where: str) -> str | None:
    """Why ``ref`` does not check out against ``kg`` (missing, or named otherwise there), None when it does."""
    c = kg.concept(ref.id)
    if c is None:
        return f"{where}: {ref.id} ({ref.name}) is not in the knowledge graph"
    if normalise(c.name) != normalise(ref.name):
        return f"{where}: {ref.id} is named {c.name!r} in the knowledge graph, not {ref.name!r}"
    return None


def check_patterns(rows: Iterable[tuple[str, Sequence[str]]], what: str, error: type[Exception]) -> None:
    """``error`` ("<what>: <row id>: the pattern … does not compile") for the first pattern of the (row id,
    patterns) pairs that is no regular expression."""
    for rid, patterns in rows:
        for pat in patterns:
            try:
                re.compile(pat)
            except re.error as exc:
                raise error(f"{what}: {rid}: the pattern {pat!r} does not compile: {exc}") from exc


def union_pattern(patterns: Sequence[str]) -> re.Pattern:
    """The patterns as one case-insensitive expression starting on a word boundary."""
    return re.compile(r"\b(?:" + "|".join(f"(?:{p})" for p in patterns) + r")", re.I)


def resolve_concepts(kg: Any, refs: Sequence[NamedConcept], where: str, problems: list[str]) -> list[str]:
    """The ids of ``refs`` that ``kg`` holds (all of them without a graph); what does not check out is appended to
    ``problems``."""
    ok = []
    for ref in refs:
        problem = concept_problem(kg, ref, where) if kg is not None else None
        if problem:
            problems.append(problem)
        if kg is None or kg.concept(ref.id) is not None:
            ok.append(ref.id)
    return ok


def same_as(kg: Any, cid: str) -> set[str]:
    """``cid`` and the ids the graph holds as the same concept (its cross-references); ``{cid}`` without a graph."""
    return {cid, *kg.equivalents(cid)} if kg is not None else {cid}


def acquired_regions(kg: Any, cid: str) -> frozenset[str]:
    """The world regions where the disease ``cid`` (under any of its ids) is acquired: the graph's ``endemic_regions``
    (knowledge/kg/endemic_regions.yaml); empty for a disease acquired anywhere, or without a graph."""
    graph = getattr(kg, "graph", None)
    if graph is None:
        return frozenset()
    return frozenset(r for x in same_as(kg, cid) if x in graph for r in graph.nodes[x].get("endemic_regions") or ())


def with_ancestors(kg: Any, cid: str, depth: int) -> frozenset[str]:
    """``cid``, its cross-references and their is_a ancestors up to ``depth`` levels, each with its cross-references:
    what a curated row written for a broader concept matches."""
    own = same_as(kg, cid)
    keys = set(own)
    for x in own if kg is not None else ():
        for a in kg.ancestors(x, max_depth=depth):
            keys |= same_as(kg, a)
    return frozenset(keys)

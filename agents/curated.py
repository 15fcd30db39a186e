"""What the curated tables of the agents share (``data/pain_sites.yaml``, ``data/classic_signs.yaml``): a KG concept
written with its name, a text field that must say something, reading a YAML file through its pydantic model with
errors that name the file, and the check that an id names the concept written beside it."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from knowledge.kg.normalize import normalise

M = TypeVar("M", bound=BaseModel)


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

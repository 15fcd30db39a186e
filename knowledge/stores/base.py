"""The Store protocol: named collections of (id, vector, metadata)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np


@dataclass
class Hit:
    id: str
    score: float  # cosine similarity for dense search
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Store(Protocol):
    name: str

    def upsert(self, collection: str, ids: Sequence[str], vectors: np.ndarray,
               metadata: Sequence[dict[str, Any]]) -> None: ...

    def delete(self, collection: str, ids: Sequence[str]) -> None: ...

    def search(self, collection: str, vector: np.ndarray, k: int = 10,
               filters: dict[str, Any] | None = None, min_score: float | None = None) -> list[Hit]: ...

    def ids(self, collection: str) -> list[str]: ...

    def count(self, collection: str) -> int: ...

    def collections(self) -> list[str]: ...

    def flush(self) -> None: ...

"""Vector stores behind one protocol. Adding a backend = one module + one line in ``REGISTRY``."""
from __future__ import annotations

import importlib

from .base import Hit, Store

# name -> "module:Class". One line per backend.
REGISTRY: dict[str, str] = {
    "embedded": "knowledge.stores.embedded:EmbeddedStore",
}


def open_store(name: str, **kwargs) -> Store:
    try:
        target = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown store backend {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
    mod, cls = target.split(":")
    return getattr(importlib.import_module(mod), cls)(**kwargs)


__all__ = ["Hit", "Store", "REGISTRY", "open_store"]

"""Where the project keeps downloaded data and build artefacts.

Everything lives under one home directory, ``$CLINICALRAG_HOME`` (default
``~/.local/share/clinicalrag``):

- ``raw/<host>/<path>``: downloaded source files, at the path of their upstream URL
- ``build/``: build artefacts (knowledge graph, corpus, embedding cache, stores)
- ``traces/``: audit trail of runs
"""
from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def home() -> Path:
    env = os.environ.get("CLINICALRAG_HOME")
    base = Path(env).expanduser() if env else Path.home() / ".local" / "share" / "clinicalrag"
    return base


def raw_dir() -> Path:
    return home() / "raw"


def build_dir() -> Path:
    return home() / "build"


def trace_dir() -> Path:
    return home() / "traces"


def default_mirror() -> Path | None:
    """The mirror folder to read sources from, if any.

    ``$CLINICALRAG_DATA_MIRROR`` wins (an empty value disables mirror mode); otherwise
    ``../shared/data/mirror`` next to the current directory or next to the project checkout,
    when it exists.
    """
    env = os.environ.get("CLINICALRAG_DATA_MIRROR")
    if env is not None:
        return Path(env).expanduser() if env.strip() else None
    for base in (Path.cwd(), PROJECT_ROOT):
        cand = (base / ".." / "shared" / "data" / "mirror").resolve()
        if cand.is_dir():
            return cand
    return None

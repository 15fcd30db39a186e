"""Locating mirrored source files for tests (skips with a clear reason when no mirror is configured)."""
from __future__ import annotations

from pathlib import Path

import pytest

from knowledge import paths, sources


def mirror_file(source_id: str) -> Path:
    m = paths.default_mirror()
    if m is None:
        pytest.skip("no data mirror configured (set CLINICALRAG_DATA_MIRROR)")
    p = m / sources.get(source_id).host_path
    if not p.is_file():
        pytest.skip(f"mirror {m} lacks {source_id}")
    return p

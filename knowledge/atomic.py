"""Atomic files and folders: readers see the old version or the new one, never half of one.

- :func:`writing` — a file written to a temporary name in the same folder and renamed over the target.
- :func:`building` — a folder built under a temporary name next to the target and swapped in by rename (the old
  folder is moved aside first and removed after; restored if the swap fails). ``keep_existing=True`` is for caches
  that any process may fill: when the target appeared meanwhile, the new copy is dropped.
- :func:`file_sha256` — a file's sha256, read in blocks.
- :func:`new_tmp_dir` / :func:`swap_in` — the two halves of :func:`building`, for long builds that manage their own
  error handling. Work folders are named ``.<name>.tmp-<pid>-<random>``, so a later build can tell a folder left by
  a killed process (its pid is gone) from one still being written.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


def new_tmp_dir(final: Path) -> Path:
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    return tmp


def swap_in(tmp: Path, final: Path, keep_existing: bool = False) -> Path:
    """Put the folder ``tmp`` in the place of ``final``. With ``keep_existing``, an existing ``final`` wins and
    ``tmp`` is removed."""
    final = Path(final)
    if keep_existing and final.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return final
    old = None
    if final.exists():
        old = final.parent / f".{final.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except OSError:
        if old is not None:
            os.replace(old, final)
        if keep_existing and final.exists():      # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
            return final
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return final


@contextmanager
def building(final: Path, keep_existing: bool = False) -> Iterator[Path]:
    """``with building(path) as tmp:`` fill ``tmp``; on success it becomes ``path``, on error it is removed."""
    tmp = new_tmp_dir(final)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    swap_in(tmp, final, keep_existing=keep_existing)


@contextmanager
def writing(path: Path, mode: str = "wb", encoding: str | None = None) -> Iterator[IO]:
    """``with writing(path, "w", "utf-8") as fh:`` the file appears under ``path`` only once complete."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

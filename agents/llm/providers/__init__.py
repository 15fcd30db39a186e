"""LLM providers: a name on the command line (``--llm local``) that yields where to send requests.

A provider is one module here with ``provide(options: ProviderOptions) -> Provided`` plus one line in
:data:`PROVIDERS` (optionally ``prepare(options) -> str``: the slow first-use work, such as a download, without
starting anything). It may do work first (assemble a model file, start a server) and returns the endpoint: the
base URL and model name (always used), and defaults for the other :class:`~agents.llm.LLMConfig` settings (used
unless the user set them in a file, the environment or a flag). Explicit ``--llm-base-url/--llm-model`` need no
provider: they name any OpenAI-compatible endpoint.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.llm.config import LLMConfig

PROVIDERS: dict[str, str] = {
    "local": "agents.llm.providers.local",   # llama.cpp on loopback serving a GGUF (assembled from PyPI if missing)
}


class ProviderError(RuntimeError):
    """A provider cannot give an endpoint (unknown name, missing software or model file, a server that won't start)."""


@dataclass(frozen=True)
class ProviderOptions:
    """What the user asked of a provider; ``None``: the provider's default (or its environment variable)."""

    model_path: Path | str | None = None   # a model file to serve (local providers)
    threads: int | None = None
    n_ctx: int | None = None
    progress: bool = True                   # progress bars for long first-use work (downloads)


@dataclass(frozen=True)
class Provided:
    """An endpoint from a provider."""

    base_url: str
    model: str
    api_key: str = "not-needed"
    defaults: dict[str, Any] = field(default_factory=dict)   # LLMConfig settings unless the user set them
    note: str = ""                                             # one line for the user (what runs where)
    details: dict[str, Any] = field(default_factory=dict)     # e.g. the server's pid, port and log

    def apply(self, cfg: LLMConfig) -> LLMConfig:
        """``cfg`` pointed at this endpoint: base URL, model and key replaced, the defaults filling unset
        settings."""
        data = cfg.model_dump(exclude_unset=True)
        for k, v in self.defaults.items():
            data.setdefault(k, v)
        data.update(base_url=self.base_url, model=self.model, api_key=self.api_key)
        return LLMConfig(**data)


def names() -> list[str]:
    return sorted(PROVIDERS)


def _module(name: str):
    target = PROVIDERS.get(name)
    if target is None:
        raise ProviderError(f"unknown LLM provider {name!r}: choose from {', '.join(names())}")
    return importlib.import_module(target)


def provide(name: str, options: ProviderOptions | None = None) -> Provided:
    """The endpoint of provider ``name`` (which may start it)."""
    return _module(name).provide(options or ProviderOptions())


def prepare(name: str, options: ProviderOptions | None = None) -> str:
    """Do provider ``name``'s first-use work ahead of time (e.g. assemble a model file); a line saying what is
    ready ("" when the provider has nothing to prepare)."""
    fn = getattr(_module(name), "prepare", None)
    return fn(options or ProviderOptions()) if fn is not None else ""


__all__ = ["PROVIDERS", "Provided", "ProviderError", "ProviderOptions", "names", "prepare", "provide"]

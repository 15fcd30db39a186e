"""Where and how to call the model: :class:`LLMConfig` and :func:`load_llm_config`.

Precedence, highest first:

1. explicit overrides (CLI flags), ``None`` values ignored;
2. environment: ``CLINICALRAG_LLM_BASE_URL``, ``_API_KEY``, ``_MODEL``, ``_TEMPERATURE``,
   ``_TIMEOUT``, ``_MAX_RETRIES``, ``_BACKOFF``, ``_MAX_TOKENS``, ``_SEED``, ``_JSON_MODE``
   (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL`` are read when the project's own
   variables are unset);
3. a TOML or YAML file (keys at the top level or under an ``llm`` table); the path comes from the
   caller or ``$CLINICALRAG_LLM_CONFIG``;
4. defaults.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

JsonMode = Literal["auto", "json_schema", "json_object", "none"]

ENV_PREFIX = "CLINICALRAG_LLM_"


class LLMConfig(BaseModel):
    """Where and how to call the model. ``enabled`` is false without a base_url and a model."""

    base_url: str | None = None
    api_key: str = "not-needed"
    model: str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    timeout: float = Field(default=60.0, gt=0.0)
    max_retries: int = Field(default=2, ge=0, le=10)
    backoff: float = Field(default=0.5, ge=0.0)
    max_tokens: int = Field(default=512, ge=1)
    seed: int | None = None
    json_mode: JsonMode = "auto"
    cache_path: str | None = None      # a SQLite response cache (same request -> stored answer, no call)

    @field_validator("base_url", "model", mode="before")
    @classmethod
    def _blank_is_none(cls, v: Any) -> Any:
        if isinstance(v, str) and not v.strip():
            return None
        return v.strip() if isinstance(v, str) else v

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.model)

    @property
    def endpoint_key(self) -> str:
        return f"{(self.base_url or '').rstrip('/')}|{self.model or ''}"

    @classmethod
    def from_env(cls, prefix: str = ENV_PREFIX, environ: dict[str, str] | None = None) -> "LLMConfig":
        """A config from environment variables only (defaults for the rest)."""
        return cls(**_env_values(prefix, environ))

    def public_dict(self) -> dict[str, Any]:
        """The config without the API key (for traces and logs)."""
        d = self.model_dump()
        d["api_key"] = "***" if self.api_key and self.api_key != "not-needed" else self.api_key
        return d


_ENV_FIELDS = ("base_url", "api_key", "model", "temperature", "timeout", "max_retries", "backoff",
               "max_tokens", "seed", "json_mode", "cache_path")
_OPENAI_FALLBACK = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY", "model": "OPENAI_MODEL"}


def _env_values(prefix: str = ENV_PREFIX, environ: dict[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for name in _ENV_FIELDS:
        val = env.get(prefix + name.upper())
        if (val is None or val == "") and name in _OPENAI_FALLBACK:
            val = env.get(_OPENAI_FALLBACK[name])
        if val is not None and val != "":
            out[name] = val
    return out


def _read_config_file(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"LLM config file not found: {path}")
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            import tomllib  # noqa: PLC0415

            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml  # noqa: PLC0415

            data = yaml.safe_load(text) or {}
        else:
            raise ValueError(f"LLM config file must be .toml, .yaml or .yml: {path}")
    except ValueError:
        raise
    except Exception as exc:  # tomllib.TOMLDecodeError, yaml.YAMLError
        raise ValueError(f"cannot parse LLM config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"LLM config file {path} must hold a table/mapping")
    if isinstance(data.get("llm"), dict):
        data = data["llm"]
    unknown = sorted(set(data) - set(LLMConfig.model_fields))
    if unknown:
        raise ValueError(f"unknown keys in LLM config file {path}: {', '.join(unknown)}")
    return dict(data)


def load_llm_config(cli_overrides: dict[str, Any] | None = None, config_file: Path | str | None = None,
                    environ: dict[str, str] | None = None) -> LLMConfig:
    """Merge defaults < config file < environment < CLI overrides (``None`` overrides ignored)."""
    env = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    file_path = config_file or env.get(ENV_PREFIX + "CONFIG") or None
    if file_path:
        merged.update(_read_config_file(Path(file_path)))
    merged.update(_env_values(ENV_PREFIX, env))
    for k, v in (cli_overrides or {}).items():
        if v is None:
            continue
        if k not in LLMConfig.model_fields:
            raise ValueError(f"unknown LLM setting: {k}")
        merged[k] = v
    return LLMConfig(**merged)


__all__ = ["ENV_PREFIX", "JsonMode", "LLMConfig", "load_llm_config"]

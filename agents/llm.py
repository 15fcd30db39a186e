"""One LLM client for every agent, over any OpenAI-compatible chat-completions endpoint.

The endpoint can be a hosted API or a local server (llama.cpp's ``llama_cpp.server``, vLLM,
Ollama, LM Studio, ...). Nothing here is required: when no endpoint is configured
(:attr:`LLMConfig.enabled` is false) every agent takes its deterministic path.

Configuration (:func:`load_llm_config`), highest precedence first:

1. explicit overrides (CLI flags), ``None`` values ignored;
2. environment: ``CLINICALRAG_LLM_BASE_URL``, ``_API_KEY``, ``_MODEL``, ``_TEMPERATURE``,
   ``_TIMEOUT``, ``_MAX_RETRIES``, ``_BACKOFF``, ``_MAX_TOKENS``, ``_SEED``, ``_JSON_MODE``
   (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL`` are read when the project's own
   variables are unset);
3. a TOML or YAML file (keys at the top level or under an ``llm`` table); the path comes from the
   caller or ``$CLINICALRAG_LLM_CONFIG``;
4. defaults.

Behaviour:

- :meth:`LLMClient.chat` never raises on transport or server errors (unless ``raise_on_error``):
  :attr:`LLMResult.error` holds a short reason ("connection refused", "timeout after 5.0s",
  "HTTP 500: ...") so agents can fall back and record a warning.
- Retries with exponential backoff (``backoff * 2**k``) on timeouts, connection errors, HTTP 429
  and 5xx; never on other 4xx, and never when the server rejected the ``response_format``.
- :meth:`LLMClient.structured` asks for JSON matching a pydantic model. Ladder of modes:
  ``json_schema`` (OpenAI structured outputs) -> ``json_object_schema`` (``{"type":
  "json_object", "schema": ...}``, the extension llama.cpp and others turn into a grammar) ->
  ``json_object`` (plain JSON mode) -> ``text`` (free text, first JSON object extracted). A mode
  the server rejects (HTTP 400/422, or any error that names ``response_format``) moves one rung
  down; the mode that worked is remembered per endpoint (base_url + model) for the process.
  A reply that is not valid JSON or fails validation gets ONE repair call.
- Accounting: :attr:`LLMClient.usage` (aggregate) and :attr:`LLMClient.log` (one
  :class:`CallRecord` per HTTP exchange, labelled by the caller's ``tag=``) for the tracer.
"""
from __future__ import annotations

import json
import os
import re
import string
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator

JsonMode = Literal["auto", "json_schema", "json_object", "none"]
StructuredMode = Literal["json_schema", "json_object_schema", "json_object", "text"]

ENV_PREFIX = "CLINICALRAG_LLM_"
_LADDER: tuple[StructuredMode, ...] = ("json_schema", "json_object_schema", "json_object", "text")
_START: dict[str, StructuredMode] = {
    "auto": "json_schema",
    "json_schema": "json_schema",
    "json_object": "json_object_schema",
    "none": "text",
}


# --------------------------------------------------------------------------------------------
# configuration


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
               "max_tokens", "seed", "json_mode")
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


# --------------------------------------------------------------------------------------------
# results and accounting


class LLMResult(BaseModel):
    """The outcome of one logical chat call (possibly several HTTP attempts)."""

    text: str = ""
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False      # true when the server sent no usage and we counted locally
    latency_s: float = 0.0
    attempts: int = 0
    finish_reason: str | None = None
    error: str | None = None
    status_code: int | None = None
    rejected_format: bool = False      # the server refused the requested response_format

    @property
    def ok(self) -> bool:
        return self.error is None


class CallRecord(BaseModel):
    """One entry of :attr:`LLMClient.log` (what the graph tracer reads)."""

    tag: str | None = None
    model: str | None = None
    mode: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    finish_reason: str | None = None
    error: str | None = None
    ts: float = Field(default_factory=time.time)


class Usage(BaseModel):
    calls: int = 0
    attempts: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


T = TypeVar("T", bound=BaseModel)


@dataclass
class StructuredResult(Generic[T]):
    """The outcome of :meth:`LLMClient.structured`."""

    value: T | None = None
    raw: str = ""
    mode: str | None = None
    repaired: bool = False
    calls: list[LLMResult] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None and self.error is None

    @property
    def latency_s(self) -> float:
        return sum(c.latency_s for c in self.calls)


class LLMError(RuntimeError):
    """Raised only when a caller passes ``raise_on_error=True``."""


# --------------------------------------------------------------------------------------------
# JSON extraction

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """The first JSON object in ``text`` (code fences and surrounding prose tolerated).

    Raises ``ValueError("malformed JSON: ...")`` when there is none.
    """
    if text is None or not text.strip():
        raise ValueError("malformed JSON: empty reply")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    first_err: str | None = None
    dec = json.JSONDecoder()
    for cand in candidates:
        s = cand.strip()
        try:
            obj = json.loads(s)
            if isinstance(obj, dict):
                return obj
        except json.JSONDecodeError as exc:
            first_err = first_err or f"{exc.msg} at char {exc.pos}"
        for m in re.finditer(r"\{", s):
            try:
                obj, _ = dec.raw_decode(s, m.start())
            except json.JSONDecodeError as exc:
                first_err = first_err or f"{exc.msg} at char {exc.pos}"
                continue
            if isinstance(obj, dict):
                return obj
    raise ValueError(f"malformed JSON: {first_err or 'no JSON object in reply'}")


def _short(msg: str, n: int = 200) -> str:
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= n else msg[: n - 1] + "…"


def _validation_summary(exc: ValidationError, n: int = 6) -> str:
    parts = []
    for e in exc.errors()[:n]:
        loc = ".".join(str(x) for x in e.get("loc", ())) or "<root>"
        parts.append(f"{loc}: {e.get('msg')}")
    more = len(exc.errors()) - n
    return "; ".join(parts) + (f"; (+{more} more)" if more > 0 else "")


# --------------------------------------------------------------------------------------------
# prompts


def load_prompt(name: str, /, **values: Any) -> str:
    """The text of ``agents/prompts/<name>.txt`` (package data), placeholders filled from ``values``.

    Substitution uses ``string.Template`` (``$name`` / ``${name}``), so braces in prompts (JSON
    examples) need no escaping; ``$$`` is a literal ``$``. Without ``values`` the raw text is
    returned; with ``values``, a placeholder left without a value raises ``KeyError`` naming it.
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise ValueError(f"invalid prompt name: {name!r}")
    from importlib.resources import files  # noqa: PLC0415

    res = files("agents").joinpath("prompts", f"{name}.txt")
    if not res.is_file():
        raise FileNotFoundError(f"prompt not found: agents/prompts/{name}.txt")
    text = res.read_text(encoding="utf-8")
    if not values:
        return text
    try:
        return string.Template(text).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise KeyError(f"prompt {name!r} needs a value for ${exc.args[0]}") from None
    except ValueError as exc:  # a stray "$" in the prompt file
        raise ValueError(f"prompt {name!r}: {exc}") from None


render_prompt = load_prompt


# --------------------------------------------------------------------------------------------
# client

# per-endpoint memory of the structured mode that worked (process-wide, shared by clients)
_MODE_CACHE: dict[str, StructuredMode] = {}
_MODE_LOCK = threading.Lock()


def _is_format_rejection(status: int | None, message: str) -> bool:
    m = message.lower()
    names_format = "response_format" in m or "json_schema" in m or "response format" in m
    if status in (400, 422):
        return True
    # some servers (llama_cpp.server) answer a request-validation error with HTTP 500
    return names_format


def _schema_name(schema: type[BaseModel]) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64]
    return name or "Response"


class LLMClient:
    """A small, accountable client over one OpenAI-compatible endpoint."""

    def __init__(self, config: LLMConfig | None = None):
        self.config = config or load_llm_config()
        self.usage = Usage()
        self.log: list[CallRecord] = []
        self._lock = threading.Lock()
        self._client = None
        self._server_tokenizer: bool | None = None

    # -- plumbing -------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.config.enabled

    def _openai(self, timeout: float):
        if self._client is None:
            import openai  # noqa: PLC0415

            self._client = openai.OpenAI(base_url=self.config.base_url, api_key=self.config.api_key or "not-needed",
                                         timeout=self.config.timeout, max_retries=0)
        return self._client if timeout == self.config.timeout else self._client.with_options(timeout=timeout)

    def _record(self, res: LLMResult, tag: str | None, mode: str | None) -> None:
        with self._lock:
            self.usage.calls += 1
            self.usage.attempts += res.attempts
            self.usage.errors += int(res.error is not None)
            self.usage.prompt_tokens += res.prompt_tokens
            self.usage.completion_tokens += res.completion_tokens
            self.usage.latency_s += res.latency_s
            self.log.append(CallRecord(tag=tag, model=res.model, mode=mode, prompt_tokens=res.prompt_tokens,
                                       completion_tokens=res.completion_tokens, latency_s=res.latency_s,
                                       attempts=res.attempts, finish_reason=res.finish_reason, error=res.error))

    def calls_since(self, index: int) -> list[CallRecord]:
        """Log entries from position ``index`` on (a tracer keeps ``len(client.log)`` before a node)."""
        with self._lock:
            return list(self.log[index:])

    def reset_usage(self) -> None:
        with self._lock:
            self.usage = Usage()
            self.log.clear()

    # -- error classification -------------------------------------------------------------------
    def _classify(self, exc: Exception, timeout: float) -> tuple[str, bool, int | None, bool]:
        """(short reason, retryable, status code, response_format rejected)."""
        import openai  # noqa: PLC0415

        if isinstance(exc, openai.APITimeoutError):
            return f"timeout after {timeout:g}s", True, None, False
        if isinstance(exc, openai.APIConnectionError):
            cause: BaseException | None = exc
            text = ""
            while cause is not None:
                text += f" {type(cause).__name__} {cause}"
                if isinstance(cause, ConnectionRefusedError):
                    return "connection refused", True, None, False
                cause = cause.__cause__ or cause.__context__
            if "refused" in text.lower():
                return "connection refused", True, None, False
            return _short(f"connection error: {text.strip() or exc}"), True, None, False
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            msg = _error_message(getattr(exc, "body", None)) or str(exc.message or "")
            rejected = _is_format_rejection(status, msg)
            retryable = (status == 429 or status >= 500) and not rejected
            reason = f"HTTP {status}" + (f": {_short(msg, 160)}" if msg else "")
            return reason, retryable, status, rejected
        if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError):
            return _short(f"invalid response from server: {exc}"), False, None, False
        return _short(f"{type(exc).__name__}: {exc}"), False, None, False

    # -- chat -----------------------------------------------------------------------------------
    def chat(self, messages: list[dict[str, Any]], *, tag: str | None = None, raise_on_error: bool = False,
             response_format: dict[str, Any] | None = None, _mode: str | None = None, **overrides: Any) -> LLMResult:
        """One chat completion. ``overrides``: temperature, max_tokens, seed, timeout, max_retries,
        backoff, model, stop. Errors come back in :attr:`LLMResult.error`."""
        cfg = self.config
        model = overrides.pop("model", None) or cfg.model
        timeout = float(overrides.pop("timeout", None) or cfg.timeout)
        max_retries = int(overrides.pop("max_retries", cfg.max_retries))
        backoff = float(overrides.pop("backoff", cfg.backoff))
        if not cfg.enabled:
            res = LLMResult(model=model, error="LLM disabled: no base_url/model configured")
            if raise_on_error:
                raise LLMError(res.error)
            return res
        params: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": overrides.pop("temperature", cfg.temperature),
            "max_tokens": overrides.pop("max_tokens", cfg.max_tokens),
        }
        seed = overrides.pop("seed", cfg.seed)
        if seed is not None:
            params["seed"] = seed
        if response_format is not None:
            params["response_format"] = response_format
        params.update({k: v for k, v in overrides.items() if v is not None})

        client = self._openai(timeout)
        res = LLMResult(model=model)
        t0 = time.perf_counter()
        for attempt in range(1, max_retries + 2):
            res.attempts = attempt
            try:
                resp = client.chat.completions.create(**params)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a short reason
                reason, retryable, status, rejected = self._classify(exc, timeout)
                rejected = rejected and response_format is not None
                res.error, res.status_code, res.rejected_format = reason, status, rejected
                if retryable and attempt <= max_retries:
                    time.sleep(backoff * (2 ** (attempt - 1)))
                    continue
                break
            else:
                res.error = None
                res.status_code = 200
                choices = getattr(resp, "choices", None) or []
                if not choices:
                    res.error = "invalid response from server: no choices"
                    break
                ch = choices[0]
                msg = getattr(ch, "message", None)
                res.text = (getattr(msg, "content", None) or "") if msg is not None else ""
                res.finish_reason = getattr(ch, "finish_reason", None)
                res.model = getattr(resp, "model", None) or model
                usage = getattr(resp, "usage", None)
                if usage is not None and (usage.prompt_tokens or usage.completion_tokens):
                    res.prompt_tokens = int(usage.prompt_tokens or 0)
                    res.completion_tokens = int(usage.completion_tokens or 0)
                else:
                    res.usage_estimated = True
                    res.prompt_tokens = self.count_prompt_tokens(messages)
                    from knowledge.tokens import count_tokens  # noqa: PLC0415

                    res.completion_tokens = count_tokens(res.text)
                break
        res.latency_s = time.perf_counter() - t0
        self._record(res, tag, _mode)
        if raise_on_error and res.error:
            raise LLMError(res.error)
        return res

    # -- structured -----------------------------------------------------------------------------
    def preferred_mode(self) -> StructuredMode:
        """The structured mode to start with for this endpoint (remembered or from config)."""
        with _MODE_LOCK:
            cached = _MODE_CACHE.get(self.config.endpoint_key)
        start = _START[self.config.json_mode]
        if cached and self.config.json_mode == "auto":
            return cached
        return start

    def _modes(self) -> list[StructuredMode]:
        first = self.preferred_mode()
        if self.config.json_mode == "auto":
            return list(_LADDER[_LADDER.index(first):])
        if self.config.json_mode == "json_object":
            return ["json_object_schema", "json_object"]
        return [first]

    @staticmethod
    def _with_schema_instruction(messages: list[dict[str, Any]], schema_json: str, mode: str) -> list[dict[str, Any]]:
        note = ("Reply with a single JSON object only, no prose and no code fences."
                if mode == "json_schema" else
                "Reply with a single JSON object only, no prose and no code fences. "
                f"It must match this JSON Schema:\n{schema_json}")
        msgs = [dict(m) for m in messages]
        if msgs and msgs[0].get("role") == "system" and isinstance(msgs[0].get("content"), str):
            msgs[0]["content"] = msgs[0]["content"].rstrip() + "\n\n" + note
        else:
            msgs.insert(0, {"role": "system", "content": note})
        return msgs

    def structured(self, messages: list[dict[str, Any]], schema: type[T], *, tag: str | None = None,
                   strict: bool = False, repair: bool = True, raise_on_error: bool = False,
                   **overrides: Any) -> StructuredResult[T]:
        """Ask for a JSON object matching ``schema``; parse and validate it (one repair call at most)."""
        out: StructuredResult[T] = StructuredResult()
        if not self.config.enabled:
            out.error = "LLM disabled: no base_url/model configured"
            if raise_on_error:
                raise LLMError(out.error)
            return out
        json_schema = schema.model_json_schema()
        schema_json = json.dumps(json_schema, separators=(",", ":"))
        name = _schema_name(schema)
        formats: dict[str, dict[str, Any] | None] = {
            "json_schema": {"type": "json_schema",
                            "json_schema": {"name": name, "schema": json_schema, "strict": strict}},
            "json_object_schema": {"type": "json_object", "schema": json_schema},
            "json_object": {"type": "json_object"},
            "text": None,
        }
        res: LLMResult | None = None
        used_msgs: list[dict[str, Any]] = messages
        for mode in self._modes():
            used_msgs = self._with_schema_instruction(messages, schema_json, mode)
            res = self.chat(used_msgs, tag=tag, response_format=formats[mode], _mode=mode, **dict(overrides))
            out.calls.append(res)
            if res.error and res.rejected_format:
                continue           # server refused this response_format: next rung
            out.mode = mode
            break
        assert res is not None
        if res.error:
            out.error = res.error if not res.rejected_format else f"no structured mode accepted: {res.error}"
            if raise_on_error:
                raise LLMError(out.error)
            return out
        if self.config.json_mode == "auto":
            with _MODE_LOCK:
                _MODE_CACHE[self.config.endpoint_key] = out.mode  # type: ignore[assignment]

        out.raw = res.text
        value, problem = self._parse(res, schema)
        if value is None and repair:
            fix = used_msgs + [
                {"role": "assistant", "content": res.text},
                {"role": "user", "content": (
                    f"Your reply could not be used: {problem}. Reply again with only the corrected JSON "
                    f"object matching the schema, nothing else.")},
            ]
            res2 = self.chat(fix, tag=tag, response_format=formats[out.mode], _mode=f"{out.mode}+repair",
                             **dict(overrides))
            out.calls.append(res2)
            out.repaired = True
            if res2.error:
                problem = f"{problem}; repair call failed: {res2.error}"
            else:
                out.raw = res2.text
                value, problem2 = self._parse(res2, schema)
                if value is None:
                    problem = f"{problem2} (after one repair)"
        out.value = value
        out.error = None if value is not None else problem
        if raise_on_error and out.error:
            raise LLMError(out.error)
        return out

    @staticmethod
    def _parse(res: LLMResult, schema: type[T]) -> tuple[T | None, str | None]:
        try:
            obj = extract_json(res.text)
        except ValueError as exc:
            msg = str(exc)
            if res.finish_reason == "length":
                msg += " (reply truncated at max_tokens)"
            return None, _short(msg)
        try:
            return schema.model_validate(obj), None
        except ValidationError as exc:
            return None, _short("schema validation failed: " + _validation_summary(exc), 400)

    # -- tokens -----------------------------------------------------------------------------------
    def count_prompt_tokens(self, messages: list[dict[str, Any]], *, use_server: bool = False) -> int:
        """Tokens of the messages' text.

        Default: the project's tokenizer (:func:`knowledge.tokens.count_tokens`) over the joined
        message contents — the same count everywhere, independent of the endpoint; an
        approximation of what the model sees (chat-template tokens are not counted).
        ``use_server=True``: the endpoint's own tokenizer through llama.cpp's
        ``POST /extras/tokenize/count`` when it offers it (falls back to the local count).
        """
        text = "\n".join(_content_text(m.get("content")) for m in messages)
        if use_server and self.config.enabled and self._server_tokenizer is not False:
            n = self._server_count(text)
            if n is not None:
                return n
        from knowledge.tokens import count_tokens  # noqa: PLC0415

        return count_tokens(text)

    def _server_count(self, text: str) -> int | None:
        import httpx  # noqa: PLC0415  (installed with openai)

        root = re.sub(r"/v1/?$", "", (self.config.base_url or "").rstrip("/"))
        try:
            r = httpx.post(f"{root}/extras/tokenize/count", json={"input": text, "model": self.config.model},
                           headers={"Authorization": f"Bearer {self.config.api_key}"},
                           timeout=min(self.config.timeout, 10.0))
            if r.status_code == 200 and isinstance(r.json().get("count"), int):
                self._server_tokenizer = True
                return int(r.json()["count"])
        except Exception:  # noqa: BLE001 - unsupported endpoint -> local count
            pass
        self._server_tokenizer = False
        return None


def _error_message(body: Any) -> str:
    """The human message of an error body (OpenAI ``{"error": {"message": ...}}``, FastAPI ``detail``)."""
    if isinstance(body, dict):
        if "error" in body:
            return _error_message(body["error"])
        for key in ("message", "detail", "msg"):
            if key in body:
                v = body[key]
                return v if isinstance(v, str) else json.dumps(v)[:400]
        return json.dumps(body)[:400]
    if isinstance(body, list):
        return json.dumps(body)[:400]
    return "" if body is None else str(body)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def forget_endpoint_modes() -> None:
    """Clear the remembered structured modes (tests, or after switching servers)."""
    with _MODE_LOCK:
        _MODE_CACHE.clear()

"""One LLM client for every agent, over any OpenAI-compatible chat-completions endpoint.

The endpoint can be a hosted API or a local server (llama.cpp's ``llama_cpp.server``, vLLM,
Ollama, LM Studio, ...). Nothing here is required: when no endpoint is configured
(:attr:`LLMConfig.enabled` is false) every agent takes its deterministic path.

Behaviour:

- :meth:`LLMClient.chat` never raises on transport or server errors (unless ``raise_on_error``):
  :attr:`LLMResult.error` holds a short reason ("connection refused", "timeout after 5.0s",
  "HTTP 500: ...") so agents can fall back and record a warning.
- Retries with exponential backoff (``backoff * 2**k``) on timeouts, connection errors, HTTP 429
  and 5xx; never on other 4xx, and never when the server rejected the ``response_format``.
- :meth:`LLMClient.structured` asks for JSON matching a pydantic model (:mod:`agents.llm.structured`).
- Accounting: :attr:`LLMClient.usage` (aggregate) and :attr:`LLMClient.log` (one
  :class:`CallRecord` per logical chat call, labelled by the caller's ``tag=``) for the tracer.
"""
from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

from .config import LLMConfig, load_llm_config
from .results import CallRecord, LLMError, LLMResult, Usage
from .structured import StructuredMode, StructuredResult, T, preferred_mode, run_structured, short as _short


def _is_format_rejection(status: int | None, message: str) -> bool:
    m = message.lower()
    names_format = "response_format" in m or "json_schema" in m or "response format" in m
    if status in (400, 422):
        return True
    # some servers (llama_cpp.server) answer a request-validation error with HTTP 500
    return names_format


class LLMClient:
    """A small, accountable client over one OpenAI-compatible endpoint."""

    def __init__(self, config: LLMConfig | None = None):
        self.config = config or load_llm_config()
        self.usage = Usage()
        self.log: list[CallRecord] = []
        self._lock = threading.Lock()
        self._client = None
        self._server_tokenizer: bool | None = None
        self.cache = None
        if self.config.cache_path:
            from .cache import ResponseCache  # noqa: PLC0415

            self.cache = ResponseCache(self.config.cache_path)

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
            self.usage.add(res)
            self.log.append(CallRecord.of(res, tag, mode))

    def calls_since(self, index: int) -> list[CallRecord]:
        """Log entries from position ``index`` on (a tracer keeps ``len(client.log)`` before a node)."""
        with self._lock:
            return list(self.log[index:])

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
        if self.cache is not None:
            hit = self.cache.get(params)
            if hit is not None:
                res = LLMResult(model=hit["model"] or model, text=hit["text"], prompt_tokens=hit["prompt_tokens"],
                                completion_tokens=hit["completion_tokens"], finish_reason=hit["finish_reason"],
                                status_code=200, attempts=0, cached=True)
                self._record(res, tag, _mode)
                return res

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
        if self.cache is not None and res.error is None:
            self.cache.put(params, res.model_dump())
        self._record(res, tag, _mode)
        if raise_on_error and res.error:
            raise LLMError(res.error)
        return res

    # -- structured -----------------------------------------------------------------------------
    def preferred_mode(self) -> StructuredMode:
        """The structured mode to start with for this endpoint (remembered or from config)."""
        return preferred_mode(self.config)

    def structured(self, messages: list[dict[str, Any]], schema: type[T], *, tag: str | None = None,
                   strict: bool = False, repair: bool = True, raise_on_error: bool = False,
                   **overrides: Any) -> StructuredResult[T]:
        """Ask for a JSON object matching ``schema``; parse and validate it (one repair call at most)."""
        return run_structured(self.chat, self.config, messages, schema, tag=tag, strict=strict, repair=repair,
                              raise_on_error=raise_on_error, **overrides)

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


__all__ = ["LLMClient"]

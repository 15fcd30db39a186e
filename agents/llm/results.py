"""What an LLM call returns and how it is accounted: :class:`LLMResult`, :class:`CallRecord`, :class:`Usage`."""
from __future__ import annotations

import time

from pydantic import BaseModel, Field


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
    cached: bool = False               # answered from the response cache (no call made)

    @property
    def ok(self) -> bool:
        return self.error is None


class CallRecord(BaseModel):
    """One logical chat call as the tracer reads it (:attr:`LLMClient.log`, :attr:`LLMBudget.calls`)."""

    tag: str | None = None
    model: str | None = None
    mode: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    finish_reason: str | None = None
    error: str | None = None
    rejected_format: bool = False      # the server refused the response_format: the next rung was tried
    cached: bool = False
    ts: float = Field(default_factory=time.time)

    @classmethod
    def of(cls, res: LLMResult, tag: str | None, mode: str | None) -> "CallRecord":
        return cls(tag=tag, model=res.model, mode=mode, prompt_tokens=res.prompt_tokens,
                   completion_tokens=res.completion_tokens, latency_s=res.latency_s, attempts=res.attempts,
                   finish_reason=res.finish_reason, error=res.error, rejected_format=res.rejected_format,
                   cached=res.cached)


class Usage(BaseModel):
    calls: int = 0
    attempts: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: int = 0

    def add(self, res: LLMResult) -> None:
        self.calls += 1
        self.cached += int(res.cached)
        self.attempts += res.attempts
        self.errors += int(res.error is not None)
        self.prompt_tokens += res.prompt_tokens
        self.completion_tokens += res.completion_tokens
        self.latency_s += res.latency_s


class LLMError(RuntimeError):
    """Raised only when a caller passes ``raise_on_error=True``."""


__all__ = ["LLMResult", "CallRecord", "Usage", "LLMError"]

"""A per-run LLM budget: a cap on logical calls and on prompt size for one case.

:class:`RunBudget` wraps a client for one run. It counts the calls made through it (its own
:attr:`RunBudget.calls`, not a difference of the client's shared log), so two runs never see each other's
calls. Once ``max_calls`` logical calls were made, ``enabled`` turns false and later agents of the run (HyDE,
regeneration, a second verification) take their deterministic path; calls refused by the cap or by the
prompt-size limit are named in :attr:`RunBudget.skipped`.

A logical call is one ``chat`` exchange (with its retries); a structured request is one call per rung tried
plus one for a repair, exactly as the client logs them.

:class:`BudgetedLLM` keeps the older interface (one long-lived object, ``start_run`` between cases) on top of
a fresh :class:`RunBudget` per run.
"""
from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from .results import CallRecord, LLMResult
from .structured import StructuredResult, T, run_structured

# allowance per message for the chat template's role markers (tokens the project's tokenizer does not see)
TEMPLATE_TOKENS_PER_MESSAGE = 8


class RunBudget:
    """The LLM client as one run sees it: at most ``max_calls`` logical calls, prompts of at most
    ``max_input_tokens`` tokens."""

    def __init__(self, client: Any, max_calls: int = 4, max_input_tokens: int = 4096):
        self.client = client
        self.max_calls = max_calls
        self.max_input_tokens = max_input_tokens
        self.calls: list[CallRecord] = []     # this run's calls, in order
        self.skipped: list[str] = []          # tags of the calls the budget refused

    # -- state ----------------------------------------------------------------------------------
    @property
    def used(self) -> int:
        return len(self.calls)

    @property
    def enabled(self) -> bool:
        return self.client.enabled and self.used < self.max_calls

    @property
    def config(self):
        return self.client.config

    # -- sizes ----------------------------------------------------------------------------------
    def count_prompt_tokens(self, messages, **kw) -> int:
        return self.client.count_prompt_tokens(messages, **kw)

    def prompt_tokens(self, messages, schema: type[BaseModel] | None = None) -> int:
        """Input tokens of a request as the endpoint counts them where it can (llama.cpp's tokenizer), else the
        project's tokenizer; includes the JSON schema the client may add and a per-message template allowance."""
        extra = [{"role": "system", "content": json.dumps(schema.model_json_schema())}] if schema is not None else []
        n = self.client.count_prompt_tokens(list(messages) + extra, use_server=True)
        return n + TEMPLATE_TOKENS_PER_MESSAGE * (len(messages) + 1)

    def fits(self, messages, schema: type[BaseModel] | None = None) -> tuple[bool, int]:
        n = self.prompt_tokens(messages, schema)
        return n <= self.max_input_tokens, n

    # -- calls ----------------------------------------------------------------------------------
    def _admit(self, tag: str | None) -> bool:
        if self.used >= self.max_calls:
            self.skipped.append(tag or "?")
            return False
        return True

    def _chat(self, messages, *, tag: str | None = None, _mode: str | None = None, **kw) -> LLMResult:
        """One exchange through the client, counted against this run."""
        res = self.client.chat(messages, tag=tag, _mode=_mode, **kw)
        self.calls.append(CallRecord.of(res, tag, _mode))
        return res

    def structured(self, messages, schema: type[T], *, tag: str | None = None, **kw) -> StructuredResult[T]:
        if not self._admit(tag):
            return StructuredResult(error=f"LLM call budget of {self.max_calls} per case used up")
        ok, n = self.fits(messages, schema)
        if not ok:
            self.skipped.append(tag or "?")
            return StructuredResult(error=f"prompt of {n} tokens exceeds the input cap of {self.max_input_tokens}")
        return run_structured(self._chat, self.client.config, messages, schema, tag=tag, **kw)

    def chat(self, messages, *, tag: str | None = None, **kw) -> LLMResult:
        if not self._admit(tag):
            return LLMResult(error=f"LLM call budget of {self.max_calls} per case used up")
        return self._chat(messages, tag=tag, **kw)


class BudgetedLLM:
    """One long-lived object with a per-run cap (default 4 calls per case: MEE, KNL, generator, verifier).

    :meth:`start_run` begins a new :class:`RunBudget`; everything else is the current run's. ``log`` and
    ``calls_since`` read the client's shared log (for callers that mark positions in it)."""

    def __init__(self, client: Any, max_calls: int = 4, max_input_tokens: int = 4096):
        self.client = client
        self.run = RunBudget(client, max_calls, max_input_tokens)

    def start_run(self, max_calls: int | None = None, max_input_tokens: int | None = None) -> RunBudget:
        self.run = RunBudget(self.client, self.max_calls if max_calls is None else max_calls,
                             self.max_input_tokens if max_input_tokens is None else max_input_tokens)
        return self.run

    # the current run
    @property
    def max_calls(self) -> int:
        return self.run.max_calls

    @max_calls.setter
    def max_calls(self, value: int) -> None:
        self.run.max_calls = value

    @property
    def max_input_tokens(self) -> int:
        return self.run.max_input_tokens

    @max_input_tokens.setter
    def max_input_tokens(self, value: int) -> None:
        self.run.max_input_tokens = value

    @property
    def skipped(self) -> list[str]:
        return self.run.skipped

    @property
    def used(self) -> int:
        return self.run.used

    @property
    def enabled(self) -> bool:
        return self.run.enabled

    def prompt_tokens(self, messages, schema=None) -> int:
        return self.run.prompt_tokens(messages, schema)

    def fits(self, messages, schema=None) -> tuple[bool, int]:
        return self.run.fits(messages, schema)

    def structured(self, messages, schema, *, tag=None, **kw):
        return self.run.structured(messages, schema, tag=tag, **kw)

    def chat(self, messages, *, tag=None, **kw):
        return self.run.chat(messages, tag=tag, **kw)

    def count_prompt_tokens(self, messages, **kw):
        return self.client.count_prompt_tokens(messages, **kw)

    # the client's shared log
    @property
    def log(self):
        return self.client.log

    @property
    def config(self):
        return self.client.config

    def calls_since(self, index: int):
        return self.client.calls_since(index)


__all__ = ["RunBudget", "BudgetedLLM", "TEMPLATE_TOKENS_PER_MESSAGE"]

"""The LLM as one run sees it: a per-run budget of calls and prompt tokens, and a record of this run's calls.

:class:`LLMBudget` wraps the shared :class:`agents.llm.LLMClient` (one per process, stateless for a run). A node
builds one from its run's own record of calls (``used``: the calls the run's earlier steps made, counted from
the run's events), so the budget never depends on the shared client's log: two overlapping runs cannot eat
each other's budget, and a run resumed from a checkpoint keeps its count.

Past ``max_calls`` (default 4 per case: MEE, KNL, generator, verifier) ``enabled`` turns false, so later agents
in the run (HyDE, regeneration, a second verification) take their deterministic path and say so. Prompts over
``max_input_tokens`` (counted with the endpoint's tokenizer where it offers one) are not sent.

With LangSmith tracing on (:func:`langsmith_enabled`) and ``langsmith`` importable, each call is a child run
(``run_type="llm"``) of the graph node that made it.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in {"1", "true", "yes", "on"}


def langsmith_enabled(environ: dict[str, str] | None = None) -> bool:
    """True when LangSmith tracing is switched on and an API key is set."""
    env = os.environ if environ is None else environ
    on = _truthy(env.get("LANGSMITH_TRACING")) or _truthy(env.get("LANGCHAIN_TRACING_V2"))
    key = (env.get("LANGSMITH_API_KEY") or env.get("LANGCHAIN_API_KEY") or "").strip()
    return on and bool(key)


def _langsmith_traceable():
    if not langsmith_enabled():
        return None
    try:
        from langsmith import traceable  # noqa: PLC0415
    except ImportError:
        return None
    return traceable


class LLMBudget:
    def __init__(self, client: Any, max_calls: int = 4, max_input_tokens: int = 4096, used: int = 0):
        self.client = client
        self.max_calls = max_calls
        self.max_input_tokens = max_input_tokens
        self.used_before = used
        self.calls: list[dict[str, Any]] = []   # this object's calls: tag, model, mode, tokens, latency, error
        self.skipped: list[str] = []

    # ---- budget ---------------------------------------------------------------------------------------------
    @property
    def used(self) -> int:
        """Logical calls made by the run: one per agent request, whatever its HTTP retries, structured-mode
        fallbacks and repair call cost."""
        return self.used_before + logical_calls(self.calls)

    @property
    def enabled(self) -> bool:
        return self.client.enabled and self.used < self.max_calls

    @property
    def config(self):
        return self.client.config

    def prompt_tokens(self, messages, schema=None) -> int:
        """Input tokens of a request as the endpoint counts them where it can (llama.cpp's tokenizer), else the
        project's tokenizer; includes the JSON schema the client may add and a per-message template allowance."""
        extra = [{"role": "system", "content": json.dumps(schema.model_json_schema())}] if schema is not None else []
        return self.client.count_prompt_tokens(list(messages) + extra, use_server=True) + 8 * (len(messages) + 1)

    def fits(self, messages, schema=None) -> tuple[bool, int]:
        n = self.prompt_tokens(messages, schema)
        return n <= self.max_input_tokens, n

    def count_prompt_tokens(self, messages, **kw):
        return self.client.count_prompt_tokens(messages, **kw)

    def _over_budget(self, tag) -> str | None:
        if self.used >= self.max_calls:
            self.skipped.append(tag or "?")
            return f"LLM call budget of {self.max_calls} per case used up"
        return None

    # ---- calls ----------------------------------------------------------------------------------------------
    def _record(self, res, tag, mode, logical: bool = True, parse_error: str | None = None) -> None:
        self.calls.append({"tag": tag, "model": res.model, "mode": mode, "prompt_tokens": res.prompt_tokens,
                           "completion_tokens": res.completion_tokens, "latency_s": res.latency_s,
                           "attempts": res.attempts, "finish_reason": res.finish_reason, "error": res.error,
                           "cached": bool(getattr(res, "cached", False)), "ts": time.time(), "logical": logical,
                           "parse_error": parse_error, "rejected_format": bool(getattr(res, "rejected_format", False))})

    def structured(self, messages, schema, *, tag=None, **kw):
        from .structured import StructuredResult  # noqa: PLC0415

        why = self._over_budget(tag)
        if why:
            return StructuredResult(value=None, raw="", mode=None, repaired=False, calls=[], error=why)
        ok, n = self.fits(messages, schema)
        if not ok:
            self.skipped.append(tag or "?")
            return StructuredResult(value=None, raw="", mode=None, repaired=False, calls=[],
                                    error=f"prompt of {n} tokens exceeds the input cap of {self.max_input_tokens}")
        res = self._traced("structured", tag, messages,
                           lambda: self.client.structured(messages, schema, tag=tag, **kw))
        last = len(res.calls) - 1
        # the first HTTP call the server accepted (a refused response_format moves on to the next mode) stands for
        # the logical call; its parse_error says whether the reply needed a repair (or could not be used at all)
        lead = next((i for i, c in enumerate(res.calls) if not c.rejected_format), 0)
        for i, call in enumerate(res.calls):
            mode = res.mode if not call.rejected_format else "rejected"
            if res.repaired and i == last:
                mode = f"{res.mode}+repair"
            first = i == lead
            perr = None
            if first and (res.repaired or res.value is None) and not call.error:
                perr = res.first_problem or res.error or "unusable reply"
            self._record(call, tag, mode, logical=first, parse_error=perr)
        return res

    def chat(self, messages, *, tag=None, **kw):
        from .results import LLMResult  # noqa: PLC0415

        why = self._over_budget(tag)
        if why:
            return LLMResult(error=why)
        res = self._traced("chat", tag, messages, lambda: self.client.chat(messages, tag=tag, **kw))
        self._record(res, tag, None)
        return res


    def _traced(self, kind: str, tag, messages, call):
        traceable = _langsmith_traceable()
        if traceable is None:
            return call()
        model = getattr(self.client.config, "model", None)

        def outputs(res) -> dict:
            text = getattr(res, "raw", None)
            if text is None:
                text = getattr(res, "text", "")
            return {"choices": [{"message": {"role": "assistant", "content": text}}],
                    "error": getattr(res, "error", None)}

        @traceable(run_type="llm", name=f"llm:{tag or kind}", process_outputs=outputs,
                   metadata={"ls_provider": "openai", "ls_model_name": model, "tag": tag})
        def llm_call(messages):   # the argument is what LangSmith shows as the run's input
            return call()

        return llm_call(messages)


def logical_calls(records) -> int:
    """Logical LLM calls among call records (a record without the ``logical`` key counts as one)."""
    return sum(1 for c in records or [] if c.get("logical", True))

"""Schema-constrained output: ask for JSON matching a pydantic model, parse it, repair it once.

Ladder of modes: ``json_schema`` (OpenAI structured outputs) -> ``json_object_schema`` (``{"type":
"json_object", "schema": ...}``, the extension llama.cpp and others turn into a grammar) -> ``json_object``
(plain JSON mode) -> ``text`` (free text, first JSON object extracted). A mode the server rejects (HTTP
400/422, or any error that names ``response_format``) moves one rung down; the mode that worked is remembered
per endpoint (base_url + model) for the process. A reply that is not valid JSON or fails validation gets ONE
repair call.

:func:`run_structured` drives one structured request over any ``chat`` callable with the signature of
:meth:`agents.llm.LLMClient.chat`, so the client and a per-run budget share the same logic.
"""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from .config import LLMConfig
from .results import LLMError, LLMResult

StructuredMode = Literal["json_schema", "json_object_schema", "json_object", "text"]

_LADDER: tuple[StructuredMode, ...] = ("json_schema", "json_object_schema", "json_object", "text")
_START: dict[str, StructuredMode] = {
    "auto": "json_schema",
    "json_schema": "json_schema",
    "json_object": "json_object_schema",
    "none": "text",
}

T = TypeVar("T", bound=BaseModel)


@dataclass
class StructuredResult(Generic[T]):
    """The outcome of a structured request."""

    value: T | None = None
    raw: str = ""
    mode: str | None = None
    repaired: bool = False
    calls: list[LLMResult] = field(default_factory=list)
    error: str | None = None
    first_problem: str | None = None     # what was wrong with the first reply (before any repair)

    @property
    def ok(self) -> bool:
        return self.value is not None and self.error is None

    @property
    def latency_s(self) -> float:
        return sum(c.latency_s for c in self.calls)


# ------------------------------------------------------------------------------------ mode memory

# per-endpoint memory of the structured mode that worked (process-wide, shared by clients)
_MODE_CACHE: dict[str, StructuredMode] = {}
_MODE_LOCK = threading.Lock()


def forget_endpoint_modes() -> None:
    """Clear the remembered structured modes (tests, or after switching servers)."""
    with _MODE_LOCK:
        _MODE_CACHE.clear()


def preferred_mode(config: LLMConfig) -> StructuredMode:
    """The structured mode to start with for this endpoint (remembered or from config)."""
    with _MODE_LOCK:
        cached = _MODE_CACHE.get(config.endpoint_key)
    start = _START[config.json_mode]
    if cached and config.json_mode == "auto":
        return cached
    return start


def modes(config: LLMConfig) -> list[StructuredMode]:
    """The rungs to try, in order."""
    first = preferred_mode(config)
    if config.json_mode == "auto":
        return list(_LADDER[_LADDER.index(first):])
    if config.json_mode == "json_object":
        return ["json_object_schema", "json_object"]
    return [first]


def _remember(config: LLMConfig, mode: StructuredMode) -> None:
    if config.json_mode == "auto":
        with _MODE_LOCK:
            _MODE_CACHE[config.endpoint_key] = mode


# ---------------------------------------------------------------------------------- request shape

def schema_name(schema: type[BaseModel]) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64]
    return name or "Response"


def response_formats(schema: type[BaseModel], strict: bool = False) -> dict[str, dict[str, Any] | None]:
    """The ``response_format`` of each mode for ``schema``."""
    json_schema = schema.model_json_schema()
    return {
        "json_schema": {"type": "json_schema",
                        "json_schema": {"name": schema_name(schema), "schema": json_schema, "strict": strict}},
        "json_object_schema": {"type": "json_object", "schema": json_schema},
        "json_object": {"type": "json_object"},
        "text": None,
    }


def with_schema_instruction(messages: list[dict[str, Any]], schema_json: str, mode: str) -> list[dict[str, Any]]:
    """A copy of ``messages`` whose system message asks for one JSON object (with the schema, except in the
    ``json_schema`` mode where the server enforces it)."""
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


def repair_messages(messages: list[dict[str, Any]], reply: str, problem: str | None) -> list[dict[str, Any]]:
    """The conversation for the one repair call: the bad reply and what was wrong with it."""
    return messages + [
        {"role": "assistant", "content": reply},
        {"role": "user", "content": (
            f"Your reply could not be used: {problem}. Reply again with only the corrected JSON "
            f"object matching the schema, nothing else.")},
    ]


# ----------------------------------------------------------------------------------------- parsing

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


def short(msg: str, n: int = 200) -> str:
    """``msg`` on one line, at most ``n`` characters."""
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= n else msg[: n - 1] + "…"


def validation_summary(exc: ValidationError, n: int = 6) -> str:
    parts = []
    for e in exc.errors()[:n]:
        loc = ".".join(str(x) for x in e.get("loc", ())) or "<root>"
        parts.append(f"{loc}: {e.get('msg')}")
    more = len(exc.errors()) - n
    return "; ".join(parts) + (f"; (+{more} more)" if more > 0 else "")


def parse_reply(text: str, schema: type[T], finish_reason: str | None = None) -> tuple[T | None, str | None]:
    """(validated value, None) or (None, the problem in one short line)."""
    try:
        obj = extract_json(text)
    except ValueError as exc:
        msg = str(exc)
        if finish_reason == "length":
            msg += " (reply truncated at max_tokens)"
        return None, short(msg)
    fields = set(schema.model_fields)
    if fields and isinstance(obj, dict) and not fields & set(obj):
        # e.g. a reply cut short: the only complete object left is an inner one, which would validate as an
        # empty answer of the outer schema
        msg = f"malformed JSON: the reply has none of the fields {sorted(fields)}"
        if finish_reason == "length":
            msg += " (reply truncated at max_tokens)"
        return None, short(msg)
    try:
        return schema.model_validate(obj), None
    except ValidationError as exc:
        return None, short("schema validation failed: " + validation_summary(exc), 400)


# ------------------------------------------------------------------------------------------ driver

def run_structured(chat: Callable[..., LLMResult], config: LLMConfig, messages: list[dict[str, Any]],
                   schema: type[T], *, tag: str | None = None, strict: bool = False, repair: bool = True,
                   raise_on_error: bool = False, **overrides: Any) -> StructuredResult[T]:
    """Ask for a JSON object matching ``schema`` through ``chat``; parse and validate it (one repair call
    at most). ``chat(messages, tag=, response_format=, _mode=, **overrides) -> LLMResult``."""
    out: StructuredResult[T] = StructuredResult()
    if not config.enabled:
        out.error = "LLM disabled: no base_url/model configured"
        if raise_on_error:
            raise LLMError(out.error)
        return out
    schema_json = json.dumps(schema.model_json_schema(), separators=(",", ":"))
    formats = response_formats(schema, strict)
    res: LLMResult | None = None
    used_msgs: list[dict[str, Any]] = messages
    for mode in modes(config):
        used_msgs = with_schema_instruction(messages, schema_json, mode)
        res = chat(used_msgs, tag=tag, response_format=formats[mode], _mode=mode, **dict(overrides))
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
    _remember(config, out.mode)  # type: ignore[arg-type]

    out.raw = res.text
    value, problem = parse_reply(res.text, schema, res.finish_reason)
    out.first_problem = problem
    if value is None and repair:
        res2 = chat(repair_messages(used_msgs, res.text, problem), tag=tag, response_format=formats[out.mode],
                    _mode=f"{out.mode}+repair", **dict(overrides))
        out.calls.append(res2)
        out.repaired = True
        if res2.error:
            problem = f"{problem}; repair call failed: {res2.error}"
        else:
            out.raw = res2.text
            value, problem2 = parse_reply(res2.text, schema, res2.finish_reason)
            if value is None:
                problem = f"{problem2} (after one repair)"
    out.value = value
    out.error = None if value is not None else problem
    if raise_on_error and out.error:
        raise LLMError(out.error)
    return out


__all__ = ["StructuredMode", "StructuredResult", "extract_json", "forget_endpoint_modes", "parse_reply",
           "preferred_mode", "modes", "response_formats", "run_structured", "with_schema_instruction"]

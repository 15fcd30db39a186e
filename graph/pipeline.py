"""Run the ClinicalRAG graph: a Runtime holding the knowledge resources and agents, input checks, the
structured result, and one audit record per run."""
from __future__ import annotations

import logging
import sqlite3
import time
import uuid
from functools import cached_property
from typing import Any

from agents.generator import Generator
from agents.types import Draft

from .config import PipelineConfig

log = logging.getLogger(__name__)

MAX_CHARS = 20000


class InputError(ValueError):
    """The presentation cannot be processed (empty, binary, too long). Nothing was run."""


def check_presentation(text: Any, max_chars: int = MAX_CHARS) -> str:
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("the presentation is binary data, not UTF-8 text") from None
    if not isinstance(text, str):
        raise InputError(f"the presentation must be text, got {type(text).__name__}")
    if "\x00" in text:
        raise InputError("the presentation contains NUL bytes: it looks like binary data, not text")
    stripped = text.strip()
    if not stripped:
        raise InputError("the presentation is empty: describe the patient (age, sex, symptoms, findings)")
    ctrl = sum(1 for ch in stripped if ord(ch) < 32 and ch not in "\n\r\t")
    if ctrl > max(3, len(stripped) // 50):
        raise InputError("the presentation contains many control characters: it looks like binary data, not text")
    if len(stripped) > max_chars:
        raise InputError(f"the presentation has {len(stripped):,} characters; the limit is {max_chars:,}. "
                         "Shorten it to the relevant history and findings.")
    return stripped


class BudgetedLLM:
    """The LLM client with a per-run cap on logical calls (default 4 per case: MEE, KNL, generator, verifier).

    Once the cap is reached ``enabled`` turns false, so later agents in the run (HyDE, regeneration, a second
    verification) take their deterministic path and say so."""

    def __init__(self, client, max_calls: int = 4, max_input_tokens: int = 4096):
        self.client = client
        self.max_calls = max_calls
        self.max_input_tokens = max_input_tokens
        self._mark = 0
        self.skipped: list[str] = []

    def start_run(self, max_calls: int | None = None, max_input_tokens: int | None = None) -> None:
        self._mark = len(self.client.log)
        self.skipped = []
        if max_calls is not None:
            self.max_calls = max_calls
        if max_input_tokens is not None:
            self.max_input_tokens = max_input_tokens

    def prompt_tokens(self, messages, schema=None) -> int:
        """Input tokens of a request as the endpoint counts them where it can (llama.cpp's tokenizer), else the
        project's tokenizer; includes the JSON schema the client may add and a per-message template allowance."""
        import json as _json

        extra = [{"role": "system", "content": _json.dumps(schema.model_json_schema())}] if schema is not None else []
        return self.client.count_prompt_tokens(list(messages) + extra, use_server=True) + 8 * (len(messages) + 1)

    def fits(self, messages, schema=None) -> tuple[bool, int]:
        n = self.prompt_tokens(messages, schema)
        return n <= self.max_input_tokens, n

    @property
    def used(self) -> int:
        return len(self.client.log) - self._mark

    @property
    def enabled(self) -> bool:
        return self.client.enabled and self.used < self.max_calls

    @property
    def log(self):
        return self.client.log

    @property
    def config(self):
        return self.client.config

    def calls_since(self, index: int):
        return self.client.calls_since(index)

    def _guard(self, tag):
        if self.used >= self.max_calls:
            self.skipped.append(tag or "?")
            return False
        return True

    def structured(self, messages, schema, *, tag=None, **kw):
        from agents.llm import StructuredResult

        if not self._guard(tag):
            return StructuredResult(value=None, raw="", mode=None, repaired=False, calls=[],
                                    error=f"LLM call budget of {self.max_calls} per case used up")
        ok, n = self.fits(messages, schema)
        if not ok:
            self.skipped.append(tag or "?")
            return StructuredResult(value=None, raw="", mode=None, repaired=False, calls=[],
                                    error=f"prompt of {n} tokens exceeds the input cap of {self.max_input_tokens}")
        return self.client.structured(messages, schema, tag=tag, **kw)

    def chat(self, messages, *, tag=None, **kw):
        if not self._guard(tag):
            from agents.llm import LLMResult

            return LLMResult(error=f"LLM call budget of {self.max_calls} per case used up")
        return self.client.chat(messages, tag=tag, **kw)

    def count_prompt_tokens(self, messages, **kw):
        return self.client.count_prompt_tokens(messages, **kw)


class Runtime:
    """Knowledge resources and agents, built lazily and shared by runs."""

    def __init__(self, llm_config=None, audit_path=None, index=None, kg=None):
        from agents.llm import LLMClient, load_llm_config

        self.llm_config = llm_config if llm_config is not None else load_llm_config()
        self.llm = BudgetedLLM(LLMClient(self.llm_config)) if self.llm_config.enabled else None
        self._index = index
        self._kg = kg
        self._audit_path = audit_path
        self._verifiers: dict[tuple, Any] = {}

    @cached_property
    def kg(self):
        if self._kg is not None:
            return self._kg
        from knowledge.kg import load_or_build

        return load_or_build()

    @cached_property
    def index(self):
        if self._index is not None:
            return self._index
        from knowledge.index import KnowledgeIndex

        return KnowledgeIndex(kg=self.kg).open()

    @cached_property
    def mee(self):
        from agents.mee import MEE

        return MEE(self.kg.vocabulary(), llm=self.llm)

    @cached_property
    def ranker(self):
        from agents.ranker import KGRanker

        return KGRanker(self.kg)

    @cached_property
    def hki(self):
        from agents.hki import HKI

        return HKI(self.index, self.kg, self.ranker)

    @cached_property
    def knl(self):
        from agents.knl import KNL

        return KNL(self.llm)

    @cached_property
    def krg(self):
        from agents.krg import KRG

        return KRG()

    @cached_property
    def audit(self):
        from .tracing import AuditLog

        return AuditLog(self._audit_path)

    def embedder(self):
        return getattr(self.index, "embedder", None)

    def verifier_for(self, cfg: PipelineConfig):
        key = (cfg.verify_confidence, cfg.verify_max_partial)
        if key not in self._verifiers:
            from agents.verifier import Verifier

            self._verifiers[key] = Verifier(embedder=self.embedder(), llm=self.llm,
                                            confidence_threshold=cfg.verify_confidence,
                                            max_partial_ratio=cfg.verify_max_partial)
        return self._verifiers[key]

    def generator(self, cfg: PipelineConfig) -> Generator:
        return Generator(self.llm, differential_k=cfg.differential_k, max_input_tokens=cfg.max_input_tokens)

    def warm(self) -> None:
        """Load everything a run needs (KG, index, extractor), so the first answer is not slow."""
        _ = self.kg, self.index, self.mee, self.ranker, self.hki


class ClinicalRAG:
    """The product: ``ask(presentation) -> result dict``."""

    def __init__(self, runtime: Runtime | None = None, checkpoint_path=None):
        self.rt = runtime or Runtime()
        self._checkpoint_path = checkpoint_path
        self._graphs: dict[bool, Any] = {}

    def graph(self, threaded: bool):
        if threaded not in self._graphs:
            from .workflow import build_graph

            saver = None
            if threaded:
                from langgraph.checkpoint.sqlite import SqliteSaver

                from knowledge import paths

                path = self._checkpoint_path or (paths.home() / "threads.sqlite")
                path.parent.mkdir(parents=True, exist_ok=True)
                saver = SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))
            self._graphs[threaded] = build_graph(self.rt, checkpointer=saver)
        return self._graphs[threaded]

    def ask(self, presentation: Any, config: PipelineConfig | None = None, thread_id: str | None = None,
            audit: bool = True) -> dict[str, Any]:
        cfg = config or PipelineConfig()
        text = check_presentation(presentation, cfg.max_presentation_chars)
        t0 = time.perf_counter()
        mark = len(self.rt.llm.log) if self.rt.llm is not None else 0
        if self.rt.llm is not None:
            self.rt.llm.start_run(cfg.max_llm_calls, cfg.max_input_tokens)
        # run name, tags and metadata also label the run in LangSmith when its tracing env vars are set
        run_cfg: dict[str, Any] = {"recursion_limit": cfg.recursion_limit, "run_name": "clinicalrag",
                                   "tags": [cfg.mode], "metadata": {"config_hash": cfg.digest()}}
        if thread_id:
            run_cfg["configurable"] = {"thread_id": thread_id}
        state = self.graph(bool(thread_id)).invoke({"message": text, "config": cfg.model_dump()}, run_cfg)
        elapsed = time.perf_counter() - t0
        result = self._result(state, cfg, thread_id, elapsed, mark)
        if audit:
            rec = self.rt.audit.append(self._audit_record(state, result, cfg))
            result["run_id"] = rec.get("run_id")
        return result

    # ---- result -----------------------------------------------------------------------------------------------
    def _result(self, state, cfg: PipelineConfig, thread_id, elapsed: float, mark: int) -> dict[str, Any]:
        draft = Draft(**state.get("draft") or {})
        v = state.get("verification")
        esc = state.get("escalation") or {"escalated": False, "reasons": []}
        text = (v or {}).get("cleaned_text") or draft.text
        if cfg.mode == "direct":
            status = "unverified (language model only, no evidence)"
        elif esc["escalated"] or draft.insufficient:
            status = "needs clinician review"
            if not esc["escalated"]:
                esc = {"escalated": True, "reasons": ["insufficient evidence"]}
        elif not cfg.use_verifier:
            status = "unverified (verifier disabled)"
        else:
            status = "verified" if (v or {}).get("passed") else "needs clinician review"
        calls = self.rt.llm.calls_since(mark) if self.rt.llm is not None else []
        return {
            "status": status,
            "answer": text,
            "differential": draft.differential and [d.model_dump() for d in draft.differential] or [],
            "next_steps": draft.next_steps,
            "escalation": esc,
            "verification": v,
            "references": state.get("references", []),
            "reference_map": state.get("reference_map", {}),
            "evidence": state.get("evidence", []),
            "candidates": state.get("candidates", []),
            "extraction": state.get("extraction"),
            "presentation": state.get("presentation"),
            "thread_id": thread_id,
            "mode": cfg.mode,
            "config": cfg.model_dump(),
            "config_hash": cfg.digest(),
            "warnings": list(dict.fromkeys(state.get("warnings", []))),
            "attempts": state.get("attempts", 0),
            "trace": state.get("events", []),
            "llm": {"model": self.rt.llm_config.model if self.rt.llm is not None else None,
                    "calls": len(calls), "prompt_tokens": sum(c.prompt_tokens for c in calls),
                    "completion_tokens": sum(c.completion_tokens for c in calls),
                    "errors": sum(c.error is not None for c in calls)},
            "latency_ms": round(elapsed * 1000, 1),
        }

    def _audit_record(self, state, result, cfg: PipelineConfig) -> dict[str, Any]:
        from .tracing import code_version

        return {
            "kind": "ask",
            "inputs": {"message": state.get("message"), "presentation": state.get("presentation"),
                       "thread_id": result["thread_id"]},
            "config": cfg.model_dump(), "config_hash": result["config_hash"], "code_version": code_version(),
            "llm_model": result["llm"]["model"],
            "entities": (state.get("extraction") or {}).get("entities", []),
            "evidence": [{"id": e["id"], "role": e["role"], "score": e["score"]} for e in state.get("evidence", [])],
            "candidates": [{"id": c["concept_id"], "name": c["name"], "score": c["score"]}
                           for c in state.get("candidates", [])[:10]],
            "nodes": state.get("events", []),
            "verification": state.get("verification"),
            "escalation": result["escalation"],
            "status": result["status"],
            "answer": result["answer"],
            "references": [r.get("n") for r in result["references"]],
            "warnings": result["warnings"],
            "llm": result["llm"],
            "latency_ms": result["latency_ms"],
        }


def new_thread_id() -> str:
    return uuid.uuid4().hex[:12]

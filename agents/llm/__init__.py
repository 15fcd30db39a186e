"""The language-model layer shared by every agent.

- :mod:`.config`: :class:`LLMConfig` and :func:`load_llm_config` (file < environment < CLI);
- :mod:`.client`: :class:`LLMClient`, one accountable client over an OpenAI-compatible endpoint;
- :mod:`.structured`: schema-constrained output (mode ladder, JSON extraction, one repair call);
- :mod:`.budget`: :class:`LLMBudget`, the per-run cap on calls and prompt size (and LangSmith child runs);
- :mod:`.results`: :class:`LLMResult`, :class:`CallRecord`, :class:`Usage`, :class:`LLMError`;
- :mod:`.providers`: named endpoints (``--llm local``); :mod:`.server` (a managed llama.cpp server) and
  :mod:`.gguf` (a model assembled from its PyPI parts) serve the local one. Imported on use, not here.

Prompts are loaded with :func:`agents.prompts.load_prompt` (re-exported here).
"""
from agents.prompts import load_prompt

from .budget import LLMBudget
from .client import LLMClient
from .config import ENV_PREFIX, JsonMode, LLMConfig, load_llm_config
from .results import CallRecord, LLMError, LLMResult, Usage
from .structured import StructuredMode, StructuredResult, extract_json, forget_endpoint_modes

__all__ = ["CallRecord", "ENV_PREFIX", "JsonMode", "LLMClient", "LLMConfig", "LLMError",
           "LLMResult", "LLMBudget", "StructuredMode", "StructuredResult", "Usage", "extract_json",
           "forget_endpoint_modes", "load_llm_config", "load_prompt"]

"""What a run needs besides its state: shared :class:`Resources` and the per-run :class:`Context`.

- :class:`Resources` (one per process, shared by runs): the knowledge graph, the index, the agents that are
  expensive to build (MEE, ranker, HKI, KRG, verifiers, the must-not-miss rules), the LLM client and the audit log;
  built lazily.
- :class:`Context` (one per run, LangGraph's ``context_schema``): the run's :class:`PipelineConfig`, whether
  to append an audit record, and the resources (by default the process-wide :func:`default_resources`, from
  ``$CLINICALRAG_HOME`` and ``CLINICALRAG_LLM_*``). LangGraph's server and Studio build it from a JSON object
  such as ``{"config": {"use_verifier": false}, "audit": false}``.

Nothing here is checkpointed. Prompts and raw LLM outputs of a run are kept on its Context (for the audit record)
and streamed as custom events; they never enter the graph state.
"""
from __future__ import annotations

import copy
import logging
import threading
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.json_schema import SkipJsonSchema

from agents.llm import LLMBudget
from .config import PipelineConfig


log = logging.getLogger(__name__)

_FROM_INDEX = object()


class Resources:
    """Knowledge resources, agents and the LLM client, built lazily and shared by runs.

    ``llm_config``: an :class:`agents.llm.LLMConfig` (default: from the environment); ``kg``/``index``: already
    loaded objects to reuse (default: load from ``$CLINICALRAG_HOME``); ``audit_path``: the audit log file;
    ``embedder``: the verifier's sentence embedder (default: the index's; ``None``: lexical and negation checks
    only, no embedding similarity)."""

    def __init__(self, llm_config=None, audit_path=None, index=None, kg=None, embedder: Any = _FROM_INDEX):
        from agents.llm import LLMClient, load_llm_config  # noqa: PLC0415

        self.llm_config = llm_config if llm_config is not None else load_llm_config()
        self.client = LLMClient(self.llm_config) if self.llm_config.enabled else None
        self._index = index
        self._kg = kg
        self._audit_path = audit_path
        self._embedder = embedder
        self._verifiers: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    @cached_property
    def kg(self):
        if self._kg is not None:
            return self._kg
        from knowledge.kg import load_or_build  # noqa: PLC0415

        return load_or_build()

    @cached_property
    def index(self):
        if self._index is not None:
            return self._index
        from knowledge.index import KnowledgeIndex  # noqa: PLC0415

        return KnowledgeIndex(kg=self.kg).open()

    @cached_property
    def mee(self):
        """The extractor without an LLM; :meth:`mee_for` gives a run its LLM-enabled view."""
        from agents.mee import MEE  # noqa: PLC0415

        return MEE(self.kg.vocabulary(), llm=None)

    @cached_property
    def ranker(self):
        from agents.ranker import KGRanker  # noqa: PLC0415

        return KGRanker(self.kg)

    @cached_property
    def hki(self):
        from agents.hki import HKI  # noqa: PLC0415

        return HKI(self.index, self.kg, self.ranker, pages=self.pages, prior=self.prior, sites=self.sites,
                   signs=self.signs, risk_factors=self.risk_factors, rule_outs=self._rule_outs(),
                   against=self.against)

    def _rule_outs(self):
        """The must-not-miss rules for the ranking's stated rule-outs; None when the rule file cannot be read (the
        must-not-miss step then says so in the result's warnings)."""
        from agents.must_not_miss import MustNotMissError  # noqa: PLC0415

        try:
            return self.must_not_miss
        except MustNotMissError:
            return None

    @cached_property
    def against(self):
        """The findings that argue against a diagnosis (``agents/data/against_findings.yaml``) resolved against the
        knowledge graph."""
        from agents.against import AgainstFindings  # noqa: PLC0415

        return AgainstFindings.from_kg(self.kg)

    @cached_property
    def risk_factors(self):
        """The exposures and risk factors (``agents/data/risk_factors.yaml``) resolved against the knowledge graph."""
        from agents.risk_factors import RiskFactors  # noqa: PLC0415

        return RiskFactors.from_kg(self.kg)

    @cached_property
    def signs(self):
        """The classic signs (``agents/data/classic_signs.yaml``) resolved against the knowledge graph."""
        from agents.signs import ClassicSigns  # noqa: PLC0415

        return ClassicSigns.from_kg(self.kg)

    @cached_property
    def sites(self):
        """The pain-site rules (``agents/data/pain_sites.yaml``) resolved against the knowledge graph, each region's
        diseases ordered by the commonness prior (by connectedness without one)."""
        from agents.sites import PainSites  # noqa: PLC0415
        from agents.types import Candidate  # noqa: PLC0415

        prior, kg = self.prior, self.kg

        def commonness(ids: list[str]) -> list[float]:
            return prior.prior_logits([Candidate(concept_id=i, name=kg.concept(i).name, score=0.0) for i in ids])

        return PainSites.from_kg(kg, commonness if prior is not None else None)

    @cached_property
    def prior(self):
        """The fitted commonness prior (``agents/data/commonness_prior.json``) over the KG's commonness features
        (cached on disk per KG version); None, with a warning in the log, when either cannot be had — runs then
        keep the fusion order and say so."""
        from agents.prior import CommonnessPrior  # noqa: PLC0415
        from knowledge.prior import PriorFeatures  # noqa: PLC0415

        try:
            return CommonnessPrior.load(PriorFeatures.for_kg(self.kg))
        except (OSError, ValueError, KeyError) as exc:
            log.warning("commonness prior unavailable: %s", exc)
            return None

    @cached_property
    def pages(self):
        """The disease pages the pipeline ranks (BM25): every reference answer about a disease and its NCI
        Thesaurus definitions, cached on disk per index and KG version."""
        from knowledge.disease_pages import DiseasePages  # noqa: PLC0415

        return DiseasePages.for_index(self.index, self.kg, definitions=True)

    @cached_property
    def baseline_pages(self):
        """The plain text-retrieval baseline's pages: the MedQuAD answers only (one document per disease)."""
        from knowledge.disease_pages import DiseasePages  # noqa: PLC0415

        return DiseasePages.for_index(self.index, self.kg)

    @cached_property
    def krg(self):
        from agents.krg import KRG  # noqa: PLC0415

        return KRG()

    @cached_property
    def must_not_miss(self):
        """The must-not-miss rules (``agents/data/must_not_miss.yaml``) resolved against the knowledge graph."""
        from agents.must_not_miss import MustNotMiss  # noqa: PLC0415

        return MustNotMiss.from_kg(self.kg)

    @cached_property
    def audit(self):
        from .tracing import AuditLog  # noqa: PLC0415

        return AuditLog(self._audit_path)

    @property
    def llm_model(self) -> str | None:
        return self.llm_config.model if self.client is not None else None

    def embedder(self):
        if self._embedder is _FROM_INDEX:
            return getattr(self.index, "embedder", None)
        return self._embedder

    # ---- per-run views ----------------------------------------------------------------------------------------
    def budget(self, cfg: PipelineConfig, used: int = 0) -> LLMBudget | None:
        """The LLM under a run's budget (None without an LLM)."""
        if self.client is None:
            return None
        return LLMBudget(self.client, max_calls=cfg.max_llm_calls, max_input_tokens=cfg.max_input_tokens, used=used)

    def mee_for(self, llm: LLMBudget | None):
        """The shared extractor with this run's LLM (a shallow copy: the lexicon and matchers are shared)."""
        if llm is None:
            return self.mee
        view = copy.copy(self.mee)
        view.llm = llm
        return view

    def verifier_for(self, cfg: PipelineConfig, llm: LLMBudget | None = None):
        """The verifier for the config's thresholds (its embedding cache is shared by runs) with this run's LLM."""
        key = (cfg.verify_confidence, cfg.verify_max_partial)
        with self._lock:
            if key not in self._verifiers:
                from agents.verifier import Verifier  # noqa: PLC0415

                self._verifiers[key] = Verifier(embedder=self.embedder(), llm=None,
                                                confidence_threshold=cfg.verify_confidence,
                                                max_partial_ratio=cfg.verify_max_partial)
            base = self._verifiers[key]
        if llm is None:
            return base
        view = copy.copy(base)
        view.llm = llm
        return view

    def generator(self, cfg: PipelineConfig, llm: LLMBudget | None = None):
        from agents.generator import Generator  # noqa: PLC0415

        return Generator(llm, differential_k=cfg.differential_k, max_input_tokens=cfg.max_input_tokens,
                         generator_weight=cfg.generator_weight, direct_min=cfg.direct_min_diagnoses)

    def knl(self, llm: LLMBudget | None = None):
        from agents.knl import KNL  # noqa: PLC0415

        return KNL(llm)

    def warm(self) -> None:
        """Load everything a run needs (KG, index, extractor), so the first answer is not slow."""
        _ = self.kg, self.index, self.mee, self.ranker, self.pages, self.prior, self.hki


_DEFAULT: Resources | None = None
_DEFAULT_LOCK = threading.Lock()


def default_resources() -> Resources:
    """The process-wide resources (knowledge from ``$CLINICALRAG_HOME``, LLM from ``CLINICALRAG_LLM_*``)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Resources()
        return _DEFAULT


class Context(BaseModel):
    """The run's context (``StateGraph(..., context_schema=Context)``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: PipelineConfig = Field(default_factory=PipelineConfig)
    audit: bool = True   # append one record to the hash-chained audit log at the end of the run
    resources: SkipJsonSchema[Any] = Field(default_factory=default_resources, exclude=True)

    _prompts: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def record_prompt(self, node: str, occurrence: int, prompt: dict[str, Any]) -> None:
        """Keep a prompt and raw output of this run for the audit record (never in the graph state)."""
        self._prompts.append({"node": node, "occurrence": occurrence, "prompt": prompt})

    @property
    def prompts(self) -> list[dict[str, Any]]:
        return list(self._prompts)


def context_of(runtime: Any) -> Context:
    """The run's Context (a default one when the caller passed none)."""
    ctx = getattr(runtime, "context", None)
    if ctx is None:
        return Context()
    if isinstance(ctx, dict):
        return Context(**ctx)
    return ctx

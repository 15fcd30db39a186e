"""The Verifier agent: checks every claim of a draft answer against the evidence it cites.

Steps of :meth:`Verifier.verify`:

1. **Citations** (:mod:`.citations`): fabricated citations (evidence-id-shaped tokens that are not in the
   supplied evidence) are removed from the answer text, from the differential items' citations and
   rationales, and listed in ``fabricated_citations``.
2. **Claims** (:mod:`.claims`): the cleaned answer is split into claims; meta sentences ("The following
   diagnoses ...") and sentences that only restate the presentation are skipped.
3. **Deterministic check** (:mod:`.scoring`): lexical coverage, semantic similarity (with an embedder),
   medical-term coverage and negation mismatch give SUPPORTED / CONTRADICTED / INSUFFICIENT with a confidence.
4. **LLM check** (:mod:`.judge`, when ``llm`` is given and enabled): one structured call; its verdicts are
   combined with the deterministic ones.
5. **Pass rule** (:mod:`.policy`). ``notes`` holds information such as removed citations or a fallback.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from agents.types import ClaimCheck, Draft, Evidence, Verification

from .citations import clean_citations, resolve
from .claims import compose_text, split_claims
from .judge import judge
from .policy import PassPolicy
from .scoring import ClaimScorer


class Verifier:
    def __init__(self, embedder: Any = None, llm: Any = None, confidence_threshold: float = 0.75,
                 max_partial_ratio: float = 0.10, max_claims: int = 40, support_floor: float = 0.5,
                 sim_low: float = 0.45, sim_high: float = 0.85, max_units_per_evidence: int = 80,
                 llm_evidence_chars: int = 900):
        self.embedder = embedder
        self.llm = llm
        self.confidence_threshold = confidence_threshold
        self.max_partial_ratio = max_partial_ratio
        self.max_claims = max_claims
        self.support_floor = support_floor
        self.sim_low, self.sim_high = sim_low, sim_high
        self.max_units_per_evidence = max_units_per_evidence
        self.llm_evidence_chars = llm_evidence_chars
        self.lexical_shortcut = 0.98   # lexical coverage at/above which the embedding check is skipped
        self._vec_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._vec_cache_size = 4096

    @property
    def policy(self) -> PassPolicy:
        return PassPolicy(self.confidence_threshold, self.max_partial_ratio, self.max_claims)

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Embeddings with a small LRU cache (re-verification after re-retrieval repeats most texts)."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._vec_cache))
        if todo:
            vecs = np.asarray(self.embedder.embed(todo), dtype=np.float32)
            for t, v in zip(todo, vecs):
                self._vec_cache[t] = v
            while len(self._vec_cache) > self._vec_cache_size:
                self._vec_cache.popitem(last=False)
        out = []
        for t in texts:
            self._vec_cache.move_to_end(t)
            out.append(self._vec_cache[t])
        return np.stack(out) if out else np.zeros((0, 1), dtype=np.float32)

    def verify(self, draft: Draft, evidence: list[Evidence], presentation: str | None = None) -> Verification:
        known = {ev.id for ev in evidence}

        # 1. citations
        text = draft.text
        if not text.strip():
            text = compose_text(draft)
        cleaned, fabricated = clean_citations(text, known)
        cleaned_draft = draft.model_copy(deep=True)
        cleaned_draft.text, _ = clean_citations(draft.text, known) if draft.text.strip() else ("", [])
        for item in cleaned_draft.differential:
            keep = []
            for c in item.citations:
                if resolve(c, known)[0] == "valid":
                    keep.append(c)
                else:
                    fabricated.append(c.strip())
            item.citations = keep
            item.rationale, fab = clean_citations(item.rationale, known)
            fabricated.extend(fab)
        cleaned_draft.next_steps = [clean_citations(s, known)[0] for s in cleaned_draft.next_steps]
        fabricated = list(dict.fromkeys(f for f in fabricated if f))

        # 2. claims
        claims, skipped = split_claims(cleaned, known)
        overflow = 0
        if len(claims) > self.max_claims:
            overflow = len(claims) - self.max_claims
            claims = claims[: self.max_claims]

        # 3. deterministic
        scorer = ClaimScorer(evidence, presentation, embed=self._embed if self.embedder is not None else None,
                             support_floor=self.support_floor, sim_low=self.sim_low, sim_high=self.sim_high,
                             lexical_shortcut=self.lexical_shortcut,
                             max_units_per_evidence=self.max_units_per_evidence)
        checked = scorer.select(claims, skipped)
        checks: list[ClaimCheck] = [scorer.score(sc) for sc in checked]
        notes: list[str] = list(scorer.notes)

        # 4. LLM
        if self.llm is not None and getattr(self.llm, "enabled", False) and checks:
            judge(self.llm, [sc.claim for sc in checked], checks, scorer.cited_text, notes, self.llm_evidence_chars)

        # 5. pass rule
        policy = self.policy
        reasons = policy.reasons(checks, overflow, draft.insufficient)
        if fabricated:
            notes.append(f"removed {len(fabricated)} fabricated citation(s): {', '.join(fabricated[:10])}")
        return Verification(claims=checks, fabricated_citations=fabricated, passed=not reasons,
                            supported_ratio=policy.supported_ratio(checks), reasons=reasons, notes=notes,
                            cleaned_text=cleaned_draft.text if draft.text.strip() else cleaned,
                            cleaned_draft=cleaned_draft)


__all__ = ["Verifier"]

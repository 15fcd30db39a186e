"""Verifier agent: checks every claim of a draft answer against the evidence it cites.

- :mod:`.citations`: parse, clean and strip inline citations (fabricated ids removed);
- :mod:`.claims`: split an answer into claims (list items and sentences) with their citations;
- :mod:`.scoring`: the deterministic check (lexical coverage, similarity, negation mismatch);
- :mod:`.judge`: the LLM judge and how its verdict combines with the deterministic one;
- :mod:`.policy`: the pass rule;
- :mod:`.agent`: :class:`Verifier`, which runs the steps.
"""
from .agent import Verifier
from .citations import Citation, clean_citations, parse_citations, strip_citations
from .claims import Claim, split_claims
from .judge import combine
from .policy import PassPolicy
from .scoring import content_stems, negated_stems, stem

__all__ = ["Verifier", "Citation", "Claim", "PassPolicy", "parse_citations", "clean_citations",
           "strip_citations", "split_claims", "combine", "negated_stems", "content_stems", "stem"]

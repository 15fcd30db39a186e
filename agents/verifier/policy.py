"""Pass rule of a verification.

An answer passes when: no claim is CONTRADICTED; no clinical claim lacks a citation; every SUPPORTED claim has
confidence ``>= confidence_threshold``; the share of claims not fully supported (INSUFFICIENT, or SUPPORTED
below the threshold) is ``<= max_partial_ratio``; there is at least one claim; and no claim was left unchecked
beyond ``max_claims``. ``reasons`` names each failed claim and check (and only failures).
"""
from __future__ import annotations

from dataclasses import dataclass

from agents.types import ClaimCheck


def _short(c: ClaimCheck) -> str:
    return c.claim if len(c.claim) <= 120 else c.claim[:117] + "..."


@dataclass(frozen=True)
class PassPolicy:
    confidence_threshold: float = 0.75
    max_partial_ratio: float = 0.10
    max_claims: int = 40

    def fully_supported(self, c: ClaimCheck) -> bool:
        return c.verdict == "SUPPORTED" and c.confidence >= self.confidence_threshold

    def supported_ratio(self, checks: list[ClaimCheck]) -> float:
        n = len(checks)
        return round(sum(self.fully_supported(c) for c in checks) / n, 4) if n else 0.0

    def reasons(self, checks: list[ClaimCheck], overflow: int = 0, insufficient: bool = False) -> list[str]:
        """Why the answer fails (empty when it passes). ``overflow``: claims beyond ``max_claims``;
        ``insufficient``: the draft declares insufficient evidence (named when there is no claim)."""
        reasons: list[str] = []
        n = len(checks)
        partial = [i for i, c in enumerate(checks) if not self.fully_supported(c) and c.verdict != "CONTRADICTED"]
        for i, c in enumerate(checks, 1):
            if c.verdict == "CONTRADICTED":
                reasons.append(f"claim {i} CONTRADICTED by {', '.join(c.citations)}: \"{_short(c)}\" ({c.note})")
            elif not c.citations:
                reasons.append(f"claim {i} has no citation: \"{_short(c)}\"")
            elif c.verdict == "SUPPORTED" and c.confidence < self.confidence_threshold:
                reasons.append(f"claim {i} SUPPORTED with low confidence {c.confidence:.2f} < "
                               f"{self.confidence_threshold}: \"{_short(c)}\" ({c.note})")
        ratio = len(partial) / n if n else 1.0
        if n and ratio > self.max_partial_ratio:
            reasons.append(f"{len(partial)}/{n} claims not fully supported ({ratio:.0%} > "
                           f"{self.max_partial_ratio:.0%}): claims {', '.join(str(i + 1) for i in partial)}")
            for i in partial:
                c = checks[i]
                if c.verdict == "INSUFFICIENT" and c.citations:
                    reasons.append(f"claim {i + 1} INSUFFICIENT against {', '.join(c.citations)}: "
                                   f"\"{_short(c)}\" ({c.note})")
        if n == 0:
            reasons.append("no verifiable claims in the answer"
                           + (" (the draft declares insufficient evidence)" if insufficient else ""))
        if overflow:
            reasons.append(f"{overflow} claims beyond max_claims={self.max_claims} were not checked")
        return reasons


__all__ = ["PassPolicy"]

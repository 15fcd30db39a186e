"""LLM judge: one structured call judges all cited claims against their fenced evidence texts.

The prompt is ``prompts/verify.txt``; the evidence texts are data, instructions inside them are to be ignored.
Combination (:func:`combine`) of the deterministic verdict ``d`` (confidence ``c_d``) with the LLM's ``l``
(confidence ``c_l``), with the order CONTRADICTED < INSUFFICIENT < SUPPORTED:

- agree: confidence ``c_d + 0.5 * (1 - c_d) * c_l``;
- LLM lower (a downgrade): the LLM's verdict, except that SUPPORTED -> CONTRADICTED needs ``c_l >= 0.7``
  (else INSUFFICIENT); confidence ``c_l * (1 - 0.5 * c_d)``;
- LLM higher: the deterministic verdict stays; confidence ``c_d * (1 - 0.5 * c_l)``.

An LLM error (or a missing judgment) leaves the deterministic result and records why in the verification's
notes and in the claim's note.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from agents.prompts import load_prompt
from agents.textutil import fence
from agents.types import ClaimCheck, Verdict

from .claims import Claim

PROMPT = "verify"
_RANK = {"CONTRADICTED": 0, "INSUFFICIENT": 1, "SUPPORTED": 2}


class Judgment(BaseModel):
    claim: int
    verdict: str
    confidence: float = 0.5
    reason: str = ""

    @field_validator("confidence", mode="before")
    @classmethod
    def _clip(cls, v: Any) -> float:
        try:
            return min(1.0, max(0.0, float(v)))
        except (TypeError, ValueError):
            return 0.5

    @field_validator("verdict", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> str:
        s = str(v).strip().upper()
        for name in ("SUPPORTED", "CONTRADICTED", "INSUFFICIENT"):
            if s.startswith(name[:6]):
                return name
        return "INSUFFICIENT"


class Judgments(BaseModel):
    judgments: list[Judgment] = Field(default_factory=list)


def combine(det: Verdict, c_d: float, llm: Verdict, c_l: float) -> tuple[Verdict, float]:
    """Combine a deterministic verdict with an LLM verdict (see the module docstring)."""
    if det == llm:
        return det, c_d + 0.5 * (1.0 - c_d) * c_l
    if _RANK[llm] < _RANK[det]:
        verdict: Verdict = llm
        if det == "SUPPORTED" and llm == "CONTRADICTED" and c_l < 0.7:
            verdict = "INSUFFICIENT"
        return verdict, c_l * (1.0 - 0.5 * c_d)
    return det, c_d * (1.0 - 0.5 * c_l)


def judge_messages(claims: list[Claim], cited_text: dict[str, tuple[str, str | None]],
                   evidence_chars: int = 900) -> tuple[list[dict[str, str]], list[int]]:
    """The judge's messages and the (1-based) numbers of the claims it is asked about (the cited ones)."""
    items = []
    for i, cl in enumerate(claims, 1):
        if not cl.citations:
            continue
        blocks = []
        for c in cl.citations:
            txt = cited_text[c.raw][0]
            if len(txt) > evidence_chars:
                txt = txt[:evidence_chars].rsplit(" ", 1)[0] + " ..."
            blocks.append(f"<<<EVIDENCE id={c.id}>>>\n{fence(txt)}\n<<<END>>>")
        items.append((i, f"Claim {i}: {fence(cl.clean)}\n" + "\n".join(blocks)))
    if not items:
        return [], []
    user = ("Judge each claim against the evidence quoted under it.\n\n" + "\n\n".join(t for _, t in items)
            + f"\n\nReturn one judgment for each of the claims {', '.join(str(i) for i, _ in items)}.")
    return [{"role": "system", "content": load_prompt(PROMPT)}, {"role": "user", "content": user}], \
        [i for i, _ in items]


def judge(llm: Any, claims: list[Claim], checks: list[ClaimCheck], cited_text: dict[str, tuple[str, str | None]],
          notes: list[str], evidence_chars: int = 900) -> None:
    """Ask the LLM about the cited claims and fold its judgments into ``checks`` (in place)."""
    msgs, numbers = judge_messages(claims, cited_text, evidence_chars)
    if not numbers:
        return
    try:
        res = llm.structured(msgs, Judgments, tag="verify")
        value, error = getattr(res, "value", None), getattr(res, "error", None)
    except Exception as exc:  # noqa: BLE001 — never let the judge break verification
        value, error = None, f"{type(exc).__name__}: {exc}"
    if value is None:
        notes.append(f"LLM check unavailable ({error}); deterministic verdicts only")
        for chk in checks:
            if chk.citations:
                chk.note = (chk.note + "; " if chk.note else "") + "LLM check unavailable"
        return
    by_claim = {j.claim: j for j in value.judgments}
    missing = []
    for i in numbers:
        chk = checks[i - 1]
        j = by_claim.get(i)
        if j is None:
            missing.append(str(i))
            chk.note += "; no LLM judgment"
            continue
        verdict, conf = combine(chk.verdict, chk.confidence, j.verdict, j.confidence)  # type: ignore[arg-type]
        chk.note += f"; LLM {j.verdict} ({j.confidence:.2f}): {j.reason[:160]}"
        chk.verdict, chk.confidence, chk.method = verdict, round(conf, 4), "deterministic+llm"
    if missing:
        notes.append(f"LLM gave no judgment for claims {', '.join(missing)}; deterministic verdicts used")


__all__ = ["Judgment", "Judgments", "combine", "judge", "judge_messages"]

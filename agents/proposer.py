"""Proposer agent: the language model's own differential, asked once, before retrieval.

The model reads the presentation and the findings the extractor recognised and names up to ``k`` diseases, most
likely first. Each name is linked to a knowledge-graph disease where it resolves (name, synonym, abbreviation,
cross-reference; then the name without a parenthesis or leading qualifiers), so that retrieval can look for
evidence for and against it. A name the graph does not know is kept: it enters the differential marked "model
only, no evidence" unless reference texts about it turn up.

Without an LLM (or when the call fails) there is no proposal and the pipeline is the offline one.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field, create_model, field_validator

from .textutil import fence
from .types import Extraction, ProposedDiagnosis

# words a model puts before a disease name that the KG's names usually lack
_QUALIFIERS = {"acute", "chronic", "suspected", "possible", "probable", "likely", "viral", "bacterial", "severe",
               "mild", "early", "primary", "secondary", "uncomplicated", "complicated", "recurrent", "idiopathic",
               "community-acquired", "seasonal", "simple"}
_PAREN = re.compile(r"\s*\(([^)]*)\)\s*")
_SPLIT = re.compile(r"\s*(?:/|\bor\b|;)\s*", re.I)
# what a small model appends to a diagnosis ("peptic ulcer disease with severe vomiting", "osteoporosis with
# subperiosteal resorption", "anemia due to blood loss"): the name before it is tried after the name as written
_TAIL = re.compile(r"\s*(?:\s-\s|\b(?:with(?:out)?|due\s+to|secondary\s+to|caused\s+by|associated\s+with|"
                   r"complicated\s+by|in\s+the\s+setting\s+of|following|presenting\s+with)\b).*$", re.I)


# a reason's length, capped in the schema (constrained decoding stops the string there, so a small model's long
# reasons cannot run a reply into max_tokens) and on parsing (a server without constrained decoding)
REASON_CHARS = 100
# reply tokens a diagnosis needs at most (name, capped reason, JSON punctuation), for a call's max_tokens
ITEM_TOKENS = 64


class _Proposed(BaseModel):
    name: str
    reason: str = Field("", json_schema_extra={"maxLength": REASON_CHARS})

    @field_validator("name", "reason", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str:
        return " ".join(str(v or "").split())

    @field_validator("reason")
    @classmethod
    def _cap(cls, v: str) -> str:
        return v if len(v) <= REASON_CHARS else v[:REASON_CHARS].rsplit(" ", 1)[0]


class ProposalReply(BaseModel):
    """The JSON the model answers with."""

    diagnoses: list[_Proposed] = Field(default_factory=list)


@lru_cache(maxsize=None)
def alternatives_schema(n: int) -> type[BaseModel]:
    """The widening call's reply: 2..``n`` diagnoses (schema-constrained decoding makes a small model give them)."""
    return create_model(f"AlternativesReply{n}", __base__=ProposalReply,
                        diagnoses=(list[_Proposed], Field(min_length=min(2, n), max_length=n)))


def name_variants(name: str) -> list[str]:
    """Ways to look a model's disease name up, most literal first: as written; without a parenthesis; the
    parenthesis itself (often an abbreviation); each alternative of "A / B"; without what follows the name ("peptic
    ulcer disease with severe vomiting" -> "peptic ulcer disease"); then without leading qualifiers ("acute viral
    bronchitis" -> "viral bronchitis" -> "bronchitis")."""
    out: list[str] = []

    def add(s: str) -> None:
        s = " ".join(s.strip(" .,:;-").split())
        if s and s.lower() not in {o.lower() for o in out}:
            out.append(s)

    add(name)
    inner = _PAREN.findall(name)
    bare = _PAREN.sub(" ", name)
    add(bare)
    for part in _SPLIT.split(bare):
        add(part)
    for i in inner:
        add(i)
    for s in list(out):
        head = _TAIL.sub("", s)
        if head and head != s:
            add(head)
    for s in list(out):
        words = s.split()
        while len(words) > 1 and words[0].lower().strip(",") in _QUALIFIERS:
            words = words[1:]
            add(" ".join(words))
    return out


def link_name(kg: Any, name: str) -> tuple[str | None, str | None]:
    """(concept id, concept name) of the KG disease a model's name denotes, or (None, None)."""
    if kg is None:
        return None, None
    from knowledge.kg.graph import first_match  # noqa: PLC0415

    # as written first; then the spellings clinicians' names differ from the vocabularies' by (KnowledgeGraph.resolve)
    hits = first_match(kg, name_variants(name), categories=["disease"])
    return (hits[0].id, hits[0].name) if hits else (None, None)


def findings_block(extraction: Extraction | None) -> str:
    """The extractor's findings as a short block for the prompt (present, absent, age and sex)."""
    if extraction is None:
        return "Findings recognised: none."
    present = list(dict.fromkeys(e.text for e in extraction.current()))
    absent = list(dict.fromkeys(e.text for e in extraction.negated() if not e.measured))
    normal = list(dict.fromkeys(e.text for e in extraction.negated() if e.measured))   # in-range values
    who = []
    if extraction.age_years is not None:
        who.append(f"age {extraction.age_years:g}")
    if extraction.sex:
        who.append(extraction.sex)
    lines = [f"Findings a text extractor recognised (symptoms and signs, not diagnoses): "
             f"{'; '.join(present[:25]) or 'none'}."]
    if absent:
        lines.append(f"Stated as absent: {'; '.join(absent[:15])}.")
    if normal:
        lines.append(f"Measured within normal limits: {'; '.join(normal[:15])}.")
    if who:
        lines.append(f"Patient: {', '.join(who)}.")
    return "\n".join(lines)


PROMPTS = ("differential", "direct")


class Proposer:
    """``prompt``: "differential" asks with the propose prompt (the presentation and the extracted findings, names
    and short reasons); "direct" asks exactly what the model-alone baseline asks (``--mode direct``: the
    presentation only) and takes its differential as the proposal, so the pipeline starts from the model's own
    answer and a benchmark that ran the baseline pays nothing more for the call (same request, cached)."""

    def __init__(self, llm: Any = None, kg: Any = None, k: int = 5, max_tokens: int = 256,
                 prompt: str = "differential", direct_min: int = 1):
        if prompt not in PROMPTS:
            raise ValueError(f"unknown proposal prompt {prompt!r}; choose one of {', '.join(PROMPTS)}")
        self.llm = llm
        self.kg = kg
        self.k = k
        self.max_tokens = max_tokens
        self.prompt = prompt
        self.direct_min = direct_min     # prompt "direct": the model-alone request's minimum number of diagnoses

    @property
    def enabled(self) -> bool:
        return self.llm is not None and getattr(self.llm, "enabled", False)

    def propose(self, presentation: str, extraction: Extraction | None
                ) -> tuple[list[ProposedDiagnosis], list[str], dict[str, Any]]:
        """(the model's diagnoses, linked where possible; warnings; prompt info for the trace)."""
        from .prompts import load_prompt

        if not self.enabled:
            return [], [], {}
        if self.prompt == "direct":
            return self._propose_direct(presentation)
        msgs = [{"role": "system", "content": load_prompt("propose_system", k=str(self.k))},
                {"role": "user", "content": load_prompt("propose_user", presentation=fence(presentation),
                                                        findings=findings_block(extraction))}]
        res = self.llm.structured(msgs, ProposalReply, tag="propose",
                                  max_tokens=max(self.max_tokens, 32 + ITEM_TOKENS * self.k))
        info = {"messages": msgs, "raw": getattr(res, "raw", None)}
        if res.value is None:
            return [], [f"propose: the language model gave no usable differential ({res.error}); "
                        "the differential is the knowledge-based one"], info
        return self.link(res.value), [], info

    def _propose_direct(self, presentation: str) -> tuple[list[ProposedDiagnosis], list[str], dict[str, Any]]:
        from .generator import direct_messages, direct_reply_schema  # noqa: PLC0415

        msgs = direct_messages(presentation, self.k, self.direct_min)
        res = self.llm.structured(msgs, direct_reply_schema(self.k, self.direct_min),
                                  tag="propose")   # the baseline's request, unchanged
        info = {"messages": msgs, "raw": getattr(res, "raw", None), "prompt": "direct"}
        if res.value is None:
            return [], [f"propose: the language model gave no usable differential ({res.error}); "
                        "the differential is the knowledge-based one"], info
        reply = ProposalReply(diagnoses=[_Proposed(name=d.diagnosis, reason=d.rationale)
                                         for d in res.value.differential])
        return self.link(reply), [], info

    def alternatives(self, presentation: str, first: list[ProposedDiagnosis], n: int = 4
                     ) -> tuple[list[ProposedDiagnosis], list[str], dict[str, Any]]:
        """The widening call: ``n`` more diagnoses the model would still consider, beside its ``first`` answer
        (asked separately so the first answer stays what the model alone says). Linked like the proposal; a name
        the first answer already holds is dropped; ranks continue after the first answer's."""
        from .prompts import load_prompt  # noqa: PLC0415

        if not self.enabled or n <= 0:
            return [], [], {}
        listed = "; ".join(x.name for x in first) or "nothing usable"
        msgs = [{"role": "system", "content": load_prompt("alternatives_system", count=f"2 to {n}")},
                {"role": "user", "content": load_prompt("alternatives_user", presentation=fence(presentation),
                                                        first=listed)}]
        res = self.llm.structured(msgs, alternatives_schema(n), tag="alternatives",
                                  max_tokens=max(self.max_tokens, 32 + ITEM_TOKENS * n))
        info = {"messages": msgs, "raw": getattr(res, "raw", None), "prompt": "alternatives"}
        if res.value is None:
            return [], [f"alternatives: the language model gave no usable list ({res.error}); the differential "
                        "keeps the model's first answer only"], info
        taken = {x.concept_id or x.name.lower() for x in first}
        out: list[ProposedDiagnosis] = []
        for x in self.link(ProposalReply(diagnoses=res.value.diagnoses), limit=n, skip=taken):
            out.append(x.model_copy(update={"rank": len(first) + len(out) + 1, "alternative": True}))
        return out, [], info

    def _is_finding(self, name: str) -> bool:
        """True when ``name`` is a symptom or phenotype in the KG (and not a disease)."""
        if self.kg is None:
            return False
        hits = self.kg.lookup(name, categories=["symptom", "phenotype"])
        return bool(hits)

    def link(self, reply: ProposalReply, limit: int | None = None, skip: set[str] | None = None
             ) -> list[ProposedDiagnosis]:
        """The reply's diagnoses linked to KG diseases, at most ``limit`` (default ``k``), a symptom named as a
        diagnosis and a second name of one disease left out, as are the keys in ``skip``."""
        out: list[ProposedDiagnosis] = []
        seen: set[str] = set(skip or ())
        for d in reply.diagnoses:
            if not d.name or len(out) >= (self.k if limit is None else limit):
                continue
            cid, cname = link_name(self.kg, d.name)
            if cid is None and self._is_finding(d.name):   # a symptom named as a diagnosis: not a candidate
                continue
            key = cid or d.name.lower()
            if key in seen:          # two names for one disease: the first (higher) rank stands
                continue
            seen.add(key)
            out.append(ProposedDiagnosis(rank=len(out) + 1, name=d.name, reason=d.reason[:200], concept_id=cid,
                                         concept_name=cname))
        return out

"""Generator agent: a ranked differential with inline citations, from supplied evidence only.

- With an LLM: one structured call; the raw presentation stays in the prompt next to the evidence sentences
  (ontology terms alone lose information), and the evidence block is cut to the input-token cap.
- Without an LLM (or when the call fails): an extractive composer built from the KG ranking and the KNL
  sentences, so every clinical sentence is a cited evidence sentence.
- With no usable evidence: "Insufficient evidence — escalate to clinician", never an unsupported answer.
"""
from __future__ import annotations

import re
from typing import Callable, Literal

from pydantic import BaseModel, Field

from .textutil import fence, is_question, sentences, terms
from .types import Candidate, DifferentialItem, Draft, Evidence, Extraction, Sentence

INSUFFICIENT = "Insufficient evidence — escalate to clinician."
_TESTY = re.compile(r"\b(test|tests|testing|scan|x-ray|xray|radiograph|ct|mri|ultrasound|biopsy|culture|blood|urine|"
                    r"urinalysis|ecg|ekg|electrocardiogram|spirometry|troponin|swab|pcr|exam|examination|diagnos\w*|"
                    r"measure\w*|level|levels|count|imaging|endoscopy|colonoscopy|lumbar puncture|screen\w*)\b", re.I)


def cite(ids: list[str], spans: dict[str, tuple[int, int] | None] | None = None) -> str:
    out = []
    for i in ids:
        sp = (spans or {}).get(i)
        out.append(f"[{i}:{sp[0]}-{sp[1]}]" if sp else f"[{i}]")
    return "".join(out)


class _DxItem(BaseModel):
    diagnosis: str
    likelihood: Literal["high", "moderate", "low"] = "moderate"
    rationale: str = ""
    citations: list[str] = Field(default_factory=list)


class _Step(BaseModel):
    text: str
    citations: list[str] = Field(default_factory=list)


class _LLMDraft(BaseModel):
    differential: list[_DxItem] = Field(default_factory=list)
    next_steps: list[_Step] = Field(default_factory=list)
    insufficient: bool = False


# the extractive composer's likelihood words, by a candidate's score relative to the top candidate's
LIKELIHOOD_HIGH = 0.75
LIKELIHOOD_MODERATE = 0.4


class Generator:
    def __init__(self, llm=None, differential_k: int = 5, max_input_tokens: int = 4096,
                 count_tokens: Callable[[str], int] | None = None, reserve_output_tokens: int = 768):
        self.llm = llm
        self.k = differential_k
        self.max_input_tokens = max_input_tokens
        self.reserve = min(reserve_output_tokens, max_input_tokens // 3)
        if count_tokens is None:
            from knowledge.tokens import count_tokens as _ct
            count_tokens = _ct
        self.count = count_tokens

    # ---- budget -------------------------------------------------------------------------------------------
    def budget(self, presentation: str, sentences_: list[Sentence], fixed_tokens: int = 0) -> list[Sentence]:
        """Evidence sentences (already in relevance order) that fit the input-token cap with the presentation."""
        room = self.max_input_tokens - self.reserve - fixed_tokens - self.count(presentation)
        kept = []
        for s in sentences_:
            if not s.text.strip():   # a passage with nothing to quote (only question headings)
                continue
            n = self.count(s.full) + 12  # id + fence overhead
            if n > room:
                continue
            kept.append(s)
            room -= n
        return kept

    # ---- entry points -------------------------------------------------------------------------------------
    def generate(self, presentation: str, extraction: Extraction | None, candidates: list[Candidate],
                 sentences_: list[Sentence], evidence: list[Evidence],
                 attempt: int = 0) -> tuple[Draft, list[str], dict]:
        """Return (draft, warnings, prompt-info for the trace)."""
        warnings: list[str] = []
        info: dict = {}
        if not evidence or not sentences_:
            return Draft(text=INSUFFICIENT, insufficient=True), warnings, info
        if self.llm is not None and getattr(self.llm, "enabled", False):
            draft, info, err = self._llm(presentation, candidates, sentences_, evidence, attempt)
            if draft is not None:
                return draft, warnings, info
            warnings.append(f"generator: LLM unavailable ({err}); extractive answer from the knowledge graph ranking")
        kept = self.budget(presentation, sentences_)
        return self._extractive(candidates, kept, evidence), warnings, info

    def direct(self, presentation: str) -> tuple[Draft, list[str], dict]:
        """Baseline: the LLM alone, no retrieval."""
        from .prompts import load_prompt

        if self.llm is None or not getattr(self.llm, "enabled", False):
            return (Draft(text="Direct mode needs an LLM; none is configured.", insufficient=True, origin="direct"),
                    ["direct mode: no LLM configured"], {})
        msgs = [{"role": "system", "content": load_prompt("direct_system", k=str(self.k))},
                {"role": "user", "content": load_prompt("direct_user", presentation=fence(presentation))}]
        res = self.llm.structured(msgs, _LLMDraft, tag="direct")
        info = {"messages": msgs, "raw": getattr(res, "raw", None)}
        if res.value is None:
            return (Draft(text=f"The language model did not answer ({res.error}).", insufficient=True,
                          origin="direct"), [f"direct: LLM error ({res.error})"], info)
        items = [DifferentialItem(rank=i + 1, diagnosis=d.diagnosis.strip(), likelihood=d.likelihood,
                                  rationale=d.rationale.strip())
                 for i, d in enumerate(res.value.differential[: self.k]) if d.diagnosis.strip()]
        text = "Differential diagnosis (language model only, no retrieved evidence):\n" + "\n".join(
            f"{it.rank}. {it.diagnosis} — {it.likelihood}. {it.rationale}".rstrip() for it in items)
        return Draft(differential=items, text=text, origin="direct",
                     next_steps=[s.text for s in res.value.next_steps]), [], info

    # ---- LLM ----------------------------------------------------------------------------------------------
    def _llm(self, presentation, candidates, sentences_, evidence, attempt):
        from .prompts import load_prompt

        system = load_prompt("generate_system", k=str(self.k))
        cand_lines = "\n".join(f"- {c.name} ({c.concept_id}); knowledge-graph score {c.score:.2f}; "
                               f"evidence: {', '.join(c.supporting[:4]) or 'none'}" for c in candidates[: self.k * 2])
        fixed = self.count(system) + self.count(cand_lines) + 200
        kept = self.budget(presentation, sentences_, fixed)
        retry = ("A previous draft failed verification: cite only the ids above and state only what they say."
                 if attempt else "")

        def build(kept_):
            listing = "\n".join(f"<<<EVIDENCE id={s.evidence_id}>>>\n{fence(s.full)}\n<<<END>>>" for s in kept_)
            user = load_prompt("generate_user", presentation=fence(presentation), candidates=cand_lines or "- none",
                               evidence=listing, retry=retry)
            return [{"role": "system", "content": system}, {"role": "user", "content": user}]

        msgs = build(kept)
        fits = getattr(self.llm, "fits", None)
        if fits is not None:   # the endpoint's own token count decides; shrink the evidence until it fits
            for _ in range(6):
                ok, n = fits(msgs, _LLMDraft)
                if ok or not kept:
                    break
                cut = max(1, int(len(kept) * (1 - (self.max_input_tokens / n)) + 0.2 * len(kept)))
                kept = kept[: max(0, len(kept) - cut)]
                msgs = build(kept)
        user = msgs[1]["content"]
        res = self.llm.structured(msgs, _LLMDraft, tag="generate")
        info = {"messages": msgs, "raw": getattr(res, "raw", None), "evidence_in_prompt": len(kept),
                "prompt_tokens_counted": self.count(system) + self.count(user)}
        if res.value is None:
            return None, info, res.error
        v = res.value
        spans = {s.evidence_id: s.span for s in kept}
        items = []
        for d in v.differential[: self.k]:
            if not d.diagnosis.strip():
                continue
            items.append(DifferentialItem(rank=len(items) + 1, diagnosis=d.diagnosis.strip(),
                                          concept_id=_match_candidate(d.diagnosis, candidates),
                                          likelihood=d.likelihood, rationale=d.rationale.strip(),
                                          citations=[c.strip().strip("[]") for c in d.citations]))
        if v.insufficient or not items:
            return Draft(text=INSUFFICIENT, insufficient=True, origin="llm"), info, None
        lines = ["### Differential diagnosis (for clinician review)"]
        for it in items:
            lines.append(f"#### {it.rank}. {it.diagnosis} (likelihood: {it.likelihood})")
            if it.rationale:
                lines.append(f"   {_cite_each(it.rationale, cite(it.citations, spans))}")
        steps = []
        if v.next_steps:
            lines.append("### Suggested next steps")
            for st in v.next_steps[:5]:
                line = f"{st.text.strip()} {cite([c.strip().strip('[]') for c in st.citations], spans)}".rstrip()
                steps.append(line)
                lines.append(f"- {line}")
        return Draft(differential=items, next_steps=steps, text="\n".join(lines), origin="llm"), info, None

    # ---- extractive ---------------------------------------------------------------------------------------
    def _extractive(self, candidates: list[Candidate], kept: list[Sentence], evidence: list[Evidence]) -> Draft:
        by_id = {s.evidence_id: s for s in kept}
        ev_by_id = {e.id: e for e in evidence}
        used: set[str] = set()
        items: list[DifferentialItem] = []
        lines = ["### Differential diagnosis (for clinician review)"]
        top = candidates[0].score if candidates else 0.0
        for c in candidates:
            if len(items) >= self.k:
                break
            support = [i for i in (_eid(t) for t in c.supporting) if i in by_id and i not in used][:2]
            name_terms = terms(c.name)
            chunk_ids = [s.evidence_id for s in kept
                         if s.evidence_id not in used and ev_by_id[s.evidence_id].kind == "chunk"
                         and (c.concept_id in ev_by_id[s.evidence_id].concept_ids
                              or name_terms and name_terms <= terms(ev_by_id[s.evidence_id].meta.get("focus", "")))]
            definition = [s.evidence_id for s in kept if s.evidence_id == f"G:{c.concept_id}#definition"]
            quotes = {i: _cite_each(by_id[i].text, cite([i], {i: by_id[i].span}))
                      for i in support + definition[:1] + chunk_ids[:1]}
            chosen = [i for i, q in quotes.items() if q]
            if not chosen:
                continue
            rel = c.score / top if top else 0.0
            lik = "high" if rel >= LIKELIHOOD_HIGH else "moderate" if rel >= LIKELIHOOD_MODERATE else "low"
            parts = []
            for i in chosen:
                if by_id[i].lead:   # where a quote comes from: a heading line, not a claim
                    parts.append(f"##### {by_id[i].lead}")
                parts.append(quotes[i])
            items.append(DifferentialItem(rank=len(items) + 1, diagnosis=c.name, concept_id=c.concept_id,
                                          likelihood=lik, rationale=" ".join(p for p in parts if not p.startswith("#")),
                                          citations=chosen))
            used.update(chosen)
            lines.append(f"#### {items[-1].rank}. {c.name} (likelihood: {lik}; score {c.score:.2f})")
            lines.extend(f"   {p}" for p in parts)
        if not items:
            # no rankable disease: report the most relevant reference passages, and escalate
            lines = ["No diagnosis could be ranked from the knowledge graph for these findings.",
                     "Most relevant reference passages:"]
            for s in [s for s in kept if ev_by_id[s.evidence_id].kind == "chunk"][:3]:
                quote = _cite_each(s.text, cite([s.evidence_id], {s.evidence_id: s.span}))
                if quote:
                    lines.append(f"- {quote}")
            return Draft(text="\n".join(lines + [INSUFFICIENT]), insufficient=True, origin="extractive")
        steps = self._next_steps(items, kept, ev_by_id)
        if steps:
            lines.append("### Suggested next steps (from the retrieved references)")
            lines.extend(f"- {s}" for s in steps)
        return Draft(differential=items, next_steps=steps, text="\n".join(lines), origin="extractive")

    def _next_steps(self, items, kept, ev_by_id, limit: int = 3) -> list[str]:
        out = []
        names = [terms(it.diagnosis) for it in items[:3]]
        for s in kept:
            ev = ev_by_id[s.evidence_id]
            if ev.kind != "chunk":
                continue
            sec = (ev.meta.get("section") or "").lower()
            focus = terms(ev.meta.get("focus", ""))
            if not any(n and n <= focus for n in names):
                continue
            if "test" not in sec and "diagnos" not in sec and "exam" not in sec:
                continue
            txt = ev.text
            for a, b in sentences(txt):
                sent = txt[a:b]
                if _TESTY.search(sent) and 30 <= len(sent) <= 400:
                    span = (ev.span[0] + a, ev.span[0] + b) if ev.span else None
                    out.append(f"{ev.meta.get('focus', '')}: {sent} {cite([ev.id], {ev.id: span})}")
                    break
            if len(out) >= limit:
                break
        return out


def _eid(triple_id: str) -> str:
    """Evidence id of a KG triple id."""
    return triple_id if triple_id.startswith("G:") else f"G:{triple_id}"


def _cite_each(text: str, citation: str) -> str:
    """Put the citation after every sentence of ``text`` (each sentence is a claim the verifier checks). A question
    (a reference page's heading, "What are the symptoms of X?") is left out: it asserts nothing."""
    if not citation:
        return text
    spans = sentences(text) or [(0, len(text))]
    return " ".join(f"{text[a:b]} {citation}" for a, b in spans if not is_question(text[a:b]))


def _match_candidate(name: str, candidates: list[Candidate]) -> str | None:
    t = terms(name)
    for c in candidates:
        if terms(c.name) == t:
            return c.concept_id
    return None

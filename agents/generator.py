"""Generator agent: a ranked differential with inline citations, from supplied evidence only.

- With an LLM: one structured call; the raw presentation stays in the prompt next to the evidence sentences
  (ontology terms alone lose information), and the evidence block is cut to the input-token cap.
- Without an LLM (or when the call fails): an extractive composer built from the KG ranking and the KNL
  sentences, so every clinical sentence is a cited evidence sentence.
- With no usable evidence: "Insufficient evidence — escalate to clinician", never an unsupported answer.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Literal

from pydantic import BaseModel, Field, create_model

from .textutil import fence, is_boilerplate, is_question, sentences, terms
from .types import Candidate, DifferentialItem, Disagreement, Draft, Evidence, Extraction, Sentence

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


DirectReply = _LLMDraft   # the model-alone answer (``--mode direct``; also the "direct" proposal prompt)


@lru_cache(maxsize=32)
def direct_reply_schema(k: int, min_items: int = 1) -> type[BaseModel]:
    """The model-alone answer's schema: :data:`DirectReply`, or, asking for ``min_items`` > 1 diagnoses, a copy whose
    differential must hold ``min_items``..``k`` items (schema-constrained decoding makes a small model give them)."""
    if min_items <= 1:
        return DirectReply
    lo = min(min_items, k)
    return create_model(f"DirectReply{lo}to{k}", __base__=_LLMDraft,
                        differential=(list[_DxItem], Field(min_length=lo, max_length=k)))


def direct_messages(presentation: str, k: int, min_items: int = 1) -> list[dict[str, str]]:
    """The model-alone request: the direct prompts around the fenced presentation (``min_items``..``k`` diagnoses;
    ``min_items`` 1: at most ``k``)."""
    from .prompts import load_prompt

    count = f"at most {k}" if min_items <= 1 else f"{min(min_items, k)} to {k}"
    return [{"role": "system", "content": load_prompt("direct_system", k=str(k), count=count)},
            {"role": "user", "content": load_prompt("direct_user", presentation=fence(presentation))}]


class LLMRanking(BaseModel):
    """What the generator asks the model for on the pipeline path: the candidates it keeps, in its order, each
    with a cited rationale (the next steps come from the reference texts, so the reply stays short)."""

    differential: list[_DxItem] = Field(default_factory=list)
    insufficient: bool = False


# the extractive composer's likelihood words, by a candidate's score relative to the top candidate's
LIKELIHOOD_HIGH = 0.75
LIKELIHOOD_MODERATE = 0.4


class Generator:
    def __init__(self, llm=None, differential_k: int = 5, max_input_tokens: int = 4096,
                 count_tokens: Callable[[str], int] | None = None, reserve_output_tokens: int = 768,
                 generator_weight: float = 1.0, llm_evidence: int = 10, llm_max_tokens: int = 320,
                 direct_min: int = 1):
        self.llm = llm
        self.k = differential_k
        self.direct_min = direct_min               # diagnoses the model-alone request asks for at least
        self.generator_weight = generator_weight   # the model's own order, fused with the candidates' scores
        self.llm_evidence = llm_evidence           # evidence sentences in the generator's prompt at most
        self.llm_max_tokens = llm_max_tokens
        self.llm_words = 60                        # words of each evidence sentence shown to the model
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
        kept = self.budget(presentation, sentences_)
        extractive = self._extractive(candidates, kept, evidence)
        draft = extractive
        if self.llm is not None and getattr(self.llm, "enabled", False):
            ranking, info, err = self._llm(presentation, candidates, sentences_, evidence, attempt)
            if ranking is not None:
                draft = self.merge(ranking, extractive, candidates, kept)
                if info.get("dropped_citations"):
                    warnings.append(f"generator: dropped {len(info['dropped_citations'])} citation(s) of ids that "
                                    "are not in the evidence shown to the model")
            else:
                warnings.append(f"generator: LLM unavailable ({err}); extractive answer from the fused ranking")
        if not draft.insufficient:
            draft = self.with_disagreement(draft, candidates, kept, evidence)
        return draft, warnings, info

    def direct(self, presentation: str) -> tuple[Draft, list[str], dict]:
        """Baseline: the LLM alone, no retrieval."""
        if self.llm is None or not getattr(self.llm, "enabled", False):
            return (Draft(text="Direct mode needs an LLM; none is configured.", insufficient=True, origin="direct"),
                    ["direct mode: no LLM configured"], {})
        msgs = direct_messages(presentation, self.k, self.direct_min)
        res = self.llm.structured(msgs, direct_reply_schema(self.k, self.direct_min), tag="direct")
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
        """(the model's ranking as differential items, prompt info, error). The model orders the candidates (it
        may add one the evidence supports) and cites the evidence blocks; the caller fuses its order with the
        candidates' scores (:meth:`merge`)."""
        from .prompts import load_prompt

        system = load_prompt("generate_system", k=str(self.k))
        cand_lines = "\n".join(candidate_line(c) for c in candidates[: self.k + 3])
        fixed = self.count(system) + self.count(cand_lines) + 200
        kept = self.budget(presentation, _for_prompt(sentences_, candidates[: self.k + 3], evidence,
                                                     self.llm_evidence), fixed)
        retry = ("A previous draft failed verification: cite only the ids above and state only what they say."
                 if attempt else "")

        def build(kept_):
            # short ids (E1, E2, ...) in the prompt: a small model copies them reliably, and they cost few tokens
            listing = "\n".join(f"<<<EVIDENCE id=E{i}>>>\n{fence(_clip_words(s.full, self.llm_words))}\n<<<END>>>"
                                 for i, s in enumerate(kept_, 1))
            user = load_prompt("generate_user", presentation=fence(presentation), candidates=cand_lines or "- none",
                               evidence=listing, retry=retry)
            return [{"role": "system", "content": system}, {"role": "user", "content": user}]

        msgs = build(kept)
        fits = getattr(self.llm, "fits", None)
        if fits is not None:   # the endpoint's own token count decides; shrink the evidence until it fits
            for _ in range(6):
                ok, n = fits(msgs, LLMRanking)
                if ok or not kept:
                    break
                cut = max(1, int(len(kept) * (1 - (self.max_input_tokens / n)) + 0.2 * len(kept)))
                kept = kept[: max(0, len(kept) - cut)]
                msgs = build(kept)
        user = msgs[1]["content"]
        res = self.llm.structured(msgs, LLMRanking, tag="generate", max_tokens=self.llm_max_tokens)
        info = {"messages": msgs, "raw": getattr(res, "raw", None), "evidence_in_prompt": len(kept),
                "prompt_tokens_counted": self.count(system) + self.count(user)}
        if res.value is None:
            return None, info, res.error
        alias = {f"E{i}": s.evidence_id for i, s in enumerate(kept, 1)}
        known = {s.evidence_id for s in kept}
        items = []
        dropped: list[str] = []
        for d in res.value.differential[: self.k + 2]:
            name = d.diagnosis.strip()
            if not name:
                continue
            cits = list(dict.fromkeys(alias.get(c.strip().strip("[]").strip().upper(), c.strip().strip("[]"))
                                      for c in d.citations))
            items.append(DifferentialItem(rank=len(items) + 1, diagnosis=name,
                                          concept_id=_match_candidate(name, candidates),
                                          likelihood=d.likelihood, rationale=d.rationale.strip(),
                                          citations=[c for c in cits if c in known]))
            dropped += [c for c in cits if c not in known]
        info["dropped_citations"] = dropped
        return items, info, None

    def merge(self, ranking: list[DifferentialItem], extractive: Draft, candidates: list[Candidate],
              kept: list[Sentence]) -> Draft:
        """The final differential: the candidates' fused scores plus ``generator_weight / (3 + rank)`` for the
        model's own order; each diagnosis keeps the model's rationale when it cites evidence, else the extractive
        one, else it is marked "model only, no evidence" (a model-proposed disease) or left out."""
        spans = {s.evidence_id: s.span for s in kept}
        by_id = {c.concept_id: c for c in candidates}
        ext = {it.concept_id: it for it in extractive.differential if it.concept_id}
        gen: dict[str, DifferentialItem] = {}
        for it in ranking:
            key = it.concept_id or f"model:{it.diagnosis.lower()}"
            gen.setdefault(key, it)
        gen_rank = {key: i + 1 for i, key in enumerate(gen)}

        def score(key: str) -> float:
            base = by_id[key].score if key in by_id else 0.0
            return base + (self.generator_weight / (3.0 + gen_rank[key]) if key in gen_rank else 0.0)

        order = sorted(dict.fromkeys([*by_id, *gen]), key=lambda key: -score(key))
        items: list[DifferentialItem] = []
        for key in order:
            if len(items) >= self.k:
                break
            c, g, e = by_id.get(key), gen.get(key), ext.get(key)
            origins = list(c.origins) if c is not None else ["model"]
            note = f"demoted: {c.demoted}" if c is not None and c.demoted else ""
            if g is not None and g.citations and g.rationale:
                rationale = _cite_each(g.rationale, cite(g.citations, spans))
                item = g.model_copy(update={"rationale": rationale})
            elif e is not None:
                item = e.model_copy(update={"likelihood": g.likelihood if g is not None else e.likelihood})
            elif g is not None or (c is not None and "model" in c.origins):
                reason = (g.rationale if g is not None else "") or _model_reason(c)
                item = DifferentialItem(rank=0, diagnosis=g.diagnosis if g is not None else c.name,
                                        concept_id=None if key.startswith("model:") else key, likelihood="low",
                                        rationale="", citations=[])
                note = "; ".join(x for x in ("model only, no evidence",
                                             f"the model's reason (not checked): {reason}" if reason else "",
                                             note) if x)
            else:
                continue
            items.append(item.model_copy(update={"rank": len(items) + 1, "origins": origins, "note": note,
                                                 "diagnosis": c.name if c is not None else item.diagnosis}))
        if not items:
            return extractive
        return Draft(differential=items, next_steps=list(extractive.next_steps), origin="llm",
                     text=render(items, extractive.next_steps))

    def with_disagreement(self, draft: Draft, candidates: list[Candidate], kept: list[Sentence],
                          evidence: list[Evidence]) -> Draft:
        """When the model proposed a first choice other than the knowledge-based ranking's, say so in the answer
        and show the evidence for each (quoted and cited), or that there is none."""
        model_first = next((c for c in candidates if c.ranks.get("model") == 1), None)
        kb = [c for c in candidates if set(c.origins) - {"model"}]
        if model_first is None or not kb:
            return draft
        kb_first = max(kb, key=lambda c: c.knowledge_score)
        if kb_first.concept_id == model_first.concept_id:
            return draft
        by_id = {s.evidence_id: s for s in kept}
        ev_about = {it.concept_id: list(it.citations) for it in draft.differential if it.concept_id}

        def quotes(c: Candidate) -> tuple[list[str], list[str]]:
            ids = [i for i in ev_about.get(c.concept_id, []) if i in by_id]
            ids += [_eid(t) for t in c.supporting if _eid(t) in by_id and _eid(t) not in ids]
            ids += [e.id for e in evidence if c.concept_id in e.concept_ids and e.id in by_id and e.id not in ids]
            lines = [_cite_each(by_id[i].text, cite([i], {i: by_id[i].span})) for i in ids[:2]]
            return ids[:2], [ln for ln in lines if ln]

        m_ids, m_lines = quotes(model_first)
        k_ids, k_lines = quotes(kb_first)
        final_first = draft.differential[0].diagnosis if draft.differential else ""
        dis = Disagreement(model_first=model_first.name, model_concept_id=_real_id(model_first.concept_id),
                           model_evidence=m_ids, kg_first=kb_first.name, kg_concept_id=kb_first.concept_id,
                           kg_evidence=k_ids, final_first=final_first)
        lines = ["### The language model and the knowledge-based ranking disagree",  # answer.DISAGREEMENT_HEADING
                 f"##### The model's first choice: {model_first.name}"]
        lines += [f"   {ln}" for ln in m_lines] or ["##### (no evidence about it in the knowledge base)"]
        lines.append(f"##### The knowledge-based first choice: {kb_first.name}")
        lines += [f"   {ln}" for ln in k_lines] or ["##### (no quotable evidence about it)"]
        lines.append(f"##### The differential above puts {final_first} first.")
        text = draft.text.rstrip() + "\n" + "\n".join(lines)
        return draft.model_copy(update={"text": text, "disagreement": dis})

    # ---- extractive ---------------------------------------------------------------------------------------
    def _extractive(self, candidates: list[Candidate], kept: list[Sentence], evidence: list[Evidence]) -> Draft:
        by_id = {s.evidence_id: s for s in kept}
        ev_by_id = {e.id: e for e in evidence}
        used: set[str] = set()
        items: list[DifferentialItem] = []
        lines = ["### Differential diagnosis (for clinician review)"]
        top = candidates[0].score if candidates else 0.0
        names = {c.concept_id: c.name for c in candidates}
        for c in candidates:
            if len(items) >= self.k:
                break
            support = [i for i in (_eid(t) for t in c.supporting) if i in by_id and i not in used][:2]
            name_terms = terms(c.name)
            chunk_ids = [s.evidence_id for s in kept
                         if s.evidence_id not in used and ev_by_id[s.evidence_id].kind == "chunk"
                         and (c.concept_id in ev_by_id[s.evidence_id].concept_ids
                              or name_terms and name_terms <= terms(ev_by_id[s.evidence_id].meta.get("focus", "")))]
            # its definition: the Disease Ontology's ("G:<id>#definition") or, where it has none, NCIt's
            # ("G:<id>#NCIT:C…"); a disease whose only kept evidence is its NCIt definition was left out before
            definition = [s.evidence_id for s in kept if s.evidence_id.startswith(f"G:{c.concept_id}#")
                          and ev_by_id[s.evidence_id].kind == "concept"]
            quotes = {i: _cite_each(by_id[i].text, cite([i], {i: by_id[i].span}))
                      for i in support + definition[:1] + chunk_ids[:1]}
            chosen = [i for i, q in quotes.items() if q]
            if not chosen:
                if "model" in c.origins:   # proposed by the model, nothing in the knowledge base about it
                    reason = _model_reason(c)
                    items.append(DifferentialItem(
                        rank=len(items) + 1, diagnosis=c.name, concept_id=_real_id(c.concept_id), likelihood="low",
                        origins=list(c.origins),
                        note="; ".join(x for x in ("model only, no evidence",
                                                   f"the model's reason (not checked): {reason}" if reason else "",
                                                   f"demoted: {c.demoted}" if c.demoted else "") if x)))
                    lines.append(f"#### {items[-1].rank}. {c.name} (likelihood: low; model only, no evidence)")
                continue
            rel = c.score / top if top else 0.0
            lik = "high" if rel >= LIKELIHOOD_HIGH else "moderate" if rel >= LIKELIHOOD_MODERATE else "low"
            parts = []
            for i in chosen:
                if by_id[i].lead:   # where a quote comes from: a heading line, not a claim
                    parts.append(f"##### {by_id[i].lead}")
                parts.append(quotes[i])
            items.append(DifferentialItem(rank=len(items) + 1, diagnosis=c.name, concept_id=_real_id(c.concept_id),
                                          likelihood=lik, rationale=" ".join(p for p in parts if not p.startswith("#")),
                                          citations=chosen, origins=list(c.origins),
                                          note="; ".join(x for x in (subtype_words(c, names), also_words(c),
                                                                     f"demoted: {c.demoted}" if c.demoted else "")
                                                         if x)))
            used.update(chosen)
            # how it relates to the others, and why it was moved down ("ruled out by a negative CT pulmonary ...")
            kind = "; ".join(x for x in (subtype_words(c, names), also_words(c), c.demoted) if x)
            lines.append(f"#### {items[-1].rank}. {c.name} (likelihood: {lik}; score {c.score:.2f}"
                         f"{'; ' + origin_words(c.origins) if 'model' in c.origins else ''}"
                         f"{'; ' + kind if kind else ''})")
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
    return " ".join(f"{text[a:b]} {citation}" for a, b in spans
                    if not is_question(text[a:b]) and not is_boilerplate(text[a:b]))


def _match_candidate(name: str, candidates: list[Candidate]) -> str | None:
    t = terms(name)
    for c in candidates:
        if terms(c.name) == t:
            return c.concept_id
    return None


_ORIGIN_WORDS = {"model": "the language model", "kg": "the knowledge graph", "text": "the reference texts",
                 "page": "the disease pages", "site": "the site of the pain",
                 "sign": "a classic sign"}


def origin_words(origins: list[str]) -> str:
    """"from the language model and the knowledge graph" for ``["model", "kg"]``."""
    words = [_ORIGIN_WORDS.get(o, o) for o in origins]
    if not words:
        return ""
    return "from " + (words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1])


def subtype_words(c: Candidate, names: dict[str, str]) -> str:
    """What a subtype named before its parent (``Candidate.subtype_of``) says of it: "a kind of anxiety disorder that
    the findings single out"; "" for any other candidate."""
    if not c.subtype_of:
        return ""
    return f"a kind of {names.get(c.subtype_of, c.subtype_of)} that the findings single out"


def also_words(c: Candidate) -> str:
    """Whether a candidate is a condition the patient is known to have (:func:`agents.subtypes.demote_known`), how it
    relates to one ranked before it ("a broader term for hemorrhagic stroke"), or what was folded into it ("also
    covers stroke (a broader term)"); "" for none (:func:`agents.subtypes.mark_relatives`)."""
    return "; ".join(x for x in (c.known_condition, c.relative_of,
                                  "also covers " + ", ".join(c.also.values()) if c.also else "") if x)


def candidate_line(c: Candidate) -> str:
    """A candidate as the generator's prompt lists it: who proposed it, what it matches, what speaks against it."""
    who = []
    if "model" in c.ranks:
        who.append(f"model #{c.ranks['model']}")
    if "kg" in c.ranks:
        who.append(f"knowledge graph #{c.ranks['kg']}")
    if "page" in c.ranks or "text" in c.ranks:
        who.append("reference texts")
    if "site" in c.ranks:
        who.append("site of the pain")
    if "sign" in c.ranks:
        who.append("classic sign")
    parts = [f"- {c.name} ({', '.join(who) or 'retrieval'})"]
    if c.demoted:   # a finding that argues against it already says "against: ..." (agents/against.py)
        parts.append(c.demoted if c.demoted.startswith("against:") else f"against: {c.demoted}")
    return "; ".join(parts)


def _for_prompt(sentences_: list[Sentence], candidates: list[Candidate], evidence: list[Evidence],
                limit: int) -> list[Sentence]:
    """At most ``limit`` evidence sentences for the model, shared out over the candidates (those about each
    candidate first, in relevance order), then the rest by relevance."""
    ev_by_id = {e.id: e for e in evidence}
    usable = [s for s in sentences_ if s.text.strip()]
    chosen: list[Sentence] = []
    seen: set[str] = set()
    per = max(1, limit // max(1, len(candidates))) if candidates else 0
    for c in candidates:
        n = 0
        for s in usable:
            ev = ev_by_id.get(s.evidence_id)
            if ev is None or s.evidence_id in seen or c.concept_id not in ev.concept_ids:
                continue
            chosen.append(s)
            seen.add(s.evidence_id)
            n += 1
            if n >= per:
                break
    for s in usable:
        if len(chosen) >= limit:
            break
        if s.evidence_id not in seen:
            chosen.append(s)
            seen.add(s.evidence_id)
    return chosen[:limit]


def _clip_words(text: str, n: int) -> str:
    words = text.split()
    return text if len(words) <= n else " ".join(words[:n]) + " …"


def _model_reason(c: Candidate | None) -> str:
    return c.model_reason if c is not None else ""


def _real_id(concept_id: str | None) -> str | None:
    """A KG id, or None for a disease known only by the model's name."""
    return None if not concept_id or concept_id.startswith("model:") else concept_id


def render(items: list[DifferentialItem], next_steps: list[str]) -> str:
    """The answer text of a differential: one heading per diagnosis (likelihood, where it came from) and its cited
    rationale; then the suggested next steps."""
    lines = ["### Differential diagnosis (for clinician review)"]
    for it in items:
        tags = [f"likelihood: {it.likelihood}"]
        if "model" in it.origins:
            tags.append(origin_words(it.origins))
        if it.note:
            tags.append(it.note.split(";")[0])
        lines.append(f"#### {it.rank}. {it.diagnosis} ({'; '.join(tags)})")
        if it.rationale:
            lines.append(f"   {it.rationale}")
    if next_steps:
        lines.append("### Suggested next steps (from the retrieved references)")
        lines.extend(f"- {s}" for s in next_steps)
    return "\n".join(lines)

"""KNL agent (paper Eq. 4): each knowledge piece k_i becomes n_i = T(k_i) ⊕ G(k_i).

T is a template per knowledge kind (KG triple relation, concept definition, text chunk); G is an LLM sentence,
generated for all pieces in one batched call when an LLM is configured. Every sentence stays tied to its
evidence id, so citations survive the conversion.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from .textutil import fence, sentences, terms
from .types import Evidence, Sentence

_REL = {
    "has_symptom": "{s} can present with {o}",
    "has_phenotype": "{s} is annotated with the clinical feature {o}",
    "treated_by": "{o} is a documented treatment for {s}",
    "is_a": "{s} is a kind of {o}",
    "located_in": "{s} affects the {o}",
    "xref": "{s} is the same concept as {o}",
}


def _freq_note(meta: dict) -> str:
    bits = []
    f = meta.get("frequency")
    if isinstance(f, (int, float)):
        bits.append(f"reported in about {round(100 * f)}% of cases")
    w = meta.get("weight")
    if isinstance(w, (int, float)) and meta.get("source") == "hsdn":
        bits.append(f"literature co-occurrence weight {w:.0f}")
    cat = meta.get("category")
    if cat == "DM":
        bits.append("disease-modifying")
    elif cat == "SYM":
        bits.append("symptomatic")
    return f" ({'; '.join(bits)})" if bits else ""


def triple_sentence(subject_name: str, relation: str, object_name: str, meta: dict | None = None) -> str:
    """The template sentence of one KG triple (also the evidence text of the triple, so claims built from it
    can be checked word for word)."""
    pat = _REL.get(relation, "{s} " + relation.replace("_", " ") + " {o}")
    txt = pat.format(s=subject_name or "?", o=object_name or "?")
    return txt[0].upper() + txt[1:] + _freq_note(meta or {}) + "."


def template(ev: Evidence, query_terms: set[str] | None = None, max_sentences: int = 3) -> Sentence:
    """T(k): a deterministic sentence for one evidence item."""
    m = ev.meta
    if ev.kind == "triple":
        txt = triple_sentence(m.get("subject_name", "?"), m.get("relation", ""), m.get("object_name", "?"), m)
        return Sentence(evidence_id=ev.id, text=txt)
    if ev.kind == "concept":
        return Sentence(evidence_id=ev.id, text=f"{ev.title}: {ev.text.strip()}")
    # chunk: quote the sentences that best match the query terms, keep their document span
    text = ev.text
    sents = sentences(text) or [(0, len(text))]
    if query_terms and len(sents) > max_sentences:
        scored = sorted(((len(terms(text[s:e]) & query_terms), -i, (s, e)) for i, (s, e) in enumerate(sents)),
                        reverse=True)
        chosen = sorted(x[2] for x in scored[:max_sentences])
    else:
        chosen = sents[:max_sentences]
    s0, e0 = chosen[0][0], chosen[-1][1]
    quote = " ".join(text[s:e] for s, e in chosen)
    head = _ORG_NAMES.get(ev.organisation or "", ev.organisation or ev.source or "Reference")
    topic = m.get("focus") or ev.title or ""
    section = m.get("section")
    lead = f"{head} on {topic}" + (f" ({section})" if section else "")
    span = (ev.span[0] + s0, ev.span[0] + e0) if ev.span else None  # covers the quoted sentences
    return Sentence(evidence_id=ev.id, text=quote, span=span, lead=lead)


_ORG_NAMES = {"MPlusHealthTopics": "MedlinePlus", "NIHSeniorHealth": "NIHSeniorHealth", "GHR": "Genetics Home Reference",
              "GARD": "GARD", "NIDDK": "NIDDK", "NINDS": "NINDS", "NHLBI": "NHLBI", "CancerGov": "Cancer.gov",
              "CDC": "CDC"}


class _Gen(BaseModel):
    id: str
    sentence: str


class _GenBatch(BaseModel):
    items: list[_Gen] = Field(default_factory=list)


class KNL:
    def __init__(self, llm=None, max_llm_items: int = 24):
        self.llm = llm
        self.max_llm_items = max_llm_items

    def convert(self, evidence: list[Evidence], query: str = "") -> tuple[list[Sentence], list[str]]:
        """Return sentences (one per evidence item, same order) and warnings."""
        qt = terms(query)
        out = [template(ev, qt) for ev in evidence]
        warnings: list[str] = []
        if self.llm is not None and getattr(self.llm, "enabled", False) and out:
            from .prompts import load_prompt

            items = out[: self.max_llm_items]

            def build(items_):
                listing = "\n".join(f"<<<KNOWLEDGE id={s.evidence_id}>>>\n{fence(s.full)}\n<<<END>>>" for s in items_)
                return [{"role": "system", "content": load_prompt("knl_system")},
                        {"role": "user", "content": load_prompt("knl_user", knowledge=listing)}]

            msgs = build(items)
            fits = getattr(self.llm, "fits", None)
            while fits is not None and len(items) > 1 and not fits(msgs, _GenBatch)[0]:
                items = items[: len(items) // 2]   # the most relevant pieces first: keep the head
                msgs = build(items)
            res = self.llm.structured(msgs, _GenBatch, tag="knl")
            if res.value is None:
                warnings.append(f"KNL: LLM unavailable ({res.error}); template sentences only")
            else:
                by_id = {g.id.strip(): g.sentence.strip() for g in res.value.items if g.sentence.strip()}
                for s in items:
                    if s.evidence_id in by_id:
                        s.generated = by_id[s.evidence_id][:400]
        return out, warnings

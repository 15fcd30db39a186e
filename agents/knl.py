"""KNL agent (paper Eq. 4): each knowledge piece k_i becomes n_i = T(k_i) ⊕ G(k_i).

T is a template per knowledge kind (KG triple relation, concept definition, text chunk; a KG edge mined from a reference
answer is quoted as the answer's sentence, led by its page: "NHLBI on Heart Attack (symptoms): ..."); G is an LLM sentence,
generated for all pieces in one batched call when an LLM is configured. Every sentence stays tied to its
evidence id, so citations survive the conversion.

Disease Ontology definitions are written with the ontology's relation names inline ("An arthritis that
has_material_basis_in uric acid crystal deposits located_in joint."); :func:`prose_definition` turns them into
plain English ("An arthritis caused by uric acid crystal deposits in the joint.") before they become evidence,
sentences or claims. A reference page's question heading ("What are the symptoms of X?") is never quoted as a
sentence: it asserts nothing (the sentence's lead already says which page and section the quote comes from).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

from .textutil import fence, is_boilerplate, is_question, name_stems, sentences, signs_of_another, terms
from .types import Evidence, Sentence

_REL = {
    "has_symptom": "{s} can present with {o}",
    "has_phenotype": "{s} is annotated with the clinical feature {o}",
    "treated_by": "{o} is a documented treatment for {s}",
    "is_a": "{s} is a kind of {o}",
    "located_in": "{s} affects the {o}",
    "xref": "{s} is the same concept as {o}",
    "has_classic_sign": "a classic sign of {s}: {o}",
    "has_risk_factor": "{o} makes {s} likelier",
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


# ---- Disease Ontology definitions in prose ------------------------------------------------------------------

@dataclass(frozen=True)
class RelationProse:
    """How one relation name of a Disease Ontology definition reads in English, by grammatical position:
    ``finite`` after a subject ("which is caused by"), ``participle`` after a noun or "is" ("a disease caused
    by"), ``base`` after "to" ("believed to arise from"). ``drop_that``: "X that <relation> Y" reads "X <participle>
    Y" ("An arthritis caused by ..."). ``chains``: a list "has_symptom a, has_symptom b and has_symptom c" names the
    relation once ("presents with a, b and c"). ``participial``: after "and" the participle, not the finite form
    ("characterized by A and characterized by B")."""

    finite: str
    participle: str
    base: str
    drop_that: bool = False
    chains: bool = False
    finite_by_default: bool = False
    participial: bool = False      # "... and characterized_by X" reads "and characterized by X"


_CAUSED = RelationProse("is caused by", "caused by", "be caused by", drop_that=True)
# a neoplasm "has_material_basis_in squamous cells": it is made of them, not caused by them
_MADE_OF = RelationProse("is made up of", "made up of", "be made up of", drop_that=True)
_LOCATED = RelationProse("is located in", "in", "be located in", participial=True)
_DERIVES = RelationProse("derives from", "derived from", "derive from")

# Every relation name (and every misspelling of one) that occurs in the Disease Ontology definitions of the
# knowledge graph, with its prose. Names not listed here lose their underscores (see prose_definition).
DEFINITION_RELATIONS: dict[str, RelationProse] = {
    "has_material_basis_in": _CAUSED,
    "has_symptom": RelationProse("presents with", "presenting with", "present with", chains=True,
                                 finite_by_default=True),
    "located_in": _LOCATED,
    "derives_from": _DERIVES,
    "derive_from": RelationProse("derive from", "derived from", "derive from"),
    "dervies_from": _DERIVES,
    "results_in": RelationProse("results in", "resulting in", "result in"),
    "results_in_formation_of": RelationProse("results in the formation of", "resulting in the formation of",
                                             "result in the formation of"),
    "results_from": RelationProse("results from", "resulting from", "result from"),
    "transmitted_by": RelationProse("is transmitted by", "transmitted by", "be transmitted by", participial=True),
    "transmission_by": RelationProse("transmission from", "transmission from", "transmission from"),
    "has_allergic_trigger": RelationProse("is triggered by", "triggered by", "be triggered by", drop_that=True),
    "composed_of": RelationProse("is composed of", "composed of", "be composed of", participial=True),
    "develops_from": RelationProse("develops from", "developing from", "develop from"),
    "arises_from": RelationProse("arises from", "arising from", "arise from"),
    "caused_by": RelationProse("is caused by", "caused by", "be caused by", participial=True),
    "characterized_by": RelationProse("is characterized by", "characterized by", "be characterized by",
                                      participial=True),
    "characterized_as": RelationProse("is characterized as", "characterized as", "be characterized as",
                                      participial=True),
    "diagnosed_by": RelationProse("is diagnosed by", "diagnosed by", "be diagnosed by", participial=True),
}
# misspelt, split or space-separated forms in the definitions ("The infection has symptom fever, has symptom
# headache"), mended before the rewrite
_MENDS = [
    (re.compile(r"\bhas_material_basis_in(?=(?:homozygous|compound|heterozygous)\b)"), "has_material_basis_in "),
    (re.compile(r"\bhas_material_basis_(?=(?:homozygous|heterozygous|insufficient)\b)"), "has_material_basis_in "),
    (re.compile(r"\bhas[_ ]material[_ ]basis(?:_in\b|\s+in\b|\b(?!_))"), "has_material_basis_in"),
    (re.compile(r"\bhas ?_? ?symptom\b"), "has_symptom"),   # "has symptom", "has _symptom", "has_ symptom"
    (re.compile(r"\bis_located_in\b"), "is located_in"),
]
_RELATION_TOKEN = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")
_BE = frozenset({"is", "are", "was", "were", "be", "been", "being"})
_SUBJECT = frozenset({"which", "who", "it", "they", "this", "these", "and"})
_PREPOSITIONS = frozenset({"in", "of", "at", "on", "within", "into", "to", "from"})
_ARTICLES = frozenset({"the", "a", "an"})
_DETERMINERS = _ARTICLES | frozenset({
    "one", "two", "three", "both", "each", "every", "any", "all", "many", "multiple", "several", "various",
    "some", "other", "his", "her", "its", "their", "this", "that", "these", "those", "either", "most"})
_WORD_BEFORE = re.compile(r"([A-Za-z'’/-]+)\W*$")
# the object of has_material_basis_in up to the next punctuation or relation name
_OBJECT = re.compile(r"\s*([^,.;()]*?)(?=[,.;()]|\b[a-z]+(?:_[a-z]+)+\b|$)")
_TISSUE = re.compile(r"\b(?:cells?|tissues?|epithelium)\b")
_NOT_TISSUE = re.compile(r"mutation|chromosom|virus|bacteri|infect|deficien|insufficien|level|injur|dead|toxin",
                         re.IGNORECASE)


def _previous_word(left: str) -> tuple[str, int]:
    """The word before a relation (lower case; past adverbs such as "primarily") and where it starts in ``left``."""
    end = len(left)
    for _ in range(3):
        m = _WORD_BEFORE.search(left[:end])
        if m is None:
            return "", end
        word = m.group(1).lower()
        if not (word.endswith("ly") and len(word) > 4) or left[m.start():end].rstrip().endswith(","):
            return word, m.start()
        end = m.start()
    return "", end


def _article_for(right: str) -> str:
    """ "the " before a bare common noun after "in" ("in joint" -> "in the joint"), else nothing."""
    m = re.match(r"\s*([A-Za-z][A-Za-z'’-]*)", right)
    if m is None:
        return ""
    word = m.group(1)
    if not word[0].islower() or word.lower() in _DETERMINERS:
        return ""
    return "the "


def _made_of(right: str) -> bool:
    """Whether the object of has_material_basis_in is a cell or tissue type ("squamous cells", "glandular and
    fibrous tissues"), i.e. what a neoplasm is made of."""
    obj = _OBJECT.match(right).group(1)
    return bool(_TISSUE.search(obj)) and not _NOT_TISSUE.search(obj)


def prose_definition(text: str) -> str:
    """A Disease Ontology definition with its inline relation names rewritten as English.

    "An arthritis that has_material_basis_in uric acid crystal deposits located_in joint." ->
    "An arthritis caused by uric acid crystal deposits in the joint."; "The infection has_symptom fever,
    has_symptom chills and has_symptom rash." -> "The infection presents with fever, chills and rash."
    Deterministic; text without relation names comes back unchanged."""
    s = text or ""
    for rx, repl in _MENDS:
        s = rx.sub(repl, s)
    if "_" not in s:
        return text
    chain_from: int | None = None          # where the last "presents with" list started (same sentence)
    pos = 0
    while True:
        m = _RELATION_TOKEN.search(s, pos)
        if m is None:
            break
        name = m.group()
        left, right = s[: m.start()], s[m.end():]
        rel = DEFINITION_RELATIONS.get(name)
        if rel is None:                      # an unknown relation: at least no underscores
            phrase = name.replace("_", " ")
            s = left + phrase + right
            pos = len(left) + len(phrase)
            chain_from = None
            continue
        if name == "has_material_basis_in" and _made_of(right):
            rel = _MADE_OF
        prev, prev_at = _previous_word(left)
        after_comma = left.rstrip().endswith(",")
        if rel.chains and chain_from is not None and "." not in left[chain_from:]:
            phrase = ""                      # "presents with fever, [has_symptom] chills"
        elif prev == "that" and rel.drop_that:
            left = f"{left[:prev_at].rstrip()} {left[prev_at + len(prev):].strip()} "
            phrase = rel.participle
        elif prev == "to":
            phrase = rel.base
        elif prev in _BE:
            phrase = "located in" if rel is _LOCATED else rel.participle
        elif prev in _ARTICLES and rel is _LOCATED:
            phrase = ""                      # "of the located_in bone" -> "of the bone"
        elif prev in _PREPOSITIONS and rel is _LOCATED:
            phrase = ""                      # "in located_in hand" -> "in the hand"
            left = left.rstrip() + " " + _article_for(right).rstrip()
        elif prev == "and" and rel.participial:
            phrase = rel.participle
        elif prev in _SUBJECT or prev == "that":
            phrase = rel.finite
        elif after_comma or not rel.finite_by_default:
            phrase = rel.participle
        else:
            phrase = rel.finite
        if rel is _LOCATED and phrase in ("in", "located in", "is located in"):
            phrase = f"{phrase} {_article_for(right)}".rstrip()
        chain_from = len(left) if rel.chains and phrase else (chain_from if rel.chains else None)
        s = left + phrase + right
        pos = len(left) + len(phrase)
    s = re.sub(r"[ \t]{2,}", " ", s)
    s = re.sub(r" +([,.;:])", r"\1", s)
    return s


def triple_sentence(subject_name: str, relation: str, object_name: str, meta: dict | None = None) -> str:
    """The template sentence of one KG triple (also the evidence text of the triple, so claims built from it
    can be checked word for word)."""
    prose = DEFINITION_RELATIONS.get(relation)
    pat = _REL.get(relation, "{s} " + (prose.finite if prose else relation.replace("_", " ")) + " {o}")
    txt = pat.format(s=subject_name or "?", o=object_name or "?")
    return txt[0].upper() + txt[1:] + _freq_note(meta or {}) + "."


def template(ev: Evidence, query_terms: set[str] | None = None, max_sentences: int = 3) -> Sentence:
    """T(k): a deterministic sentence for one evidence item."""
    m = ev.meta
    if ev.kind == "triple" and m.get("mined"):
        # an edge mined from a reference answer: the page's own sentence, introduced like a quoted chunk
        head = _ORG_NAMES.get(ev.organisation or "", ev.organisation or "MedQuAD")
        topic = m.get("focus") or m.get("subject_name") or ""
        section = m.get("section")
        return Sentence(evidence_id=ev.id, text=ev.text.strip(), span=ev.span,
                        lead=f"{head} on {topic}" + (f" ({section})" if section else ""))
    if ev.kind == "triple":
        txt = triple_sentence(m.get("subject_name", "?"), m.get("relation", ""), m.get("object_name", "?"), m)
        return Sentence(evidence_id=ev.id, text=txt)
    if ev.kind == "concept":
        return Sentence(evidence_id=ev.id, text=f"{ev.title}: {prose_definition(ev.text.strip())}")
    # chunk: quote the sentences that best match the query terms, keep their document span; a question heading
    # is not quoted (the lead names the page and section)
    text = ev.text
    head = _ORG_NAMES.get(ev.organisation or "", ev.organisation or ev.source or "Reference")
    topic = m.get("focus") or ev.title or ""
    section = m.get("section")
    lead = f"{head} on {topic}" + (f" ({section})" if section else "")
    # nor a sentence listing another condition's signs ("symptoms of a cold or the flu include ..." on the
    # bronchitis page): it is no evidence for the page's disease
    own = name_stems([topic, ev.title or "", ev.query or ""])
    sents = [(a, b) for a, b in (sentences(text) or [(0, len(text))])
             if not is_question(text[a:b]) and not is_boilerplate(text[a:b])
             and signs_of_another(text[a:b], own) is None]
    if not sents:   # nothing but questions: no quote
        return Sentence(evidence_id=ev.id, text="", span=None, lead=lead)
    if query_terms and len(sents) > max_sentences:
        scored = sorted(((len(terms(text[s:e]) & query_terms), -i, (s, e)) for i, (s, e) in enumerate(sents)),
                        reverse=True)
        chosen = sorted(x[2] for x in scored[:max_sentences])
    else:
        chosen = sents[:max_sentences]
    s0, e0 = chosen[0][0], chosen[-1][1]
    quote = " ".join(text[s:e] for s, e in chosen)
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

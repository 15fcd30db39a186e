"""Verifier agent: checks every claim of a draft answer against the evidence it cites.

Steps of :meth:`Verifier.verify`:

1. **Citations.** Inline citations look like ``[id]``, ``[id:start-end]`` (a character span in the source
   document), ``[id1; id2]`` or ``[id1][id2]``. A bracketed token is a citation when it is a known evidence id
   (optionally with a span suffix) or has the shape of one (``G:``/``B:``/``O:`` prefix). Shaped tokens that
   are not in the supplied evidence are *fabricated*: they are removed from the answer text, from the
   differential items' citations and rationales, and listed in ``fabricated_citations``. Other brackets
   (``[1]``, ``[sic]``) are left alone.
2. **Claims.** The cleaned answer is split into claims: list items and sentences. Headers, disclaimers,
   "Insufficient evidence ..." lines, meta sentences ("The following diagnoses ...") and sentences that only
   restate the presentation are skipped. Each claim keeps the citations written in it (citations written
   right after a sentence's full stop belong to that sentence).
3. **Deterministic check** of each claim against the texts it cites (for a span citation: the cited part):

   - *lexical coverage* ``L``: the share of the claim's content terms (lower-cased, light suffix stemming,
     stop words and hedges removed, a few lay/clinical synonyms folded) found in the cited texts or their
     titles. Medical terms (a built-in lexicon, medical word endings, and the terms of the evidence titles,
     queries and KG triples of this call) weigh 2, generic words ("symptom", "disease") 0.5, others 1.
     Terms absent from the evidence but present in the presentation get half credit: they describe the
     patient, not the knowledge.
   - *semantic similarity* ``S`` (only with an embedder, and only when ``L < 0.98``: a claim that quotes its
     evidence needs no embedding): the best cosine between the claim and a sentence
     (or pair of adjacent sentences) of a cited text, mapped linearly from [0.45, 0.85] to [0, 1].
   - *support* ``s = L`` without an embedder, ``s = (L + S) / 2`` with one; then multiplied by
     ``0.5 + 0.5 * M`` where ``M`` is the share of the claim's medical terms (those not taken from the
     presentation) that the cited texts mention, so an unsupported specific term ("bacterial") costs more
     than an unmatched common word.
   - *negation mismatch*: negation scopes ("no", "not", "without", "absent", "never", "does not", ...,
     until punctuation or "but/however/although", at most 6 words) are found in the claim and in every
     sentence of the cited texts. When a cited sentence covers at least 60 % of the claim's terms and a
     specific term is negated on one side and asserted on the other, and no cited sentence with the same
     polarity covers the claim as well, the claim is **CONTRADICTED** with confidence
     ``0.5 + 0.5 * coverage_of_that_sentence``. Negations the claim makes about the patient
     ("denies fever", or a term the presentation itself negates) are not counted.
   - otherwise **SUPPORTED** when ``s >= 0.5`` (confidence ``s``), else **INSUFFICIENT** (confidence
     ``1 - s``). A clinical claim without a valid citation is INSUFFICIENT with confidence 1.

4. **LLM check** (when ``llm`` is given and enabled): one structured call judges all cited claims against
   their fenced evidence texts (prompt ``prompts/verify.txt``; the texts are data, instructions inside them
   are to be ignored). Combination with the deterministic verdict ``d`` (confidence ``c_d``) and the LLM's
   ``l`` (confidence ``c_l``), with the order CONTRADICTED < INSUFFICIENT < SUPPORTED:

   - agree: confidence ``c_d + 0.5 * (1 - c_d) * c_l``;
   - LLM lower (a downgrade): the LLM's verdict, except that SUPPORTED -> CONTRADICTED needs ``c_l >= 0.7``
     (else INSUFFICIENT); confidence ``c_l * (1 - 0.5 * c_d)``;
   - LLM higher: the deterministic verdict stays; confidence ``c_d * (1 - 0.5 * c_l)``.

   An LLM error (or a missing judgment) leaves the deterministic result and records why in ``notes``
   and in the claim's ``note``.
5. **Pass rule**: no CONTRADICTED claim; no clinical claim without a citation; every SUPPORTED claim has
   confidence ``>= confidence_threshold``; the share of claims not fully supported (INSUFFICIENT, or SUPPORTED
   below the threshold) is ``<= max_partial_ratio``; at least one claim; at most ``max_claims`` claims
   (more are not checked, and fail the answer). ``reasons`` names each failed claim and check (and only
   failures); ``notes`` holds information such as removed citations or a fallback.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, field_validator

from .types import ClaimCheck, Draft, Evidence, Verdict, Verification


PROMPT_PATH = Path(__file__).resolve().parent / "prompts" / "verify.txt"

# ---------------------------------------------------------------------------------------------------------
# citations

_ID_SHAPE = re.compile(r"^[GBO]:[^\s\[\];,]+$")
_SPAN_SUFFIX = re.compile(r"^(?P<base>.+?):(?P<a>\d+)-(?P<b>\d+)$")
_BRACKET = re.compile(r"\[([^\[\]\n]{2,600})\]")
_SPLIT_IDS = re.compile(r"\s*[;,]\s*")


@dataclass
class Citation:
    id: str
    span: tuple[int, int] | None = None
    raw: str = ""


def _resolve(token: str, known: set[str]) -> tuple[str, Citation | None]:
    """Classify one bracketed token: ("valid", Citation) / ("fabricated", None) / ("other", None)."""
    tok = token.strip()
    if tok in known:
        return "valid", Citation(tok, None, tok)
    m = _SPAN_SUFFIX.match(tok)
    if m and m.group("base") in known:
        a, b = int(m.group("a")), int(m.group("b"))
        return "valid", Citation(m.group("base"), (min(a, b), max(a, b)), tok)
    if _ID_SHAPE.match(tok):
        return "fabricated", None
    return "other", None


def parse_citations(text: str, known: set[str]) -> list[Citation]:
    """Valid citations in ``text``, in order of appearance (duplicates kept once)."""
    out: list[Citation] = []
    seen: set[str] = set()
    for m in _BRACKET.finditer(text):
        for tok in _SPLIT_IDS.split(m.group(1)):
            kind, cit = _resolve(tok, known)
            if kind == "valid" and cit is not None and cit.raw not in seen:
                seen.add(cit.raw)
                out.append(cit)
    return out


def clean_citations(text: str, known: set[str]) -> tuple[str, list[str]]:
    """Remove citations of unknown ids from ``text``. Returns (cleaned text, fabricated tokens)."""
    fabricated: list[str] = []

    def repl(m: re.Match) -> str:
        toks = [t.strip() for t in _SPLIT_IDS.split(m.group(1)) if t.strip()]
        kinds = [_resolve(t, known)[0] for t in toks]
        if "fabricated" not in kinds:
            return m.group(0)
        keep = [t for t, k in zip(toks, kinds) if k != "fabricated"]
        fabricated.extend(t for t, k in zip(toks, kinds) if k == "fabricated")
        return f"[{'; '.join(keep)}]" if keep else "\x00"

    out = _BRACKET.sub(repl, text)
    if "\x00" in out:
        out = re.sub(r"[ \t]*\x00", "", out)
        out = re.sub(r"[ \t]+([.,;:!?])", r"\1", out)
    return out, fabricated


def strip_citations(text: str, known: set[str] | None = None) -> str:
    """``text`` without citation brackets (any bracket whose tokens all look like evidence ids)."""
    def repl(m: re.Match) -> str:
        toks = [t.strip() for t in _SPLIT_IDS.split(m.group(1)) if t.strip()]
        if toks and all(_ID_SHAPE.match(t) or (known and _resolve(t, known)[0] == "valid") for t in toks):
            return ""
        return m.group(0)

    out = _BRACKET.sub(repl, text)
    out = re.sub(r"[ \t]+([.,;:!?])", r"\1", out)
    return re.sub(r"[ \t]{2,}", " ", out).strip()


# ---------------------------------------------------------------------------------------------------------
# terms

_WORD = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*")
STOP = frozenset("""a an and are as at be been being by can could do did does for from had has have having he her
his how i if in into is it its may might more most much of on or other our she should so some such than that the
their them then there these they this those to too very was we were what when where which while who whom whose why
will with would you your also about after before over under between during through per each any all both either
one two three me my us here just only own same s t than up down out off again further once whether yet via upon
well get gets got less more make makes made""".split())
# negation words are handled by the scope finder, not counted as content terms
NEGATORS = frozenset("no not without absent absence never none neither nor cannot can't doesn't don't isn't "
                     "aren't wasn't weren't won't didn't lack lacks lacking free denies denied deny negative "
                     "unlikely excluded exclude".split())
# hedges and answer-meta words: carry no checkable content
HEDGES = frozenset("""likely unlikely possible possibly probable probably consistent suggest suggests suggestive
suggesting support supports supported supporting consider considered considering typical typically typically
commonly often usually frequently sometimes may might could would include includes including included present
presents presented presenting presentation patient patients patient's case given based finding findings feature
features evidence cited citation differential diagnosis diagnoses following below above listed list summary
answer rank ranked high moderate low likelihood points point indicate indicates indicated raise raises
reported report reports fit fits fitting explain explains explained match matches compatible favour
favor favours favors""".split())
# generic clinical words: half weight, never a contradiction term
WEAK = frozenset("symptom sign disease condition disorder problem people person cause effect treatment "
                 "health medical clinical type form kind".split())

_SYNONYMS = [
    (r"\bshort(?:ness)? of breath\b|\bbreathlessness\b|\bdifficulty breathing\b|\btrouble breathing\b", "dyspnea"),
    (r"\bdyspnoea\b", "dyspnea"),
    (r"\bhigh blood pressure\b", "hypertension"),
    (r"\bhigh blood sugar\b|\bhigh blood glucose\b", "hyperglycemia"),
    (r"\bheart attack\b", "myocardial infarction"),
    (r"\bpyrexia\b|\bfebrile\b", "fever"),
    (r"\bchest tightness\b|\btight chest\b", "chest tightness"),
    (r"\bcoughing\b", "cough"),
    (r"\bhaemo", "hemo"), (r"\banaemi", "anemi"), (r"\boedema\b", "edema"),
    (r"\bpee\b|\burination\b", "urinate"),
    (r"\bthrowing up\b|\bemesis\b", "vomiting"),
    (r"\bitchy\b|\bitching\b|\bpruritus\b", "itch"),
    (r"\bsore throat\b", "pharyngitis"),
    (r"\bstomach ache\b|\bbelly pain\b|\babdominal pain\b", "abdominal pain"),
    (r"\btired(?:ness)?\b|\bexhaustion\b", "fatigue"),
    (r"\bloss of appetite\b", "anorexia"),
]
_SYN_RE = [(re.compile(p), r) for p, r in _SYNONYMS]

_MED_SUFFIX = re.compile(r"(itis|osis|oses|emia|aemia|algia|pathy|oma|omas|ectomy|otomy|plasia|uria|pnea|pnoea|"
                         r"cardia|genic|megaly|rrhea|rrhoea|spasm|sclerosis|cillin|mycin|olol|pril|sartan|statin|"
                         r"azole|vir|mab|ine|ide|scopy|graphy|ase|itis)$")
_MED_LEXICON = frozenset("""fever cough wheeze wheezing rash pain ache headache nausea vomiting diarrhea
constipation fatigue dyspnea dizziness syncope seizure itch swelling edema bleeding jaundice chills sweating
weight loss thirst polyuria palpitation tachycardia bradycardia hypertension hypotension infection infectious
virus viral bacteria bacterial fungal inflammation inflammatory chronic acute lung lungs airway airways heart
kidney liver brain skin blood bone joint muscle nerve chest abdomen abdominal stomach throat nose ear eye
asthma diabetes cancer tumor stroke pneumonia influenza tuberculosis anemia allergy allergic insulin glucose
antibiotic antibiotics steroid steroids vaccine inhaler therapy surgery biopsy mri ct ultrasound x-ray ecg
fracture arthritis dementia depression anxiety migraine sepsis shock obstruction hemorrhage ulcer lesion
mucus sputum urine stool fluid breath breathing shortness tightness cure curable fatal chronic hereditary
genetic inherited mutation gene syndrome""".split())


def stem(word: str) -> str:
    """Light suffix stemming (consistent, not linguistic): causes/caused/causing -> caus."""
    w = word
    for suf, rep in (("ations", ""), ("ation", ""), ("itions", "it"), ("ition", "it"), ("ions", ""), ("ion", ""),
                     ("ments", ""), ("ment", ""), ("ness", ""), ("ings", ""), ("ing", ""), ("ies", "y"),
                     ("ied", "y"), ("ily", "y"), ("ly", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            if suf == "s" and w[-2] in "sui":
                continue
            w = w[: len(w) - len(suf)] + rep
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


_WEAK_STEMS = frozenset(stem(w) for w in WEAK)


def normalise(text: str) -> str:
    t = text.lower().replace("\u2019", "'")
    for rx, rep in _SYN_RE:
        t = rx.sub(rep, t)
    return t


def words(text: str) -> list[str]:
    return _WORD.findall(normalise(text))


def content_stems(text: str) -> list[str]:
    """Ordered, de-duplicated content stems of ``text``."""
    out: list[str] = []
    for w in words(text):
        if w in STOP or w in NEGATORS or w in HEDGES or len(w) < 2 or w.isdigit():
            continue
        s = stem(w)
        if s not in out:
            out.append(s)
    return out


def is_medical_word(w: str) -> bool:
    return w in _MED_LEXICON or bool(_MED_SUFFIX.search(w) and len(w) > 5)


# ---------------------------------------------------------------------------------------------------------
# negation scopes

_NEG_PRE = re.compile(r"\b(?:no|not|never|without|none|neither|nor|cannot|can't|doesn't|don't|isn't|aren't|"
                      r"wasn't|weren't|won't|didn't|absence of|lack of|lacks|lacking|free of|denies|denied|"
                      r"deny|negative for|rules? out|ruled out)\b")
_NEG_POST = re.compile(r"\b(?:is|are|was|were|be|been|remains?)\s+(?:absent|excluded|ruled out|not present|"
                       r"unlikely)\b")
_PATIENT_NEG = re.compile(r"\b(?:denies|denied|deny|negative for|reports no|no history of)\b")
_SCOPE_END = re.compile(r"[.;:!?()\[\]]|\b(?:but|however|although|though|except|whereas|yet)\b")
_SCOPE_TOKEN = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*|,")
_SOFT_STOP = frozenset({",", "which", "who", "while", "whom", "whose"})
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def negated_stems(text: str, max_words: int = 6) -> set[str]:
    """Content stems inside a negation scope of ``text``.

    A scope runs from the cue to a hard stop (sentence punctuation, "but/however/although/except/...") or
    to a soft stop ("," "which" "who" "while") once it holds a specific (non-generic) word, at most
    ``max_words`` content words: "is not a condition in which the pleura is inflamed" reaches "pleura".
    """
    t = normalise(text)
    weak = _WEAK_STEMS
    out: set[str] = set()
    for m in _NEG_PRE.finditer(t):
        rest = t[m.end():]
        hard = _SCOPE_END.search(rest)
        scope = rest[: hard.start()] if hard else rest
        n, specific = 0, False
        for tok in _SCOPE_TOKEN.finditer(scope):
            w = tok.group(0)
            if w in _SOFT_STOP:
                if specific:
                    break
                continue
            if w in STOP or w in NEGATORS or w in HEDGES:
                continue
            st = stem(w)
            out.add(st)
            specific = specific or st not in weak
            n += 1
            if n >= max_words:
                break
    for m in _NEG_POST.finditer(t):
        before = t[: m.start()]
        start = max((x.end() for x in _SCOPE_END.finditer(before)), default=0)
        ws = [w for w in _WORD.findall(before[start:]) if w not in STOP and w not in HEDGES and w not in NEGATORS]
        out.update(stem(w) for w in ws[-3:])
    return out


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if len(s.strip()) >= 3]


# ---------------------------------------------------------------------------------------------------------
# claims

_HEADER = re.compile(r"^(?:#{1,6}\s|\*\*[^*]{1,80}\*\*:?\s*$|__[^_]{1,80}__:?\s*$|[-=_*]{3,}\s*$)")
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d{1,2}[.)]|[a-z][.)])\s+")
_DISCLAIMER = re.compile(r"not (?:a )?substitute|clinical judg(?:e)?ment|medical advice|decision[- ]support|"
                         r"for (?:educational|informational) purposes|does not replace|disclaimer|"
                         r"consult (?:a|your|with a) (?:qualified |licensed )?(?:clinician|physician|doctor|"
                         r"health ?care)|must be (?:confirmed|reviewed) by|not a diagnosis", re.I)
_INSUFFICIENT = re.compile(r"^\W*(?:insufficient evidence|not enough evidence|the evidence (?:is|was) "
                           r"insufficient)", re.I)
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|vs|etc|approx|dr|mr|mrs|ms|st|no|fig|al)\.$", re.I)
_CLAIM_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\[(\"'A-Z0-9])")
_LEADING_CITES = re.compile(r"^((?:\s*\[[^\[\]\n]{2,600}\])+)\s*")


@dataclass
class Claim:
    text: str                        # as written (with citations)
    clean: str                       # without citation brackets
    citations: list[Citation] = field(default_factory=list)
    line: int = 0


def _sentences_of_line(line: str) -> list[str]:
    parts = _CLAIM_SPLIT.split(line)
    merged: list[str] = []
    for p in parts:
        if merged and _ABBREV.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {p}"
            continue
        m = _LEADING_CITES.match(p)
        if m and merged and "]" in m.group(1):
            # citations written after the previous sentence's full stop belong to it
            merged[-1] = f"{merged[-1]} {m.group(1).strip()}"
            p = p[m.end():]
        if p.strip():
            merged.append(p.strip())
    return merged


def split_claims(text: str, known: set[str]) -> tuple[list[Claim], list[str]]:
    """Claims of an answer and the skipped lines (with the reason in front)."""
    claims: list[Claim] = []
    skipped: list[str] = []
    for ln, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if not line or line.startswith("|") and line.endswith("|") and set(line) <= set("|-: "):
            continue
        if _HEADER.match(line):
            skipped.append(f"header: {line}")
            continue
        line = _BULLET.sub("", line).replace("**", "").replace("__", "").strip()
        if not line:
            continue
        cites_in_line = parse_citations(line, known)
        if line.endswith(":") and not cites_in_line and len(line.split()) <= 10:
            skipped.append(f"header: {line}")
            continue
        for sent in _sentences_of_line(line):
            clean = strip_citations(sent, known)
            if _INSUFFICIENT.search(clean):
                skipped.append(f"insufficient-evidence statement: {clean}")
                continue
            if _DISCLAIMER.search(clean):
                skipped.append(f"disclaimer: {clean}")
                continue
            if not re.search(r"[A-Za-z]{2,}", clean):
                if parse_citations(sent, known) and claims:  # a stray citation group: attach to previous claim
                    claims[-1].citations.extend(parse_citations(sent, known))
                continue
            claims.append(Claim(sent, clean, parse_citations(sent, known), ln))
    return claims, skipped


# ---------------------------------------------------------------------------------------------------------
# LLM response schema


class _Judgment(BaseModel):
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


class _Judgments(BaseModel):
    judgments: list[_Judgment] = Field(default_factory=list)


_RANK = {"CONTRADICTED": 0, "INSUFFICIENT": 1, "SUPPORTED": 2}


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


def _fence(text: str) -> str:
    return text.replace("<<<", "\u2039\u2039\u2039").replace(">>>", "\u203a\u203a\u203a")


# ---------------------------------------------------------------------------------------------------------


@dataclass
class _Unit:
    """A checkable piece of a cited evidence text (sentence or adjacent pair)."""
    ev_id: str
    text: str


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

    # -- helpers -------------------------------------------------------------------------------------------
    @staticmethod
    def _cited_text(ev: Evidence, span: tuple[int, int] | None) -> tuple[str, str | None]:
        """The text a citation points at; a span outside the evidence falls back to the whole text."""
        if span is None:
            return ev.text, None
        base = ev.span[0] if ev.span else 0
        a, b = span[0] - base, span[1] - base
        if 0 <= a < b <= len(ev.text):
            return ev.text[a:b], None
        return ev.text, f"span {span[0]}-{span[1]} outside {ev.id}; checked the whole text"

    def _vocabulary(self, evidence: list[Evidence]) -> set[str]:
        vocab: set[str] = set()
        for ev in evidence:
            bits = [ev.title or "", ev.query or ""]
            if ev.kind in ("triple", "concept"):
                bits.append(ev.text)
            for b in bits:
                vocab.update(content_stems(b))
        return {v for v in vocab if v not in {stem(w) for w in WEAK}}

    # -- main ----------------------------------------------------------------------------------------------
    def verify(self, draft: Draft, evidence: list[Evidence], presentation: str | None = None) -> Verification:
        by_id = {ev.id: ev for ev in evidence}
        known = set(by_id)

        # 1. citations
        text = draft.text
        if not text.strip():
            text = _compose_text(draft)
        cleaned, fabricated = clean_citations(text, known)
        cleaned_draft = draft.model_copy(deep=True)
        cleaned_draft.text, _ = clean_citations(draft.text, known) if draft.text.strip() else ("", [])
        for item in cleaned_draft.differential:
            keep = []
            for c in item.citations:
                kind, cit = _resolve(c, known)
                if kind == "valid":
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
        reasons: list[str] = []
        notes: list[str] = []
        overflow = 0
        if len(claims) > self.max_claims:
            overflow = len(claims) - self.max_claims
            claims = claims[: self.max_claims]

        pres_stems = set(content_stems(presentation or ""))
        pres_neg = negated_stems(presentation or "")
        vocab = self._vocabulary(evidence)
        weak = {stem(w) for w in WEAK}

        def weight(s: str, surface_words: dict[str, str]) -> float:
            if s in weak:
                return 0.5
            w = surface_words.get(s, s)
            return 2.0 if (s in vocab or is_medical_word(w)) else 1.0

        # filter meta sentences and presentation restatements
        checked: list[tuple[Claim, list[str], dict[str, str]]] = []
        for cl in claims:
            surf = {}
            for w in words(cl.clean):
                surf.setdefault(stem(w), w)
            stems = content_stems(cl.clean)
            med = [s for s in stems if weight(s, surf) >= 2.0]
            if not cl.citations:
                if not med and len([s for s in stems if s not in weak]) < 3:
                    skipped.append(f"non-clinical sentence: {cl.clean}")
                    continue
                if stems and pres_stems and all(s in pres_stems for s in stems):
                    skipped.append(f"restates the presentation: {cl.clean}")
                    continue
            checked.append((cl, stems, surf))

        # 3. deterministic
        units: list[_Unit] = []
        unit_index: dict[str, list[int]] = {}
        cited_text: dict[str, tuple[str, str | None]] = {}
        for cl, _, _ in checked:
            for cit in cl.citations:
                key = cit.raw
                if key in cited_text:
                    continue
                cited_text[key] = self._cited_text(by_id[cit.id], cit.span)
                sents = split_sentences(cited_text[key][0]) or [cited_text[key][0]]
                idx: list[int] = []
                cand = list(sents)
                cand += [f"{a} {b}" for a, b in zip(sents, sents[1:])]
                for u in cand[: self.max_units_per_evidence]:
                    idx.append(len(units))
                    units.append(_Unit(cit.id, u))
                unit_index[key] = idx

        # semantic similarity is computed lazily, only for claims the lexical check does not fully cover
        # (a claim quoting its evidence needs no embedding: this keeps the offline path fast)
        embed_ok = self.embedder is not None

        checks: list[ClaimCheck] = []
        det: list[tuple[Verdict, float, float]] = []  # verdict, confidence, support
        for ci, (cl, stems, surf) in enumerate(checked):
            ids = list(dict.fromkeys(c.id for c in cl.citations))
            if not cl.citations:
                checks.append(ClaimCheck(claim=cl.clean, citations=[], verdict="INSUFFICIENT", confidence=1.0,
                                         note="clinical claim without citation"))
                det.append(("INSUFFICIENT", 1.0, 0.0))
                continue
            ev_texts = [cited_text[c.raw][0] for c in cl.citations]
            span_notes = [cited_text[c.raw][1] for c in cl.citations if cited_text[c.raw][1]]
            titles = " ".join((by_id[i].title or "") for i in ids)
            ev_stems = set(content_stems(" ".join(ev_texts) + " " + titles))
            total = sum(weight(s, surf) for s in stems) or 1.0
            got = 0.0
            missing = []
            for s in stems:
                w = weight(s, surf)
                if s in ev_stems:
                    got += w
                elif s in pres_stems:
                    got += 0.5 * w
                    missing.append(s + "(presentation)")
                else:
                    missing.append(s)
            lex = got / total if stems else 0.0

            sem = None
            if embed_ok and lex < self.lexical_shortcut:
                uids = [u for c in cl.citations for u in unit_index.get(c.raw, [])]
                if uids:
                    try:
                        cvec = self._embed([cl.clean])
                        uvec = self._embed([units[u].text for u in uids])
                        sem = float(np.max(cvec @ uvec.T))
                    except Exception as exc:  # noqa: BLE001 — degrade to lexical only, and say so
                        notes.append(f"embedder failed ({type(exc).__name__}: {exc}); lexical check only")
                        embed_ok = False
            if sem is not None:
                s_n = min(1.0, max(0.0, (sem - self.sim_low) / (self.sim_high - self.sim_low)))
                support = 0.5 * lex + 0.5 * s_n
            else:
                support = lex
            # specific medical terms the evidence does not mention weaken the support
            med_terms = [s for s in stems if weight(s, surf) >= 2.0 and s not in pres_stems]
            if med_terms:
                med_cov = sum(s in ev_stems for s in med_terms) / len(med_terms)
                support *= 0.5 + 0.5 * med_cov

            # negation mismatch, sentence by sentence
            claim_neg = negated_stems(cl.clean)
            patient_neg = bool(_PATIENT_NEG.search(normalise(cl.clean)))
            if patient_neg:
                claim_neg = set()
            claim_neg -= pres_neg
            claim_pos = set(stems) - claim_neg - negated_stems(cl.clean)
            conflict_best, conflict_terms, conflict_id, agree_best = 0.0, set(), None, 0.0
            title_stems = set(content_stems(titles))
            for c in cl.citations:
                for sent in split_sentences(cited_text[c.raw][0]):
                    s_neg = negated_stems(sent)
                    s_all = set(content_stems(sent)) | s_neg
                    s_pos = s_all - s_neg
                    cov = sum(weight(s, surf) for s in stems if s in s_all | title_stems) / total
                    if cov < 0.6:
                        continue
                    terms = ((claim_neg & s_pos) | ((claim_pos - pres_neg) & s_neg)) - weak
                    if terms and cov > conflict_best:
                        conflict_best, conflict_terms, conflict_id = cov, terms, c.id
                    elif not terms:
                        agree_best = max(agree_best, cov)
            if conflict_terms and agree_best >= conflict_best:
                conflict_terms = set()   # another cited sentence says the same thing with the same polarity
            note_bits = [f"lexical={lex:.2f}"]
            if sem is not None:
                note_bits.append(f"cosine={sem:.2f}")
            if missing:
                note_bits.append("unmatched: " + ", ".join(missing[:8]))
            note_bits.extend(span_notes)
            if conflict_terms:
                verdict: Verdict = "CONTRADICTED"
                conf = 0.5 + 0.5 * min(1.0, conflict_best)
                note_bits.insert(0, f"negation mismatch on {', '.join(sorted(conflict_terms))} vs {conflict_id}")
            elif support >= self.support_floor:
                verdict, conf = "SUPPORTED", support
            else:
                verdict, conf = "INSUFFICIENT", 1.0 - support
            det.append((verdict, conf, support))
            checks.append(ClaimCheck(claim=cl.clean, citations=ids, verdict=verdict, confidence=round(conf, 4),
                                     method="deterministic", note="; ".join(note_bits)))

        # 4. LLM
        if self.llm is not None and getattr(self.llm, "enabled", False) and checks:
            self._llm_pass(checked, checks, cited_text, by_id, notes)

        # 5. pass rule
        n = len(checks)

        def short(c: ClaimCheck) -> str:
            return c.claim if len(c.claim) <= 120 else c.claim[:117] + "..."

        fully = [i for i, c in enumerate(checks)
                 if c.verdict == "SUPPORTED" and c.confidence >= self.confidence_threshold]
        partial = [i for i, c in enumerate(checks) if i not in fully and c.verdict != "CONTRADICTED"]
        for i, c in enumerate(checks, 1):
            if c.verdict == "CONTRADICTED":
                reasons.append(f"claim {i} CONTRADICTED by {', '.join(c.citations)}: \"{short(c)}\" ({c.note})")
            elif not c.citations:
                reasons.append(f"claim {i} has no citation: \"{short(c)}\"")
            elif c.verdict == "SUPPORTED" and c.confidence < self.confidence_threshold:
                reasons.append(f"claim {i} SUPPORTED with low confidence {c.confidence:.2f} < "
                               f"{self.confidence_threshold}: \"{short(c)}\" ({c.note})")
        ratio = len(partial) / n if n else 1.0
        if n and ratio > self.max_partial_ratio:
            reasons.append(f"{len(partial)}/{n} claims not fully supported ({ratio:.0%} > "
                           f"{self.max_partial_ratio:.0%}): claims {', '.join(str(i + 1) for i in partial)}")
            for i in partial:
                c = checks[i]
                if c.verdict == "INSUFFICIENT" and c.citations:
                    reasons.append(f"claim {i + 1} INSUFFICIENT against {', '.join(c.citations)}: "
                                   f"\"{short(c)}\" ({c.note})")
        if n == 0:
            reasons.append("no verifiable claims in the answer"
                           + (" (the draft declares insufficient evidence)" if draft.insufficient else ""))
        if overflow:
            reasons.append(f"{overflow} claims beyond max_claims={self.max_claims} were not checked")
        passed = not reasons
        if fabricated:
            notes.append(f"removed {len(fabricated)} fabricated citation(s): {', '.join(fabricated[:10])}")
        return Verification(claims=checks, fabricated_citations=fabricated, passed=passed,
                            supported_ratio=round(len(fully) / n, 4) if n else 0.0,
                            reasons=reasons, notes=notes,
                            cleaned_text=cleaned_draft.text if draft.text.strip() else cleaned,
                            cleaned_draft=cleaned_draft)

    # ------------------------------------------------------------------------------------------------------
    def _llm_pass(self, checked, checks: list[ClaimCheck], cited_text, by_id, notes: list[str]) -> None:
        items = []
        for i, ((cl, _, _), chk) in enumerate(zip(checked, checks), 1):
            if not cl.citations:
                continue
            blocks = []
            for c in cl.citations:
                txt = cited_text[c.raw][0]
                if len(txt) > self.llm_evidence_chars:
                    txt = txt[: self.llm_evidence_chars].rsplit(" ", 1)[0] + " ..."
                blocks.append(f"<<<EVIDENCE id={c.id}>>>\n{_fence(txt)}\n<<<END>>>")
            items.append((i, f"Claim {i}: {_fence(cl.clean)}\n" + "\n".join(blocks)))
        if not items:
            return
        system = PROMPT_PATH.read_text(encoding="utf-8")
        user = ("Judge each claim against the evidence quoted under it.\n\n" + "\n\n".join(t for _, t in items)
                + f"\n\nReturn one judgment for each of the claims {', '.join(str(i) for i, _ in items)}.")
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        try:
            res = self.llm.structured(msgs, _Judgments, tag="verify")
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
        for i, _ in items:
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


def _compose_text(draft: Draft) -> str:
    """An answer text from the structured draft, when the draft has no text."""
    lines: list[str] = []
    for d in draft.differential:
        cites = "".join(f"[{c}]" for c in d.citations if c not in d.rationale)
        body = d.rationale.strip() or d.diagnosis
        if cites:
            body = body.rstrip(".") + f" {cites}."
        lines.append(f"- {body}")
    for s in draft.next_steps:
        lines.append(f"- {s}")
    return "\n".join(lines)


__all__ = ["Verifier", "Citation", "parse_citations", "clean_citations", "strip_citations", "split_claims",
           "combine", "negated_stems", "content_stems", "stem"]

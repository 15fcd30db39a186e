"""Deterministic check of a claim against the texts it cites (for a span citation: the cited part).

- *lexical coverage* ``L``: the share of the claim's content terms (:mod:`knowledge.text` claim words: lower
  case, lay/clinical synonyms folded, light suffix stemming; stop words, negators and hedges removed) found in
  the cited texts or their titles. Medical terms (a built-in lexicon, medical word endings, and the terms of
  the evidence titles, queries and KG triples of this call) weigh 2, generic words ("symptom", "disease")
  0.5, others 1. Terms absent from the evidence but present in the presentation get half credit: they
  describe the patient, not the knowledge.
- *semantic similarity* ``S`` (only with an embedder, and only when ``L < 0.98``: a claim that quotes its
  evidence needs no embedding): the best cosine between the claim and a sentence (or pair of adjacent
  sentences) of a cited text, mapped linearly from [0.45, 0.85] to [0, 1].
- *support* ``s = L`` without an embedder, ``s = (L + S) / 2`` with one; then multiplied by ``0.5 + 0.5 * M``
  where ``M`` is the share of the claim's medical terms (those not taken from the presentation) that the
  cited texts mention, so an unsupported specific term ("bacterial") costs more than an unmatched common word.
- *negation mismatch*: negation scopes ("no", "not", "without", "absent", "never", "does not", ..., until
  punctuation or "but/however/although", at most 6 words) are found in the claim and in every sentence of
  the cited texts. When a cited sentence covers at least 60 % of the claim's terms and a specific term is
  negated on one side and asserted on the other, and no cited sentence with the same polarity covers the
  claim as well, the claim is **CONTRADICTED** with confidence ``0.5 + 0.5 * coverage_of_that_sentence``.
  Negations the claim makes about the patient ("denies fever", or a term the presentation itself negates)
  are not counted.
- otherwise **SUPPORTED** when ``s >= support_floor`` (confidence ``s``), else **INSUFFICIENT** (confidence
  ``1 - s``). A clinical claim without a valid citation is INSUFFICIENT with confidence 1.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agents.types import ClaimCheck, Evidence, Verdict
from knowledge.text import CLAIM_STOP as STOP
from knowledge.text import CLAIM_WORD_RE as _WORD
from knowledge.text import claim_stem as stem
from knowledge.text import claim_words as words
from knowledge.text import fold_synonyms as normalise

from .claims import Claim, split_sentences

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
WEAK_STEMS = frozenset(stem(w) for w in WEAK)

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
PATIENT_NEG = re.compile(r"\b(?:denies|denied|deny|negative for|reports no|no history of)\b")
_SCOPE_END = re.compile(r"[.;:!?()\[\]]|\b(?:but|however|although|though|except|whereas|yet)\b")
_SCOPE_TOKEN = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*|,")
_SOFT_STOP = frozenset({",", "which", "who", "while", "whom", "whose"})


def negated_stems(text: str, max_words: int = 6) -> set[str]:
    """Content stems inside a negation scope of ``text``.

    A scope runs from the cue to a hard stop (sentence punctuation, "but/however/although/except/...") or
    to a soft stop ("," "which" "who" "while") once it holds a specific (non-generic) word, at most
    ``max_words`` content words: "is not a condition in which the pleura is inflamed" reaches "pleura".
    """
    t = normalise(text)
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
            specific = specific or st not in WEAK_STEMS
            n += 1
            if n >= max_words:
                break
    for m in _NEG_POST.finditer(t):
        before = t[: m.start()]
        start = max((x.end() for x in _SCOPE_END.finditer(before)), default=0)
        ws = [w for w in _WORD.findall(before[start:]) if w not in STOP and w not in HEDGES and w not in NEGATORS]
        out.update(stem(w) for w in ws[-3:])
    return out


# ---------------------------------------------------------------------------------------------------------
# evidence side

def cited_text(ev: Evidence, span: tuple[int, int] | None) -> tuple[str, str | None]:
    """The text a citation points at; a span outside the evidence falls back to the whole text (with a note)."""
    if span is None:
        return ev.text, None
    base = ev.span[0] if ev.span else 0
    a, b = span[0] - base, span[1] - base
    if 0 <= a < b <= len(ev.text):
        return ev.text[a:b], None
    return ev.text, f"span {span[0]}-{span[1]} outside {ev.id}; checked the whole text"


def vocabulary(evidence: list[Evidence]) -> set[str]:
    """Medical terms of this call: stems of evidence titles, queries and KG triple/concept texts."""
    vocab: set[str] = set()
    for ev in evidence:
        bits = [ev.title or "", ev.query or ""]
        if ev.kind == "triple" and (ev.meta or {}).get("mined"):
            # an edge mined from a reference sentence: its two concepts are the terms, not the whole sentence
            bits += [str(ev.meta.get("subject_name") or ""), str(ev.meta.get("object_name") or "")]
        elif ev.kind in ("triple", "concept"):
            bits.append(ev.text)
        for b in bits:
            vocab.update(content_stems(b))
    return {v for v in vocab if v not in WEAK_STEMS}


@dataclass
class ScoredClaim:
    """A claim kept for checking, with its content stems and the surface word of each stem."""
    claim: Claim
    stems: list[str]
    surface: dict[str, str]


# ---------------------------------------------------------------------------------------------------------
# the check

class ClaimScorer:
    """Scores the claims of one answer against one evidence list (one instance per verification).

    ``embed(texts) -> array`` (unit vectors) enables the semantic similarity; an embedder failure is noted in
    :attr:`notes` and the remaining claims are checked lexically only.
    """

    def __init__(self, evidence: list[Evidence], presentation: str | None = None, *,
                 embed: Callable[[list[str]], np.ndarray] | None = None, support_floor: float = 0.5,
                 sim_low: float = 0.45, sim_high: float = 0.85, lexical_shortcut: float = 0.98,
                 max_units_per_evidence: int = 80):
        self.by_id = {ev.id: ev for ev in evidence}
        self.pres_stems = set(content_stems(presentation or ""))
        self.pres_neg = negated_stems(presentation or "")
        self.vocab = vocabulary(evidence)
        self.embed = embed
        self.support_floor = support_floor
        self.sim_low, self.sim_high = sim_low, sim_high
        self.lexical_shortcut = lexical_shortcut
        self.max_units_per_evidence = max_units_per_evidence
        self.notes: list[str] = []
        self.cited_text: dict[str, tuple[str, str | None]] = {}   # raw citation -> (text, note)
        self._units: list[str] = []   # checkable pieces of the cited texts (sentences, adjacent pairs)
        self._unit_index: dict[str, list[int]] = {}

    def weight(self, s: str, surface: dict[str, str]) -> float:
        if s in WEAK_STEMS:
            return 0.5
        w = surface.get(s, s)
        return 2.0 if (s in self.vocab or is_medical_word(w)) else 1.0

    # -- which claims are checked ----------------------------------------------------------------------
    def select(self, claims: list[Claim], skipped: list[str]) -> list[ScoredClaim]:
        """Claims worth checking; uncited meta sentences and presentation restatements go to ``skipped``."""
        checked: list[ScoredClaim] = []
        for cl in claims:
            surf: dict[str, str] = {}
            for w in words(cl.clean):
                surf.setdefault(stem(w), w)
            stems = content_stems(cl.clean)
            med = [s for s in stems if self.weight(s, surf) >= 2.0]
            if not cl.citations:
                if not med and len([s for s in stems if s not in WEAK_STEMS]) < 3:
                    skipped.append(f"non-clinical sentence: {cl.clean}")
                    continue
                if stems and self.pres_stems and all(s in self.pres_stems for s in stems):
                    skipped.append(f"restates the presentation: {cl.clean}")
                    continue
            checked.append(ScoredClaim(cl, stems, surf))
        self._prepare_units(checked)
        return checked

    def _prepare_units(self, checked: list[ScoredClaim]) -> None:
        for sc in checked:
            for cit in sc.claim.citations:
                key = cit.raw
                if key in self.cited_text:
                    continue
                self.cited_text[key] = cited_text(self.by_id[cit.id], cit.span)
                sents = split_sentences(self.cited_text[key][0]) or [self.cited_text[key][0]]
                idx: list[int] = []
                cand = list(sents)
                cand += [f"{a} {b}" for a, b in zip(sents, sents[1:])]
                for u in cand[: self.max_units_per_evidence]:
                    idx.append(len(self._units))
                    self._units.append(u)
                self._unit_index[key] = idx

    # -- one claim -------------------------------------------------------------------------------------
    def _similarity(self, cl: Claim) -> float | None:
        """Best cosine between the claim and a unit of its cited texts (None when not computed)."""
        if self.embed is None:
            return None
        uids = [u for c in cl.citations for u in self._unit_index.get(c.raw, [])]
        if not uids:
            return None
        try:
            cvec = self.embed([cl.clean])
            uvec = self.embed([self._units[u] for u in uids])
            return float(np.max(cvec @ uvec.T))
        except Exception as exc:  # noqa: BLE001 — degrade to lexical only, and say so
            self.notes.append(f"embedder failed ({type(exc).__name__}: {exc}); lexical check only")
            self.embed = None
            return None

    def score(self, sc: ScoredClaim) -> ClaimCheck:
        cl, stems, surf = sc.claim, sc.stems, sc.surface
        weight = self.weight
        if not cl.citations:
            return ClaimCheck(claim=cl.clean, citations=[], verdict="INSUFFICIENT", confidence=1.0,
                              note="clinical claim without citation")
        ids = list(dict.fromkeys(c.id for c in cl.citations))
        ev_texts = [self.cited_text[c.raw][0] for c in cl.citations]
        span_notes = [self.cited_text[c.raw][1] for c in cl.citations if self.cited_text[c.raw][1]]
        titles = " ".join((self.by_id[i].title or "") for i in ids)
        ev_stems = set(content_stems(" ".join(ev_texts) + " " + titles))
        total = sum(weight(s, surf) for s in stems) or 1.0
        got = 0.0
        missing = []
        for s in stems:
            w = weight(s, surf)
            if s in ev_stems:
                got += w
            elif s in self.pres_stems:
                got += 0.5 * w
                missing.append(s + "(presentation)")
            else:
                missing.append(s)
        lex = got / total if stems else 0.0

        # semantic similarity only for claims the lexical check does not fully cover
        # (a claim quoting its evidence needs no embedding: this keeps the offline path fast)
        sem = self._similarity(cl) if lex < self.lexical_shortcut else None
        if sem is not None:
            s_n = min(1.0, max(0.0, (sem - self.sim_low) / (self.sim_high - self.sim_low)))
            support = 0.5 * lex + 0.5 * s_n
        else:
            support = lex
        # specific medical terms the evidence does not mention weaken the support
        med_terms = [s for s in stems if weight(s, surf) >= 2.0 and s not in self.pres_stems]
        if med_terms:
            med_cov = sum(s in ev_stems for s in med_terms) / len(med_terms)
            support *= 0.5 + 0.5 * med_cov

        conflict_best, conflict_terms, conflict_id = self._negation_conflict(cl, stems, surf, total, titles)
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
        return ClaimCheck(claim=cl.clean, citations=ids, verdict=verdict, confidence=round(conf, 4),
                          method="deterministic", note="; ".join(note_bits))

    def _negation_conflict(self, cl: Claim, stems: list[str], surf: dict[str, str], total: float,
                           titles: str) -> tuple[float, set[str], str | None]:
        """Negation mismatch, sentence by sentence: (coverage of the conflicting sentence, terms, evidence id);
        no terms when there is none, or when another cited sentence with the same polarity covers as well."""
        claim_neg = negated_stems(cl.clean)
        if PATIENT_NEG.search(normalise(cl.clean)):
            claim_neg = set()
        claim_neg -= self.pres_neg
        claim_pos = set(stems) - claim_neg - negated_stems(cl.clean)
        conflict_best, conflict_terms, conflict_id, agree_best = 0.0, set(), None, 0.0
        title_stems = set(content_stems(titles))
        for c in cl.citations:
            for sent in split_sentences(self.cited_text[c.raw][0]):
                s_neg = negated_stems(sent)
                s_all = set(content_stems(sent)) | s_neg
                s_pos = s_all - s_neg
                cov = sum(self.weight(s, surf) for s in stems if s in s_all | title_stems) / total
                if cov < 0.6:
                    continue
                terms = ((claim_neg & s_pos) | ((claim_pos - self.pres_neg) & s_neg)) - WEAK_STEMS
                if terms and cov > conflict_best:
                    conflict_best, conflict_terms, conflict_id = cov, terms, c.id
                elif not terms:
                    agree_best = max(agree_best, cov)
        if conflict_terms and agree_best >= conflict_best:
            conflict_terms = set()   # another cited sentence says the same thing with the same polarity
        return conflict_best, conflict_terms, conflict_id


__all__ = ["NEGATORS", "HEDGES", "WEAK", "STOP", "ClaimScorer", "ScoredClaim", "content_stems", "cited_text",
           "is_medical_word", "negated_stems", "normalise", "stem", "vocabulary", "words"]

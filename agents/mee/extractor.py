"""MEE: medical entity extraction (paper Eq. 1), ``E = {(e_i, c_i)} = MEE(q)``.

Deterministic path (always on):

1. spaCy pipeline from parts (:mod:`agents.nlp`): scispaCy tokenizer, sentence splitter, medspaCy ConText and
   Sectionizer.
2. Vocabulary matching: every name and synonym of the knowledge-graph vocabulary (diseases, symptoms, HPO
   phenotypes, drugs, anatomy) becomes a phrase key of folded token norms (lower case, regular plurals folded),
   looked up as token n-grams (a hash-table phrase matcher); short upper-case acronyms match case-sensitively
   (spaCy ``PhraseMatcher`` on ORTH). Junk terms (stop words,
   very short or very generic words) are dropped.
3. Abbreviations: scispaCy's ``AbbreviationDetector`` (Schwartz-Hearst, "chest pain (CP)") plus a small clinical
   abbreviation map (SOB, HTN, N/V, ...) run as medspaCy ``TargetMatcher`` rules; document-defined abbreviations
   win over the map.
4. Fuzzy linking: scispaCy ``CandidateGenerator`` over a char-3-gram TF-IDF nearest-neighbour index built from the
   same vocabulary, for words that are not in the vocabulary ("wheezng", "dyspnoea"); a candidate is accepted when
   both the index similarity and a character-level ratio pass their thresholds.
5. Vital signs and test results (:mod:`.vitals`, :mod:`.labs`): readings such as "pulse is 120/min", "BP 85/50
   mm Hg", "SpO2 88%", "sodium 125 mEq/L" outside their reference limits, and results in words ("elevated
   troponin", "ST elevation", "positive ANA") become finding entities (category "symptom", linked to Symptom
   Ontology or HPO concepts) with the exact character span of the expression. A reading is read as a whole: the
   words inside it are not matched again, and a reading inside its limits gives only the denials of what it rules
   out ("platelets 250,000/mm3": no thrombocytopenia, no thrombocytosis; marked ``measured``), left out when the
   presentation states the finding ("fevers for a week" beside today's 37.1 °C). A measured value ignores negation
   cues; a result in words keeps the negation of its context and its own ("troponin is normal").
   The same concept found by the vocabulary elsewhere ("fever" and "temperature 39.2°C") is listed once.
6. medspaCy ConText (negation, history, family, hypothetical) and Sectionizer (family-history section -> family,
   past-medical-history and "History:" sections -> historical, allergies -> hypothetical). A section's flag
   reaches to the end of its header's line, or to an earlier sentence that opens on the present illness ("She
   presents with ..."), or, for a header alone on its line, to the next blank line (:mod:`.sections`).
7. Regexes for age, sex and durations (read around the measurements: "temp 101 F" is no 101-year-old woman).

With an LLM client (``agents.llm.LLMClient``): one structured call lists entities; they are kept only when their text
occurs in the input, linked to the vocabulary, passed through ConText with the rule entities and merged
(``origin`` = "llm" or "both"). Any LLM failure leaves the deterministic result and a warning.

Start-up artefacts (phrase table, TF-IDF vectorizer, ANN index) are cached under
``knowledge.paths.build_dir()/mee/<vocabulary hash>/`` so a second start only loads them.
"""
from __future__ import annotations

import difflib
import hashlib
import logging
import re
import time
import warnings as _warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agents.prompts import load_prompt
from agents.types import Category, Entity, Extraction
from knowledge.text import fold

from .demographics import find_age_sex, find_durations, illness_course, opening_relative
from .findings import Finding, denials, mask, resolve_overlaps
from .labs import find_lab_phrases, lab_finding, read_lab_values
from .lay import find_lay_phrases
from .travel import find_places
from .lexicon import (
    ABBREVIATION_CATEGORY,
    CATEGORY_MAP,
    CLINICAL_ABBREVIATIONS,
    HISTORY_PRIORITY,
    JUNK_TERMS,
    Lexicon,
    VocabEntryLike,
    load_or_build_lexicon,
    vocabulary_hash,
)
from .linker import ANN_EF_CONSTRUCTION, ANN_M, Linker
from .sections import section_scope_end
from .vitals import read_vitals, vital_finding

log = logging.getLogger(__name__)

# "A 24-year-old woman with type 1 diabetes has vomiting ...", "a 60-year-old man with hypertension and COPD presents
# with ...", "a 19-year-old with type 1 diabetes has ...": the conditions named between the patient (the noun may be
# left out) and the verb that opens the present illness are known ones — context (past history), not findings of the
# illness the differential is about. Only disease names are taken so
# ("a 30-year-old man with fever and cough has ..." states complaints), and not when the phrase dates them ("with a
# 3-day history of ...", "with 2 weeks of ...").
_KNOWN_CONDITIONS = re.compile(
    r"^\W*(?:(?:an?|the)\s+)?\d+[\s-](?:year|month|week|day)s?[\s-]old\s+(?:(?:[\w-]+\s+){0,3}?"
    r"(?:man|woman|boy|girl|male|female|patient|infant|child|neonate|newborn|toddler|adolescent|gentleman|lady|"
    r"veteran|student|mother|primigravida|multigravida|gravida\s*\d+)\s+)?with\s+(?P<known>[^.;:]{3,160}?)\s*,?\s+"
    r"(?:who\s+)?(?:has|had|presents|presented|comes|came|is\s+brought|was\s+brought|develops|developed|complains|"
    r"reports|is\s+admitted|was\s+admitted|is\s+evaluated|is\s+seen|returns|visits)\b", re.I)
_DATED = re.compile(r"\b(?:\d+|a|an|one|two|three|four|five|six|several|few)[\s-]+(?:hours?|days?|weeks?|months?)\b|"
                    r"\bhistory\s+of\b(?!\s+(?:known\s+)?\w+\s+(?:disease|diabetes))|\bsince\b|\bsudden|\bacute", re.I)
_DISEASE_NAME = re.compile(r"\b(?:diabetes|disease|syndrome|disorder|cancer|carcinoma|lymphoma|leuka?emia|myeloma|"
                           r"infection|hypertension|asthma|failure|cirrhosis|anemia|anaemia|\w+itis)\b", re.I)


def known_conditions_span(text: str) -> tuple[int, int] | None:
    """The character span of the known conditions a presentation's opening names ("A 24-year-old woman with type 1
    diabetes has ..."), or None (see ``_KNOWN_CONDITIONS``; a dated phrase names the present illness)."""
    m = _KNOWN_CONDITIONS.search(text)
    if m is None or _DATED.search(m.group("known")):
        return None
    return m.span("known")


# "on day 6 of co-amoxiclav for pneumonia", "being treated for tuberculosis": a disease under treatment is a known
# one — context, not a finding of what the patient has now (the diarrhoea that follows). The span runs from "for" to
# the clause's end; only disease names in it are taken, so "taking paracetamol for the fever" keeps the fever. Not the
# reason for an admission: "admitted with an asthma exacerbation" is often the present illness.
_TREATED_FOR = re.compile(
    r"\b(?:(?:treated|treating|treatment|(?:chemo|radio)?therapy|antibiotics)(?:\s+(?:with|on)\s+[\w-]+(?:\s+[\w-]+)?)?|"
    r"on\s+day\s+\d+\s+of\s+[\w-]+(?:\s+[\w-]+)?)\s+for\s+"
    r"(?P<known>[^.;:,()]{3,80}?)(?=\s*(?:[.;:,()]|$|\b(?:and|but|who|which|when|now|since|has|had|is|was|"
    r"presents|developed|develops|\d+\s+\w+\s+ago|last|this)\b))", re.I)


def treated_conditions_spans(text: str) -> list[tuple[int, int]]:
    """The character spans of the conditions a presentation says are under treatment (``_TREATED_FOR``): "on day 6 of
    co-amoxiclav for pneumonia", "being treated for tuberculosis"."""
    return [m.span("known") for m in _TREATED_FOR.finditer(text)]


# Adjectives that "non-" denies ("non-pruritic", "nonbloody", "non-tender"): the names the vocabulary gives with
# "non-" ("non-pitting edema", "non-fluent aphasia", "non-Hodgkin lymphoma") are not among them, and neither is
# "blanching" ("a non-blanching rash" is petechiae, a lay-table row), and neither is "productive" (a nonproductive
# cough is a dry cough: the vocabulary's term and a lay-table row)
_NON_PREFIXED = re.compile(r"\bnon-?\s?(?:pruritic|itchy|bloody|bilious|painful|tender|radiating|"
                           r"exertional|purulent|foul[\s-]smelling)\b", re.IGNORECASE)

_DRUG_SUFFIX = re.compile(
    r"(?:olol|pril|sartan|statin|mab|cillin|mycin|floxacin|azole|vir|tidine|prazole|dipine|triptan|gliptin|"
    r"gliflozin|caine|sone|olone|parin|xaban|oxetine|ipramine|azepam|zolam|tropin|terol)$"
)
_DRUG_CUE = re.compile(r"\b(?:taking|takes|took|on|started|prescribed|using|uses|used)\s+$", re.I)


class LLMEntity(BaseModel):
    """One entity as listed by the language model."""

    text: str = Field(description="the words exactly as written in the presentation")
    category: Category
    negated: bool = False


class LLMEntities(BaseModel):
    entities: list[LLMEntity] = Field(default_factory=list)


class MEE:
    """Medical entity extraction agent.

    ``vocabulary``: VocabEntry-like objects (``id``, ``name``, ``synonyms``, ``category``); ``None`` loads the
    knowledge graph's vocabulary (``knowledge.kg.load_or_build().vocabulary()``).
    ``pipeline``: ``"blank"`` or an installed spaCy/scispaCy model name (e.g. ``"en_core_sci_sm"``).
    ``llm``: an ``agents.llm.LLMClient`` (or ``None``: deterministic only).
    ``fuzzy``: link out-of-vocabulary words through the candidate generator.
    """

    def __init__(
        self,
        vocabulary: Sequence[VocabEntryLike] | None = None,
        *,
        pipeline: str = "blank",
        llm: Any = None,
        cache_dir: Path | str | None = None,
        fuzzy: bool = True,
        fuzzy_min_similarity: float = 0.55,
        fuzzy_min_ratio: float = 0.84,
        sentences: str = "rules",
    ):
        from agents.nlp import build_pipeline  # noqa: PLC0415

        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        if vocabulary is None:
            from knowledge.kg import load_or_build  # noqa: PLC0415

            vocabulary = load_or_build().vocabulary()
        vocabulary = list(vocabulary)
        timings["vocabulary"] = time.perf_counter() - t0
        self.llm = llm
        self.fuzzy = fuzzy
        self.fuzzy_min_similarity = fuzzy_min_similarity
        self.fuzzy_min_ratio = fuzzy_min_ratio
        t = time.perf_counter()
        self.nlp = build_pipeline(pipeline, sentences=sentences)
        timings["pipeline"] = time.perf_counter() - t

        t = time.perf_counter()
        self.vocab_hash = vocabulary_hash(vocabulary)
        if cache_dir is None:
            from knowledge.paths import build_dir  # noqa: PLC0415

            cache_dir = build_dir() / "mee"
        self.pipe_tag = re.sub(r"[^\w.-]", "_", pipeline or "blank")
        self.cache_dir = Path(cache_dir) / self.vocab_hash
        self.lexicon = self._load_or_build_lexicon(vocabulary)
        timings["lexicon"] = time.perf_counter() - t

        t = time.perf_counter()
        self._build_matchers()
        timings["matchers"] = time.perf_counter() - t

        self.linker: Linker | None = None
        self.linker_error: str | None = None
        if fuzzy and self.lexicon.kb_aliases:
            t = time.perf_counter()
            try:
                alias_hash = hashlib.sha1("\n".join(sorted(self.lexicon.kb_aliases)).encode()).hexdigest()[:12]
                self.linker = Linker(self.lexicon,
                                     self.cache_dir / f"linker-{alias_hash}-M{ANN_M}-ef{ANN_EF_CONSTRUCTION}")
                timings["linker_build"] = self.linker.build_seconds
            except Exception as exc:  # noqa: BLE001  (degrade: exact matching still works)
                self.linker_error = f"fuzzy linker unavailable: {type(exc).__name__}: {exc}"
                log.warning(self.linker_error)
            timings["linker"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t0
        self.timings = timings
        self.prompt = load_prompt("mee")

    # ------------------------------------------------------------------ start-up
    def _load_or_build_lexicon(self, vocabulary: Sequence[VocabEntryLike]) -> Lexicon:
        tokenizer = self.nlp.tokenizer
        return load_or_build_lexicon(vocabulary, lambda s: [t.text for t in tokenizer(s)], self.cache_dir,
                                     self.pipe_tag)

    def _build_matchers(self) -> None:
        from medspacy.target_matcher import TargetMatcher, TargetRule  # noqa: PLC0415
        from scispacy.abbreviation import AbbreviationDetector  # noqa: PLC0415
        from spacy.matcher import PhraseMatcher  # noqa: PLC0415
        from spacy.tokens import Doc  # noqa: PLC0415

        vocab = self.nlp.vocab
        # Vocabulary phrases are looked up as token n-grams of folded norms in the lexicon's hash table: the same
        # result as a spaCy PhraseMatcher(attr="NORM") over ~10^5 patterns, without building 10^5 pattern Docs at
        # every start (seconds) — the table itself is cached on disk.
        self.max_phrase_len = min(12, max((len(t) for t in self.lexicon.phrase_tokens.values()), default=1))
        self.acronym_matcher = PhraseMatcher(vocab, attr="ORTH")
        if self.lexicon.acronyms:
            self.acronym_matcher.add("ACRO", [Doc(vocab, words=[a]) for a in self.lexicon.acronyms])
        # The clinical abbreviation map as medspaCy target rules (case-sensitive token patterns).
        self.abbrev_matcher = TargetMatcher(self.nlp, name="mee_abbreviations", result_type=None)
        self.abbrev_matcher.add([
            TargetRule(short, "ABBREVIATION", pattern=[{"TEXT": {"IN": [short, short + "."]}}], metadata={"expansions": list(exp)})
            for short, exp in CLINICAL_ABBREVIATIONS.items()
        ])
        self.abbreviation_detector = AbbreviationDetector(self.nlp)

    # ------------------------------------------------------------------ helpers
    def _match_phrases(self, doc) -> list[tuple[int, int, list[str]]]:
        """All (start, end, concept ids) token n-grams whose folded norms are a vocabulary phrase."""
        phrases = self.lexicon.phrases
        norms = [t.norm_ for t in doc]
        n = len(norms)
        out = []
        for i in range(n):
            if not any(c.isalnum() for c in norms[i]):
                continue
            key = ""
            for j in range(i, min(n, i + self.max_phrase_len)):
                key = norms[j] if j == i else f"{key} {norms[j]}"
                ids = phrases.get(key)
                if ids:
                    out.append((i, j + 1, ids))
        return out

    def _names_a_disease(self, ids: list[str]) -> bool:
        """Whether linked ids name a disease: one is a disease concept, or a phenotype named like one ("Type I
        diabetes mellitus"); a symptom's ids ("fever": SYMP and HP Fever) do not."""
        concepts = [self.lexicon.concepts.get(c) for c in ids]
        return any(c is not None and (c.category == "disease" or _DISEASE_NAME.search(c.name)) for c in concepts)

    def _pick(self, ids: list[str], history: bool) -> str:
        if not history or len(ids) == 1:
            return ids[0]
        return min(ids, key=lambda c: (HISTORY_PRIORITY.get(self.lexicon.concepts[c].category, 5), ids.index(c)))

    def _link_text(self, text: str) -> tuple[list[str], float]:
        """Concept ids for a free text (exact folded phrase, acronym, drug variant, then the fuzzy linker)."""
        stripped = text.strip()
        key = " ".join(fold(t.text) for t in self.nlp.tokenizer(stripped))
        if key in self.lexicon.phrases:
            return self.lexicon.phrases[key], 1.0
        if stripped in self.lexicon.acronyms:
            return self.lexicon.acronyms[stripped], 1.0
        if self.linker is not None and len(stripped) >= 4:
            cands = self.linker.candidates([stripped])[0]
            if cands:
                cid, alias, sim = cands[0]
                ratio = difflib.SequenceMatcher(None, stripped.lower(), alias).ratio()
                if sim >= self.fuzzy_min_similarity and ratio >= self.fuzzy_min_ratio \
                        and plausible_typo(stripped, alias):
                    return [c for c, _, s in cands if s >= sim - 1e-6], round(min(sim, ratio), 4)
        return [], 0.0

    # ------------------------------------------------------------------ extraction
    def extract(self, text: str) -> Extraction:
        if text is None:
            raise ValueError("MEE.extract needs a text (got None)")
        if not isinstance(text, str):
            raise TypeError(f"MEE.extract needs a str, got {type(text).__name__}")
        if not text.strip():
            return Extraction()
        warnings: list[str] = []
        vitals, labs = read_vitals(text), read_lab_values(text)
        # "temp 101 F" is a temperature, not a 101-year-old woman: demographics are read around the measurements
        age, sex, demo_spans = find_age_sex(mask(text, [(r.start, r.end) for r in vitals + labs]))
        durations = find_durations(text)
        known = [k for k in [known_conditions_span(text)] if k] + treated_conditions_spans(text)
        # "non-pruritic papules", "non-bloody diarrhoea": the word after "non-" is no finding of its own, and the
        # phrase it starts is read without it (papules; diarrhoea, not bloody diarrhoea)
        denied_words = [(m.start(), m.end()) for m in _NON_PREFIXED.finditer(text)]
        plain = mask(text, denied_words) if denied_words else text
        findings = resolve_overlaps([vital_finding(r, age) for r in vitals] + [lab_finding(r, sex, age) for r in labs]
                                    + find_lab_phrases(plain) + find_lay_phrases(plain))
        # an in-range value denies the findings it excludes (platelets 250,000/mm3: no thrombocytopenia)
        findings = [g for f in findings for g in denials(f)]

        nlp = self.nlp
        doc = nlp.make_doc(text)
        pipeline = dict(nlp.pipeline)
        for name in nlp.pipe_names:
            if name in ("medspacy_context", "medspacy_sectionizer"):
                continue
            doc = pipeline[name](doc)

        info: dict[tuple[int, int], dict[str, Any]] = {}
        spans = self._rule_spans(doc, info, demo_spans + denied_words, findings)

        llm_spans: list = []
        if self.llm is not None:
            llm_spans = self._llm_spans(text, doc, info, spans, warnings)

        from spacy.util import filter_spans  # noqa: PLC0415

        doc.ents = filter_spans(spans + llm_spans)
        if "medspacy_context" in pipeline:
            doc = pipeline["medspacy_context"](doc)
        # ConText's flags, before the sectionizer adds those of the sections (which reach only as far as
        # section_scope_end allows)
        context_flags = {(e.start, e.end): _context_flags(e) for e in doc.ents}
        # the relative a presentation opens with is the patient ("My son has ...", "Child of 4 with ...")
        subject = None
        if (opening := opening_relative(text)) is not None:
            subject = doc.char_span(*opening, alignment_mode="expand")
        section_attrs: dict[str, dict[str, Any]] = {}
        if "medspacy_sectionizer" in pipeline:
            doc = pipeline["medspacy_sectionizer"](doc)
            section_attrs = getattr(pipeline["medspacy_sectionizer"], "assertion_attributes_mapping", None) or {}

        entities: list[Entity] = []
        in_range: set[tuple[int, int]] = set()     # spans of in-range values (their entities are denials)
        for ent in doc.ents:
            meta = info.get((ent.start_char, ent.end_char))
            if meta is None:
                continue
            if _in_section_title(ent):
                continue                        # "Allergies:" is a header, not an allergy
            if _misread(doc, ent):
                continue                        # "eyes opening to pain", "a pale, white retina"
            flags = dict(context_flags.get((ent.start, ent.end), {}))
            if flags.get("is_family") and subject is not None and _family_cue_is(ent, subject):
                flags["is_family"] = False      # "My son has a cough": the son is the patient
            section = _section_of(doc, ent, section_attrs, flags)
            family = flags.get("is_family", False)
            # a relative's condition is not the patient's past history
            historical = flags.get("is_historical", False) and not family
            ids = meta.get("ids") or []
            if any(a <= ent.start_char and ent.end_char <= b for a, b in known) and self._names_a_disease(ids):
                historical = True               # a known condition ("a woman with asthma has ...", "treated for TB")
            cid = self._pick(ids, history=historical or family) if ids else None
            concept = self.lexicon.concepts.get(cid) if cid else None
            category: Category = meta.get("category") or (
                CATEGORY_MAP.get(concept.category, "symptom") if concept else "symptom")
            if concept is not None:
                category = CATEGORY_MAP.get(concept.category, category)
            negated = flags.get("is_negated", False) or bool(meta.get("llm_negated") and meta.get("origin") == "llm")
            if negated and (_is_the_exception(doc, ent) or _opens_a_new_clause(doc, ent)):
                negated = False                 # "other than the rash, the review of systems is negative";
                                                # "I'm not hungry, and swallowing is difficult"
            start, end = ent.start_char, ent.end_char
            found = meta.get("finding")
            if found is not None and found.get("in_range"):
                in_range.add((found["start"], found["end"]))
            if found is not None:
                # a measured value is a fact whatever negation cue precedes it; a result in words keeps the
                # negation of its context ("no ST elevation") and its own ("troponin is normal")
                start, end = found["start"], found["end"]
                negated = found["negated"] or (negated and not found["measured"])
            entities.append(Entity(
                text=text[start:end], category=category, start=start, end=end,
                concept_id=cid, concept_name=concept.name if concept else meta.get("name"),
                link_score=float(meta.get("score", 0.0)), negated=negated, historical=historical,
                family=family, hypothetical=flags.get("is_hypothetical", False),
                uncertain=flags.get("is_uncertain", False), section=section, origin=meta.get("origin", "rules"),
                measured=bool(found and found["measured"]),
            ))
            # A multi-expansion abbreviation (N/V -> nausea, vomiting) yields one entity per expansion.
            for extra in meta.get("extra_ids", []):
                c2 = self.lexicon.concepts.get(extra)
                if c2 is not None:
                    entities.append(entities[-1].model_copy(update={
                        "concept_id": c2.id, "concept_name": c2.name,
                        "category": CATEGORY_MAP.get(c2.category, "symptom")}))

        entities = _drop_contradicted_denials(entities, in_range)
        for s, e in demo_spans:
            entities.append(Entity(text=text[s:e], category="demographic", start=s, end=e, link_score=1.0))
        entities.sort(key=lambda x: (x.start, x.end))
        if self.linker_error:
            warnings.append(self.linker_error)
        entities = _dedupe(entities)
        return Extraction(entities=entities, age_years=age, sex=sex, durations=durations,
                          course=illness_course(text, durations, entities), places=find_places(text),
                          warnings=warnings)

    def _rule_spans(self, doc, info: dict, demo_spans: list[tuple[int, int]],
                    findings: Sequence[Finding] = ()) -> list:
        from spacy.tokens import Span  # noqa: PLC0415
        from spacy.util import filter_spans  # noqa: PLC0415

        # A measurement or test result is read as a whole: the words inside it ("blood pressure" in "blood
        # pressure is 120/80 mm Hg", "RA" in "O2 sat 91% RA") are no findings of their own, normal values included.
        blocked = list(demo_spans) + [(f.start, f.end) for f in findings]

        def overlaps_demo(span) -> bool:
            return any(span.start_char < e and s < span.end_char for s, e in blocked)

        candidates = []
        # 1. vocabulary phrases (folded norms) and acronyms (case-sensitive)
        for s, e, ids in self._match_phrases(doc):
            candidates.append((doc[s:e], {"ids": ids, "score": 1.0, "origin": "rules"}))
        for _, s, e in self.acronym_matcher(doc):
            span = doc[s:e]
            ids = self.lexicon.acronyms.get(span.text)
            if ids:
                candidates.append((span, {"ids": ids, "score": 1.0, "origin": "rules"}))

        # 2. abbreviations defined in the text: "chest pain (CP)" -> CP means chest pain
        defined: dict[str, str] = {}
        doc._.abbreviations = []  # never append to the extension's shared default list
        try:
            with _warnings.catch_warnings():
                _warnings.filterwarnings("ignore", message=r"\[W036\]")  # matchers without patterns
                self.abbreviation_detector(doc)
            for short in doc._.abbreviations:
                long_form = short._.long_form
                if long_form is not None:
                    defined[short.text] = long_form.text
        except Exception as exc:  # noqa: BLE001
            log.debug("abbreviation detector failed: %s", exc)
        finally:
            doc._.abbreviations = []
        if defined:
            for short in _find_tokens(doc, defined):
                ids, score = self._link_text(defined[short.text])
                if ids:
                    candidates.append((short, {"ids": ids, "score": score, "origin": "rules",
                                               "name": defined[short.text]}))
        # 3. clinical abbreviation map (medspaCy TargetMatcher rules)
        with _warnings.catch_warnings():
            _warnings.filterwarnings("ignore", message=r"\[W036\]")
            abbrev_spans = self.abbrev_matcher(doc)
        for span in abbrev_spans:
            if span.text in defined:
                continue
            expansions = span._.target_rule.metadata.get("expansions", [])
            all_ids: list[str] = []
            for exp in expansions:
                ids, _ = self._link_text(exp)
                if ids:
                    all_ids.append(ids[0])
            if all_ids:
                candidates.append((span, {"ids": all_ids[:1], "extra_ids": all_ids[1:], "score": 0.9,
                                          "origin": "rules"}))
            elif expansions:
                candidates.append((span, {"ids": [], "score": 0.5, "origin": "rules", "name": expansions[0],
                                          "category": ABBREVIATION_CATEGORY.get(expansions[0], "disease")}))

        # 4. a drug outside the vocabulary: drug-name suffix right after a medication cue ("taking metoprolol")
        for tok in doc:
            low = tok.norm_
            if not tok.is_alpha or len(low) < 5:
                continue
            if _DRUG_SUFFIX.search(low) and _DRUG_CUE.search(doc.text[max(0, tok.idx - 20):tok.idx]):
                candidates.append((doc[tok.i:tok.i + 1], {"ids": [], "score": 0.5, "origin": "rules",
                                                          "category": "drug"}))

        candidates = [c for c in candidates if not overlaps_demo(c[0])]
        # 5. abnormal vital signs and test results (findings.py, vitals.py, labs.py)
        candidates += self._finding_candidates(doc, findings)
        kept = filter_spans([c[0] for c in candidates])
        by_pos = {}
        for span, meta in candidates:
            by_pos.setdefault((span.start, span.end), meta)

        # 6. fuzzy linking of out-of-vocabulary words not covered by a match
        if self.linker is not None:
            kept = filter_spans(kept + self._fuzzy_spans(doc, kept, by_pos, blocked))

        out = []
        for span in kept:
            meta = by_pos[(span.start, span.end)]
            label = meta.get("category") or "ENTITY"
            new = Span(doc, span.start, span.end, label=label)
            info[(new.start_char, new.end_char)] = meta
            out.append(new)
        return out

    def _finding_concept(self, f: Finding) -> str | None:
        """The first of the finding's concept ids the vocabulary knows, else a symptom or phenotype named like
        it, else ``None``."""
        for cid in f.concept_ids:
            if cid in self.lexicon.concepts:
                return cid
        if f.name:
            key = " ".join(fold(t.text) for t in self.nlp.tokenizer(f.name))
            for cid in self.lexicon.phrases.get(key, ()):
                if self.lexicon.concepts[cid].category in ("symptom", "phenotype", "finding", "sign"):
                    return cid
        return None

    def _finding_candidates(self, doc, findings: Sequence[Finding]) -> list:
        """One span per abnormal finding (findings sharing a span share it: "sodium is normal" is neither hypo- nor
        hypernatremia), with the finding's exact character span in its metadata."""
        groups: dict[tuple[int, int], list[Finding]] = {}
        for f in findings:
            if f.abnormal:
                groups.setdefault((f.start, f.end), []).append(f)
        out = []
        for (s, e), group in groups.items():
            span = doc.char_span(s, e, alignment_mode="expand")
            if span is None or not len(span):
                continue
            ids = list(dict.fromkeys(c for c in (self._finding_concept(f) for f in group) if c))
            out.append((span, {"ids": ids[:1], "extra_ids": ids[1:], "score": 1.0, "origin": "rules",
                               "category": "symptom", "name": group[0].name,
                               "finding": {"start": s, "end": e, "measured": group[0].measured,
                                           "negated": group[0].negated, "in_range": group[0].in_range}}))
        return out

    def _fuzzy_spans(self, doc, kept: list, by_pos: dict, demo_spans) -> list:
        from spacy.lang.en.stop_words import STOP_WORDS  # noqa: PLC0415

        covered = set()
        for span in kept:
            covered.update(range(span.start, span.end))
        for s, e in demo_spans:
            sp = doc.char_span(s, e, alignment_mode="expand")
            if sp is not None:
                covered.update(range(sp.start, sp.end))

        def usable(tok) -> bool:
            return tok.i not in covered and tok.is_alpha and tok.norm_ not in STOP_WORDS

        mentions: list[tuple[int, int, str]] = []
        for tok in doc:
            if not usable(tok) or len(tok.text) < 5 or tok.norm_ in self.lexicon.known_words:
                continue
            if tok.norm_ in JUNK_TERMS:
                continue
            # the unknown word alone, and with one usable neighbour on each side
            mentions.append((tok.i, tok.i + 1, tok.text))
            if tok.i > 0 and usable(doc[tok.i - 1]):
                mentions.append((tok.i - 1, tok.i + 1, doc[tok.i - 1:tok.i + 1].text))
            if tok.i + 1 < len(doc) and usable(doc[tok.i + 1]):
                mentions.append((tok.i, tok.i + 2, doc[tok.i:tok.i + 2].text))
        if not mentions:
            return []
        results = self.linker.candidates([m[2] for m in mentions])
        accepted = []
        for (s, e, mtext), cands in zip(mentions, results):
            if not cands:
                continue
            cid, alias, sim = cands[0]
            if sim < self.fuzzy_min_similarity:
                continue
            ratio = difflib.SequenceMatcher(None, mtext.lower(), alias).ratio()
            if ratio < self.fuzzy_min_ratio or not plausible_typo(mtext, alias):
                continue
            ids = [c for c, _, sc in cands if sc >= sim - 1e-6]
            span = doc[s:e]
            by_pos.setdefault((s, e), {"ids": ids, "score": round(min(sim, ratio), 4), "origin": "rules",
                                       "fuzzy": alias})
            accepted.append(span)
        return accepted

    def _llm_spans(self, text: str, doc, info: dict, rule_spans: list, warnings: list[str]) -> list:
        from spacy.tokens import Span  # noqa: PLC0415

        if not getattr(self.llm, "enabled", True):
            return []
        messages = [{"role": "system", "content": self.prompt},
                    {"role": "user", "content": f"Presentation:\n{text}"}]
        try:
            res = self.llm.structured(messages, LLMEntities, tag="mee")
        except Exception as exc:  # noqa: BLE001
            warnings.append(f"LLM entity extraction failed ({type(exc).__name__}: {exc}); rules only")
            return []
        if getattr(res, "error", None) or getattr(res, "value", None) is None:
            warnings.append(f"LLM entity extraction failed ({getattr(res, 'error', 'no value')}); rules only")
            return []
        value = res.value
        if isinstance(value, dict):
            value = LLMEntities.model_validate(value)
        lower = text.lower()
        out = []
        dropped = 0
        taken = [(s.start_char, s.end_char) for s in rule_spans]
        for ent in value.entities:
            needle = " ".join(ent.text.split()).lower()
            if len(needle) < 2:
                continue
            pos = lower.find(needle)
            if pos < 0:
                dropped += 1
                continue
            span = doc.char_span(pos, pos + len(needle), alignment_mode="expand")
            if span is None:
                dropped += 1
                continue
            overlap = [k for k in taken if k[0] < span.end_char and span.start_char < k[1]]
            if overlap:
                for k in overlap:
                    info[k]["origin"] = "both"
                continue
            ids, score = self._link_text(span.text)
            meta = {"ids": ids, "score": score, "origin": "llm", "llm_negated": ent.negated,
                    "category": None if ids else ent.category}
            new = Span(doc, span.start, span.end, label=ent.category)
            info[(new.start_char, new.end_char)] = meta
            taken.append((new.start_char, new.end_char))
            out.append(new)
        if dropped:
            warnings.append(f"dropped {dropped} LLM entit{'y' if dropped == 1 else 'ies'} not found in the text")
        return out


def plausible_typo(mention: str, alias: str) -> bool:
    """Whether a near match could be a misspelling of ``alias`` rather than another word: word by word, the first
    letters agree (a slip rarely changes the first letter, while "pitching"/"itching", "nagging"/"gagging",
    "oriented"/"disoriented" and "trouble keeping"/"trouble sleeping" are different words)."""
    said, known = mention.lower().split(), alias.lower().split()
    if not said or len(said) != len(known):
        return bool(said) and bool(known) and said[0][0] == known[0][0]
    return all(a[0] == b[0] for a, b in zip(said, known))


def _find_tokens(doc, forms: dict[str, str]) -> list:
    """Every occurrence of the given short forms as whole token sequences, outside parentheses' long forms."""
    out = []
    for tok in doc:
        if tok.text in forms:
            out.append(doc[tok.i:tok.i + 1])
    return out


# "other than X", "apart from X", "except for X": X is what the sentence says is there, whatever it denies around it
# ("Other than the pruritic rash, a review of systems is negative"; "she has no complaints apart from fatigue")
_EXCEPTION_BEFORE = re.compile(r"\b(?:other\s+than|apart\s+from|aside\s+from|except(?:\s+for)?|besides)\s+"
                               r"(?:[\w'-]+\s+){0,3}$", re.I)


def _is_the_exception(doc, ent) -> bool:
    """The entity is the exception a negated sentence makes (a few words after "other than" and the like)."""
    try:
        start = ent.sent.start_char
    except (AttributeError, ValueError):
        start = max(0, ent.start_char - 80)
    return bool(_EXCEPTION_BEFORE.search(doc.text[start:ent.start_char]))


# a finding that opens a clause of its own after a denial ("I'm not in the mood to eat, and swallowing is difficult";
# "no nausea, but vomiting has started"): a joiner before it, a verb after it
_JOINER_BEFORE = re.compile(r"(?:,|\b(?:and|but|while|although|though|yet))\s*(?:(?:and|but)\s+)?(?:(?:the|a|an)\s+)?$",
                            re.I)
_VERB_AFTER = re.compile(r"^\s*(?:is|are|was|were|has|have|had|feels?|felt|seems?|seemed|gets?|got|becomes?|became|"
                         r"keeps?|kept|hurts?|hurt|started|starts|began|begins)\b", re.I)
# the rest of the clause after the entity, and a denial or an ending in it ("dyspnoea is not present", "cough has
# resolved"): the denial before the joiner then stands
_CLAUSE_REST = re.compile(r"[^.,;:!?\n]*")
_DENIAL = re.compile(r"\b(?:not|no|never|none|nothing|absent|negative|denie[sd]|without|resolved|gone|stopped|"
                     r"subsided|cleared|disappeared|went\s+away)\b|n't\b", re.I)


def _opens_a_new_clause(doc, ent) -> bool:
    """The negated entity is the subject of a new clause after its denial: every negation cue ConText found for it
    comes before it, a joiner ("and", "but", a comma) stands between the last cue and the entity, and a verb
    follows the entity's head word ("swallowing is difficult" read as one finding counts too)."""
    cues = [m for m in getattr(ent._, "modifiers", ()) or () if str(m.category).upper() == "NEGATED_EXISTENCE"]
    if not cues or any(m.modifier_span[0] >= ent.start for m in cues):
        return False
    last = min(max(m.modifier_span[1] for m in cues), ent.start)    # (a cue reaching into the entity: no joiner)
    if not _JOINER_BEFORE.search(doc.text[doc[last].idx:ent.start_char]):
        return False
    # the verb right after the entity's first word (inside a multi-word finding) or right after the entity, and no
    # denial of its own in the rest of the clause ("and dyspnoea is not present")
    inside = doc.text[doc[ent.start].idx + len(doc[ent.start].text):ent.end_char]
    rest = _CLAUSE_REST.match(doc.text[ent.end_char:]).group(0)
    return not _DENIAL.search(inside + rest) and bool(_VERB_AFTER.search(inside) or _VERB_AFTER.search(rest))


def _family_cue_is(ent, subject) -> bool:
    """Every family cue ConText found for the entity lies in ``subject``, the opening phrase that names the patient
    (a span of the same doc)."""
    cues = [m for m in getattr(ent._, "modifiers", ()) or () if str(m.category).upper() == "FAMILY"]
    return bool(cues) and all(subject.start <= m.modifier_span[0] and m.modifier_span[1] <= subject.end
                              for m in cues)


def _context_flags(ent) -> dict[str, bool]:
    return {name: bool(getattr(ent._, name, False))
            for name in ("is_negated", "is_historical", "is_family", "is_hypothetical", "is_uncertain")}


# Words that are no finding of the patient where they stand: the stimulus of a coma-scale response ("eyes opening
# to pain", "withdraws from pain"), a drug's purpose ("for pain control") and the colour of an organ seen at
# fundoscopy ("a pale, white retina" is no pallor of the skin; "pale optic disc" is its own finding, read as one) or
# of a lesion
_MISREADS: tuple[tuple[frozenset[str], re.Pattern | None, re.Pattern | None], ...] = (
    (frozenset({"pain", "painful stimuli", "painful stimulus"}),
     re.compile(r"\b(?:open(?:s|ing)?|respon(?:ds?|ding|sive)|react(?:s|ing)?|withdraw(?:s|ing|al)?|"
                r"locali[sz](?:es|ing)?|grimac(?:es|ing))\s+(?:only\s+)?(?:to|from)\s+$", re.I), None),
    (frozenset({"pain"}), None,                 # "acetaminophen for pain control": a purpose, not a complaint
     re.compile(r"^\s+(?:control|relief|management|medications?|medicines?|killers?|relievers?)\b", re.I)),
    (frozenset({"pale", "pallor"}), None,
     re.compile(r"^\s*,?\s*(?:(?:and\s+)?white\s*,?\s+)?(?:retina|retinal|fundus|fundi)\b", re.I)),
    # the colour of a lesion in its description ("skin lesions (pale, larger than 1 cm)", "a rash (red, pale)")
    (frozenset({"pale"}),
     re.compile(r"\b(?:lesions?|rash(?:es)?|spots?|patch(?:es)?|macules?|papules?|plaques?|sores?)\s*\(\s*"
                r"(?:[\w -]+,\s*)*$", re.I), None),
    # what makes a pain worse ("worse on coughing", "pain increased with sneezing") is no complaint of its own
    (frozenset({"cough", "coughing", "coughs", "sneezing", "sneeze", "sneezes", "straining"}),
     re.compile(r"\b(?:worse|worsens?|worsened|worsening|aggravated|increased|exacerbated|made\s+worse|provoked|"
                r"brought\s+on|hurts?|hurting)\s+(?:\w+\s+)?(?:on|with|when|by|during|while)\s+$", re.I), None),
    # a medicine ("blood thinners") and a fuel ("their gas boiler") are no thinness and no flatulence
    (frozenset({"thinners", "thinner"}), re.compile(r"\bblood[\s-]+$", re.I), None),
    (frozenset({"gas"}), re.compile(r"\b(?:natural|cooking|bottled|propane|butane|nerve|tear)\s+$", re.I),
     re.compile(r"^\s+(?:boilers?|heaters?|heating|fires?|stoves?|cookers?|leaks?|appliances?|furnaces?|fumes|"
                r"cylinders?|canisters?|supply|mains|meters?|central\s+heating)\b", re.I)),
)


def _misread(doc, ent) -> bool:
    """The mention is a word that is no finding where it stands (:data:`_MISREADS`)."""
    said = ent.text.lower()
    for words, before, after in _MISREADS:
        if said not in words:
            continue
        if before is not None and before.search(doc.text[max(0, ent.start_char - 40):ent.start_char]):
            return True
        if after is not None and after.search(doc.text[ent.end_char:ent.end_char + 40]):
            return True
    return False


def _in_section_title(ent) -> bool:
    try:
        sec = ent[0]._.section
    except AttributeError:
        return False
    if sec is None or getattr(sec, "category", None) is None:
        return False
    return sec.title_start <= ent.start and ent.end <= sec.title_end and sec.title_end > sec.title_start


def _section_of(doc, ent, section_attrs: dict[str, dict[str, Any]], flags: dict[str, bool]) -> str | None:
    """The section category of an entity; a section that flags its entities (past history -> historical, family
    history -> family, ...) adds its flags to ``flags`` when the entity lies within the section's reach
    (:func:`.sections.section_scope_end`), and beyond it the entity is in no section."""
    try:
        sec = ent[0]._.section
    except AttributeError:
        return None
    category = getattr(sec, "category", None)
    if category is None or category not in section_attrs:
        return category
    body_start, body_end = sec.body_span
    start_char = doc[body_start].idx if body_start < len(doc) else len(doc.text)
    end_char = doc[body_end - 1].idx + len(doc[body_end - 1]) if body_end > body_start else start_char
    if ent.start_char >= section_scope_end(doc.text, start_char, end_char):
        return None
    for name, value in section_attrs[category].items():
        flags[name] = flags.get(name, False) or bool(value)
    return category


def _drop_contradicted_denials(entities: list[Entity], in_range: set[tuple[int, int]]) -> list[Entity]:
    """Without the denials an in-range value made that the presentation contradicts: a temperature of 37.1 °C
    today does not deny the fever of the history ("fevers for a week"), nor "recurrent fever". A denial goes when a
    current entity of the same concept, or one whose name contains the denied finding's name, is present."""
    if not in_range:
        return entities
    present = [e for e in entities if e.current and e.concept_id]
    ids = {e.concept_id for e in present}
    names = [_fold_name(e.concept_name or "") for e in present]

    def contradicted(e: Entity) -> bool:
        own = _fold_name(e.concept_name or "")
        return e.concept_id in ids or bool(own) and any(own in n for n in names)

    return [e for e in entities if not (e.negated and (e.start, e.end) in in_range and contradicted(e))]


def _fold_name(name: str) -> str:
    """A concept name folded for containment tests: lower case, single spaces, padded ("fever" is in
    "recurrent fever", not in "feverfew")."""
    return f" {' '.join(name.lower().split())} " if name.strip() else ""


def _dedupe(entities: list[Entity]) -> list[Entity]:
    """Keep the first mention of each (concept, polarity, context); unlinked entities are keyed by their text. A
    past-history mention and a current one of the same concept are both kept (only the current one is a finding
    of the present illness)."""
    seen: set[tuple] = set()
    out = []
    for e in entities:
        key = (e.concept_id or e.text.lower(), e.category if e.category == "demographic" else "",
               e.negated, e.historical, e.family, e.hypothetical)
        if key in seen:
            continue
        seen.add(key)
        out.append(e)
    return out


__all__ = ["MEE", "LLMEntity", "LLMEntities"]

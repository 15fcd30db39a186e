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
5. medspaCy ConText (negation, history, family, hypothetical) and Sectionizer (family-history section -> family,
   past-medical-history section -> historical).
6. Regexes for age, sex and durations.

With an LLM client (``agents.llm.LLMClient``): one structured call lists entities; they are kept only when their text
occurs in the input, linked to the vocabulary, passed through ConText with the rule entities and merged
(``origin`` = "llm" or "both"). Any LLM failure leaves the deterministic result and a warning.

Start-up artefacts (phrase table, TF-IDF vectorizer, ANN index) are cached under
``knowledge.paths.build_dir()/mee/<vocabulary hash>/`` so a second start only loads them.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import logging
import os
import pickle
import shutil
import re
import time
import warnings as _warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from agents.types import Category, Duration, Entity, Extraction

log = logging.getLogger(__name__)

LEXICON_VERSION = 3  # bump when build_lexicon changes
# HNSW parameters of the fuzzy-linking index (scispaCy uses M=100, efConstruction=2000 for 3M UMLS aliases).
ANN_M = 16
ANN_EF_CONSTRUCTION = 100
ANN_EF_SEARCH = 200
PROMPT_PATH = Path(__file__).resolve().parent / "prompts" / "mee.txt"

# Vocabulary category -> Entity.category.
CATEGORY_MAP: dict[str, Category] = {
    "symptom": "symptom",
    "phenotype": "symptom",
    "finding": "symptom",
    "sign": "symptom",
    "disease": "disease",
    "drug": "drug",
    "chemical": "drug",
    "anatomy": "anatomy",
    "test": "test",
    "lab": "test",
}

# When one surface form names several concepts: prefer a Symptom Ontology symptom, then a disease, then an HPO
# phenotype, drug, anatomy. Within a category the concept whose preferred name is the surface form wins.
CATEGORY_PRIORITY = {"symptom": 0, "disease": 1, "phenotype": 2, "finding": 2, "sign": 2, "test": 3, "drug": 4,
                     "chemical": 4, "anatomy": 5}
# In a past-history / family context a disease reading is more likely than a symptom reading.
HISTORY_PRIORITY = {"disease": 0, "symptom": 1, "phenotype": 2}

# Common words that occur as synonyms in the ontologies but are noise in a presentation.
JUNK_TERMS = frozenset("""
all other can may will aim men women man woman male female tall short large small normal abnormal disease syndrome
disorder sign signs symptom symptoms finding stage type growth fall falls left right high low positive negative
increased decreased patient history weight age aged old young adult child children infant birth death dead
mother father family onset chronic acute severe mild moderate episode episodic recurrent progressive congenital
unknown other present absent general generalized change changes level levels use face hand foot head body skin
arm leg eye ear nose mouth tongue back neck chest breast heart brain blood bone liver lung kidney feeling sense
state condition problem issue process complication complications tumor tumour cancer mass lesion injury
drug medication medicine test exam examination result results cold hot heat cell cells tissue
""".split()) | frozenset({"family history", "medical history", "past medical history", "social history",
                          "history of", "chief complaint", "present illness", "review of systems"})
# Short terms kept despite the length filter.
SHORT_WHITELIST = frozenset({"flu", "gas", "itch", "rash", "cough", "ache"})

# Clinical abbreviations expanded before matching (surface form -> expansions). Case-sensitive.
CLINICAL_ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "SOB": ("shortness of breath",),
    "DOE": ("dyspnea on exertion",),
    "CP": ("chest pain",),
    "HTN": ("hypertension",),
    "DM": ("diabetes mellitus",),
    "T2DM": ("type 2 diabetes mellitus",),
    "T1DM": ("type 1 diabetes mellitus",),
    "MI": ("myocardial infarction",),
    "CAD": ("coronary artery disease",),
    "CHF": ("congestive heart failure",),
    "AF": ("atrial fibrillation",),
    "AFib": ("atrial fibrillation",),
    "COPD": ("chronic obstructive pulmonary disease",),
    "URI": ("upper respiratory tract infection",),
    "UTI": ("urinary tract infection",),
    "N/V": ("nausea", "vomiting"),
    "N/V/D": ("nausea", "vomiting", "diarrhea"),
    "HA": ("headache",),
    "LOC": ("loss of consciousness",),
    "ABD": ("abdominal pain",),
    "GERD": ("gastroesophageal reflux disease",),
    "CKD": ("chronic kidney disease",),
    "DVT": ("deep vein thrombosis",),
    "PE": ("pulmonary embolism",),
    "TIA": ("transient ischemic attack",),
    "CVA": ("stroke",),
    "BPH": ("benign prostatic hyperplasia",),
    "RA": ("rheumatoid arthritis",),
    "OA": ("osteoarthritis",),
    "TB": ("tuberculosis",),
    "HIV": ("HIV infection",),
    "URTI": ("upper respiratory tract infection",),
    "BRBPR": ("hematochezia",),
    "HSM": ("hepatosplenomegaly",),
    "LAD": ("lymphadenopathy",),
    "SOBOE": ("dyspnea on exertion",),
}
ABBREVIATION_CATEGORY: dict[str, Category] = {
    "shortness of breath": "symptom", "dyspnea on exertion": "symptom", "chest pain": "symptom",
    "nausea": "symptom", "vomiting": "symptom", "diarrhea": "symptom", "headache": "symptom",
    "loss of consciousness": "symptom", "abdominal pain": "symptom", "hematochezia": "symptom",
    "hepatosplenomegaly": "symptom", "lymphadenopathy": "symptom",
}

# US adopted names <-> international names of frequent drugs (the drug vocabulary often carries only one).
DRUG_NAME_VARIANTS: dict[str, str] = {
    "albuterol": "salbutamol", "acetaminophen": "paracetamol", "epinephrine": "adrenaline",
    "norepinephrine": "noradrenaline", "levalbuterol": "levosalbutamol", "meperidine": "pethidine",
    "glyburide": "glibenclamide", "furosemide": "frusemide", "lidocaine": "lignocaine",
    "cyclosporine": "ciclosporin", "rifampin": "rifampicin", "isoproterenol": "isoprenaline",
}
# Lay / short clinical names -> the vocabulary's name (added when the vocabulary lacks the left-hand side).
LAY_SYNONYMS: dict[str, str] = {
    "diabetes": "diabetes mellitus", "sugar diabetes": "diabetes mellitus", "heart attack": "myocardial infarction",
    "high blood pressure": "hypertension", "low blood pressure": "hypotension", "breathlessness": "dyspnea",
    "short of breath": "shortness of breath", "tummy ache": "abdominal pain",
    "stomach ache": "abdominal pain", "belly pain": "abdominal pain", "throwing up": "vomiting",
    "runny nose": "rhinorrhea", "stuffy nose": "nasal congestion", "blocked nose": "nasal congestion",
    "pins and needles": "paresthesia", "high temperature": "fever", "pyrexia": "fever",
    "febrile": "fever", "dizzy": "dizziness", "itchy": "itching", "itchiness": "itching", "tired": "fatigue",
    "tiredness": "fatigue", "exhaustion": "fatigue", "stroke": "cerebrovascular accident",
    "heartburn": "gastroesophageal reflux disease", "coughing": "cough", "wheeze": "wheezing",
    "sneezing": "sneeze", "nauseous": "nausea", "nauseated": "nausea", "feverish": "fever",
    "vomited": "vomiting", "swollen": "swelling", "sore throat": "pharyngitis",
    # everyday and clinical shorthand for common findings
    "aching muscles": "muscle pain", "muscle aches": "muscle pain", "body aches": "muscle pain",
    "aches and pains": "muscle pain", "off his food": "anorexia", "off her food": "anorexia",
    "off food": "anorexia", "burning on micturition": "dysuria", "burning when passing urine": "dysuria",
    "painful urination": "dysuria", "burning urination": "dysuria", "urgency": "urinary urgency",
    "passing lots of urine": "polyuria", "peeing a lot": "polyuria", "always thirsty": "polydipsia",
    "excessive thirst": "polydipsia", "loin pain": "flank pain", "can't tolerate light": "photophobia",
    "sensitivity to light": "photophobia", "shaking chills": "chills", "sweats": "hyperhidrosis",
    "lost his sense of smell": "loss of smell", "lost her sense of smell": "loss of smell",
    "scratchy throat": "throat pain", "always cold": "cold intolerance", "feels the cold": "cold intolerance",
    "constipated": "constipation", "thinning hair": "hair loss", "heavy periods": "menorrhagia",
    "breathless": "dyspnea", "pale": "pallor", "chewing ice": "pica", "coughed up blood": "hemoptysis",
    "blood in the urine": "hematuria", "slowness of movement": "bradykinesia", "small handwriting": "micrographia",
    "sunken chest": "pectus excavatum", "dislocated lenses": "ectopia lentis", "bulging eyes": "proptosis",
    "painful joints": "arthralgia", "swollen joint": "joint swelling", "calf swelling": "leg swelling",
}
_DRUG_SUFFIX = re.compile(
    r"(?:olol|pril|sartan|statin|mab|cillin|mycin|floxacin|azole|vir|tidine|prazole|dipine|triptan|gliptin|"
    r"gliflozin|caine|sone|olone|parin|xaban|oxetine|ipramine|azepam|zolam|tropin|terol)$"
)
_DRUG_CUE = re.compile(r"\b(?:taking|takes|took|on|started|prescribed|using|uses|used)\s+$", re.I)

_NUM_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
              "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "several": 3, "few": 3, "couple": 2}
_UNIT_DAYS = {"minute": 1 / 1440, "min": 1 / 1440, "hour": 1 / 24, "hr": 1 / 24, "h": 1 / 24, "day": 1.0,
              "d": 1.0, "week": 7.0, "wk": 7.0, "w": 7.0, "month": 30.0, "mo": 30.0, "year": 365.0, "yr": 365.0,
              "y": 365.0}
_UNIT_YEARS = {"year": 1.0, "yr": 1.0, "y": 1.0, "month": 1 / 12, "mo": 1 / 12, "week": 7 / 365, "wk": 7 / 365,
               "day": 1 / 365, "d": 1 / 365}

_NUM = r"(\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|several|few|couple)"
_UNIT = r"(minutes?|mins?|hours?|hrs?|h|days?|d|weeks?|wks?|w|months?|mos?|years?|yrs?|y)"
_DURATION_PATTERNS = [
    # for 3 days / since 2 weeks / over the past 48 hours / x2 weeks / x 3d / during the last month
    re.compile(r"\b(?:for|since|over|during|x|×|past|last|within)\s*(?:the\s+)?(?:past\s+|last\s+)?(?:a\s+)?"
               + _NUM + r"[\s-]*" + _UNIT + r"\b", re.I),
    re.compile(r"(?<![\w])[x×]\s?" + _NUM + r"\s*" + _UNIT + r"\b", re.I),
    # 3 days of fever / 2-week history / 5 days ago / 3-day duration
    re.compile(r"\b" + _NUM + r"[\s-]*" + _UNIT + r"\s+(?:of|history|ago|duration|long)\b", re.I),
    # past week / last month (implicit one)
    re.compile(r"\b(?:for|over|during|in)\s+the\s+(?:past|last)\s+" + r"()" + _UNIT + r"\b", re.I),
]
_AGE_PATTERNS = [
    re.compile(r"\b(\d{1,3}(?:\.\d+)?)[\s-]*(years?|yrs?|y|months?|mos?|weeks?|wks?|days?|d)[\s-]*old\b", re.I),
    re.compile(r"\b(\d{1,3})\s*(?:yo|y/o|y\.o\.?|yoa|yrs?)(?![a-z])", re.I),
    re.compile(r"\b(?:aged?|age:?)\s*(\d{1,3})\b", re.I),
    re.compile(r"\b[MF]\s*[,/]\s*(\d{1,3})\b"),
    re.compile(r"\b(\d{1,3})\s*[,/-]?\s*(?:[MF])\b"),
]
_FEMALE = re.compile(r"\b(woman|women|female|girl|lady|gravida|pregnant|she|her|mrs|ms)\b", re.I)
_MALE = re.compile(r"\b(man|men|male|boy|gentleman|he|his|him|mr)\b", re.I)
_SEX_LETTER = re.compile(r"(?:\b\d{1,3}\s*(?:yo|y/o|y\.o\.?|yrs?)?\s*[,/-]?\s*([MF])\b|\b([MF])\s*[,/]\s*\d{1,3}\b)")
_STRONG_SEX = {"woman", "women", "female", "girl", "lady", "gravida", "pregnant", "man", "men", "male", "boy",
               "gentleman"}


class VocabEntryLike(Protocol):
    id: str
    name: str
    synonyms: Sequence[str]
    category: str


class LLMEntity(BaseModel):
    """One entity as listed by the language model."""

    text: str = Field(description="the words exactly as written in the presentation")
    category: Category
    negated: bool = False


class LLMEntities(BaseModel):
    entities: list[LLMEntity] = Field(default_factory=list)


@dataclass
class Concept:
    id: str
    name: str
    category: str


@dataclass
class Lexicon:
    """The matchable view of a vocabulary (cached to disk)."""

    concepts: dict[str, Concept]
    phrases: dict[str, list[str]]               # folded phrase key -> concept ids (best first)
    acronyms: dict[str, list[str]]              # case-sensitive acronym -> concept ids
    phrase_tokens: dict[str, list[str]]         # folded phrase key -> folded tokens
    known_words: set[str] = field(default_factory=set)
    kb_aliases: dict[str, list[str]] = field(default_factory=dict)  # lower alias -> ids (for the linker)


def vocabulary_hash(vocabulary: Iterable[VocabEntryLike]) -> str:
    h = hashlib.sha1()
    for e in vocabulary:
        h.update(f"{e.id}\t{e.name}\t{e.category}\t{'|'.join(e.synonyms or ())}\n".encode())
    return h.hexdigest()[:16]


def _is_acronym(term: str) -> bool:
    t = term.replace("-", "")
    return 2 <= len(t) <= 6 and t.isalnum() and t.upper() == t and any(c.isalpha() for c in t)


def _keep_term(term: str, stop_words: frozenset[str] | set[str]) -> bool:
    low = term.lower()
    if _is_acronym(term) and " " not in term:
        # matched case-sensitively only ("ALL" the leukemia, never "all"); two letters only when not a word
        return len(term) >= 3 or low not in stop_words
    if low in JUNK_TERMS or low in stop_words:
        return False
    if len(low) < 3:
        return False
    if len(low) < 4 and low not in SHORT_WHITELIST and not _is_acronym(term):
        return False
    if not any(c.isalpha() for c in low):
        return False
    if len(low.split()) > 10 or "obsolete" in low:
        return False
    return True


def build_lexicon(vocabulary: Sequence[VocabEntryLike], tokenize) -> Lexicon:
    """Turn vocabulary entries into phrase keys. ``tokenize(text) -> list[str]`` is the pipeline tokenizer."""
    from spacy.lang.en.stop_words import STOP_WORDS  # noqa: PLC0415

    from agents.nlp import fold  # noqa: PLC0415

    stop = frozenset(STOP_WORDS)
    concepts: dict[str, Concept] = {}
    phrase_sets: dict[str, dict[str, tuple]] = {}
    acro: dict[str, dict[str, tuple]] = {}
    tokens: dict[str, list[str]] = {}
    kb_alias: dict[str, dict[str, tuple]] = {}
    known: set[str] = set()
    for e in vocabulary:
        cat = (e.category or "").lower()
        if e.id in concepts or not e.name:
            continue
        concepts[e.id] = Concept(e.id, e.name, cat)
        names = [e.name] + [s for s in (e.synonyms or ()) if s]
        for i, term in enumerate(names):
            term = " ".join(term.split())
            if not _keep_term(term, stop):
                continue
            rank = (CATEGORY_PRIORITY.get(cat, 9), 0 if i == 0 else 1)
            kb_alias.setdefault(term.lower(), {})[e.id] = rank
            if _is_acronym(term) and " " not in term:
                acro.setdefault(term, {})[e.id] = rank
                continue
            toks = [fold(t) for t in tokenize(term)]
            key = " ".join(toks)
            known.update(t for t in toks if t.isalpha())
            tokens.setdefault(key, toks)
            prev = phrase_sets.setdefault(key, {})
            if e.id not in prev or rank < prev[e.id]:
                prev[e.id] = rank

    def ordered(d: dict[str, dict[str, tuple]]) -> dict[str, list[str]]:
        return {k: [cid for cid, _ in sorted(v.items(), key=lambda kv: (kv[1], kv[0]))] for k, v in d.items()}

    phrases = ordered(phrase_sets)
    # Lay synonyms and US/international drug names map onto an existing vocabulary phrase.
    pairs = list(LAY_SYNONYMS.items()) + list(DRUG_NAME_VARIANTS.items()) + \
        [(v, k) for k, v in DRUG_NAME_VARIANTS.items()]
    for lay, target in pairs:
        lay_toks = [fold(t) for t in tokenize(lay)]
        lay_key = " ".join(lay_toks)
        target_key = " ".join(fold(t) for t in tokenize(target))
        if lay_key not in phrases and target_key in phrases:
            phrases[lay_key] = list(phrases[target_key])
            tokens[lay_key] = lay_toks
            known.update(t for t in lay_toks if t.isalpha())
    return Lexicon(concepts, phrases, ordered(acro), tokens, known, ordered(kb_alias))


class Linker:
    """scispaCy ``CandidateGenerator`` over a TF-IDF char-3-gram ANN index of the vocabulary aliases."""

    def __init__(self, lexicon: Lexicon, cache_dir: Path, *, ef_search: int = ANN_EF_SEARCH):
        from scispacy.candidate_generation import (  # noqa: PLC0415
            CandidateGenerator,
            LinkerPaths,
            create_tfidf_ann_index,
        )
        from scispacy.linking_utils import Entity as KBEntity  # noqa: PLC0415
        from scispacy.linking_utils import KnowledgeBase  # noqa: PLC0415

        by_concept: dict[str, list[str]] = {}
        for alias, ids in lexicon.kb_aliases.items():
            for cid in ids:
                by_concept.setdefault(cid, []).append(alias)
        kb = KnowledgeBase([KBEntity(cid, lexicon.concepts[cid].name.lower(), aliases)
                            for cid, aliases in by_concept.items()])
        self.lexicon = lexicon
        self.build_seconds = 0.0
        if not (cache_dir.is_dir() and LinkerPaths.from_directory(cache_dir).is_locally_cached()):
            t0 = time.perf_counter()
            # build next to the final folder, then rename: a concurrent start never sees half an index
            tmp = cache_dir.with_name(f"{cache_dir.name}.tmp-{os.getpid()}")
            tmp.mkdir(parents=True, exist_ok=True)
            _build_ann_index(kb, LinkerPaths.from_directory(tmp))
            try:
                tmp.rename(cache_dir)
            except OSError:  # another process finished first
                shutil.rmtree(tmp, ignore_errors=True)
            self.build_seconds = time.perf_counter() - t0
        # Loads the cached vectorizer, alias list and index (scispaCy's own loader).
        aliases, vectorizer, index = create_tfidf_ann_index(str(cache_dir), kb, ef_search=ef_search)
        self.generator = CandidateGenerator(ann_index=index, tfidf_vectorizer=vectorizer,
                                            ann_concept_aliases_list=aliases, kb=kb)

    def candidates(self, mentions: list[str], k: int = 8) -> list[list[tuple[str, str, float]]]:
        """For each mention: (concept id, best alias, similarity) sorted best first."""
        if not mentions:
            return []
        out = []
        for cands in self.generator([m.lower() for m in mentions], k):
            best = []
            for c in cands:
                j = max(range(len(c.similarities)), key=lambda i: c.similarities[i])
                best.append((c.concept_id, c.aliases[j], float(c.similarities[j])))
            best.sort(key=lambda t: (-t[2], CATEGORY_PRIORITY.get(self.lexicon.concepts[t[0]].category, 9), t[0]))
            out.append(best)
        return out


def _build_ann_index(kb, paths) -> None:
    """Fit the TF-IDF vectorizer and the nmslib HNSW index in scispaCy's file layout.

    scispaCy's ``create_tfidf_ann_index`` needs scipy<1.11 (float16 sparse) and uses hyper-parameters sized for
    the 3M-alias UMLS (hours on a laptop); the same artefacts are written here with float32 vectors and
    parameters sized for a vocabulary of ~10^5 aliases, and then loaded by scispaCy's loader.
    """
    import joblib  # noqa: PLC0415
    import nmslib  # noqa: PLC0415
    import numpy  # noqa: PLC0415
    import scipy.sparse  # noqa: PLC0415
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: PLC0415

    aliases = list(kb.alias_to_cuis.keys())
    min_df = 2 if len(aliases) > 5000 else 1
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), min_df=min_df, dtype=numpy.float32)
    vectors = vectorizer.fit_transform(aliases)
    keep = numpy.asarray(vectors.sum(axis=1) != 0).reshape(-1)
    aliases = [a for a, k in zip(aliases, keep) if k]
    vectors = vectors[keep].astype(numpy.float32)
    index = nmslib.init(method="hnsw", space="cosinesimil_sparse", data_type=nmslib.DataType.SPARSE_VECTOR)
    index.addDataPointBatch(vectors)
    index.createIndex({"M": ANN_M, "efConstruction": ANN_EF_CONSTRUCTION, "indexThreadQty": 2, "post": 0}, print_progress=False)
    tmp = Path(paths.ann_index).parent
    joblib.dump(vectorizer, paths.tfidf_vectorizer)
    scipy.sparse.save_npz(paths.tfidf_vectors, vectors)
    with open(paths.concept_aliases_list, "w") as f:
        json.dump(aliases, f)
    index.saveIndex(paths.ann_index, save_data=False)
    (tmp / "built.json").write_text(json.dumps({"aliases": len(aliases), "min_df": min_df}))


def _load_prompt() -> str:
    try:
        from agents.llm import load_prompt  # noqa: PLC0415

        return load_prompt("mee")
    except (ImportError, OSError):
        return PROMPT_PATH.read_text(encoding="utf-8")


def _parse_number(tok: str) -> float | None:
    tok = tok.lower()
    if tok in _NUM_WORDS:
        return float(_NUM_WORDS[tok])
    try:
        return float(tok)
    except ValueError:
        return None


def _unit_key(unit: str) -> str:
    u = unit.lower()
    for key in ("minute", "min", "hour", "hr", "day", "week", "wk", "month", "mo", "year", "yr"):
        if u.startswith(key):
            return key
    return u.rstrip("s") or u


def find_age_sex(text: str) -> tuple[float | None, str | None, list[tuple[int, int]]]:
    """Age in years, sex and the character spans that expressed them."""
    age: float | None = None
    spans: list[tuple[int, int]] = []
    for pat in _AGE_PATTERNS:
        m = pat.search(text)
        if not m:
            continue
        n = float(m.group(1))
        unit = m.group(2) if pat.groups >= 2 and m.group(2) else "year"
        years = n * _UNIT_YEARS.get(_unit_key(unit), 1.0)
        if 0 <= years <= 120:
            age = round(years, 3)
            spans.append(m.span())
            break
    sex: str | None = None
    letter = _SEX_LETTER.search(text)
    strong = [m for m in list(_FEMALE.finditer(text)) + list(_MALE.finditer(text)) if m.group(1).lower() in _STRONG_SEX]
    if strong:
        m = min(strong, key=lambda m: m.start())
        sex = "female" if _FEMALE.fullmatch(m.group(1)) else "male"
        spans.append(m.span())
    elif letter:
        sex = "female" if (letter.group(1) or letter.group(2)) == "F" else "male"
    else:
        f, mm = _FEMALE.search(text), _MALE.search(text)
        if f and (not mm or f.start() < mm.start()):
            sex = "female"
        elif mm:
            sex = "male"
    return age, sex, spans


def find_durations(text: str) -> list[Duration]:
    found: list[tuple[int, int, Duration]] = []
    for pat in _DURATION_PATTERNS:
        for m in pat.finditer(text):
            if any(s < m.end() and m.start() < e for s, e, _ in found):
                continue
            num = _parse_number(m.group(1)) if m.group(1) else 1.0
            if num is None:
                continue
            unit = _unit_key(m.group(2))
            if unit in ("d", "w", "y", "h") and not re.search(r"\d", m.group(0)):
                continue
            days = num * _UNIT_DAYS.get(unit, 1.0)
            found.append((m.start(), m.end(), Duration(text=m.group(0).strip(), days=round(days, 4))))
    return [d for _, _, d in sorted(found, key=lambda t: t[0])]


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
        self.pipeline_name = pipeline
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
        self.prompt = _load_prompt()

    # ------------------------------------------------------------------ start-up
    def _load_or_build_lexicon(self, vocabulary: Sequence[VocabEntryLike]) -> Lexicon:
        path = self.cache_dir / f"lexicon-v{LEXICON_VERSION}-{self.pipe_tag}.pkl"
        if path.exists():
            try:
                with open(path, "rb") as f:
                    lex = pickle.load(f)
                if isinstance(lex, Lexicon):
                    return lex
            except Exception as exc:  # noqa: BLE001
                log.warning("rebuilding MEE lexicon cache (%s)", exc)
        tokenizer = self.nlp.tokenizer
        lex = build_lexicon(vocabulary, lambda s: [t.text for t in tokenizer(s)])
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            with open(tmp, "wb") as f:
                pickle.dump(lex, f, protocol=pickle.HIGHEST_PROTOCOL)
            tmp.replace(path)
        except OSError as exc:
            log.warning("could not cache the MEE lexicon: %s", exc)
        return lex

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

    def _pick(self, ids: list[str], history: bool) -> str:
        if not history or len(ids) == 1:
            return ids[0]
        return min(ids, key=lambda c: (HISTORY_PRIORITY.get(self.lexicon.concepts[c].category, 5), ids.index(c)))

    def _link_text(self, text: str) -> tuple[list[str], float]:
        """Concept ids for a free text (exact folded phrase, acronym, drug variant, then the fuzzy linker)."""
        from agents.nlp import fold  # noqa: PLC0415

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
                if sim >= self.fuzzy_min_similarity and ratio >= self.fuzzy_min_ratio:
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
        age, sex, demo_spans = find_age_sex(text)
        durations = find_durations(text)

        nlp = self.nlp
        doc = nlp.make_doc(text)
        pipeline = dict(nlp.pipeline)
        for name in nlp.pipe_names:
            if name in ("medspacy_context", "medspacy_sectionizer"):
                continue
            doc = pipeline[name](doc)

        info: dict[tuple[int, int], dict[str, Any]] = {}
        spans = self._rule_spans(doc, info, demo_spans)

        llm_spans: list = []
        if self.llm is not None:
            llm_spans = self._llm_spans(text, doc, info, spans, warnings)

        from spacy.util import filter_spans  # noqa: PLC0415

        doc.ents = filter_spans(spans + llm_spans)
        for name in ("medspacy_context", "medspacy_sectionizer"):
            if name in pipeline:
                doc = pipeline[name](doc)

        entities: list[Entity] = []
        for ent in doc.ents:
            meta = info.get((ent.start_char, ent.end_char))
            if meta is None:
                continue
            section = None
            try:
                section = ent[0]._.section_category
            except AttributeError:
                section = None
            family = bool(getattr(ent._, "is_family", False))
            # a relative's condition is not the patient's past history
            historical = bool(getattr(ent._, "is_historical", False)) and not family
            ids = meta.get("ids") or []
            cid = self._pick(ids, history=historical or family) if ids else None
            concept = self.lexicon.concepts.get(cid) if cid else None
            category: Category = meta.get("category") or (
                CATEGORY_MAP.get(concept.category, "symptom") if concept else "symptom")
            if concept is not None:
                category = CATEGORY_MAP.get(concept.category, category)
            negated = bool(getattr(ent._, "is_negated", False)) or bool(meta.get("llm_negated") and
                                                                        meta.get("origin") == "llm")
            entities.append(Entity(
                text=ent.text, category=category, start=ent.start_char, end=ent.end_char,
                concept_id=cid, concept_name=concept.name if concept else meta.get("name"),
                link_score=float(meta.get("score", 0.0)), negated=negated, historical=historical,
                family=family, hypothetical=bool(getattr(ent._, "is_hypothetical", False)),
                section=section, origin=meta.get("origin", "rules"),
            ))
            # A multi-expansion abbreviation (N/V -> nausea, vomiting) yields one entity per expansion.
            for extra in meta.get("extra_ids", []):
                c2 = self.lexicon.concepts.get(extra)
                if c2 is not None:
                    entities.append(entities[-1].model_copy(update={
                        "concept_id": c2.id, "concept_name": c2.name,
                        "category": CATEGORY_MAP.get(c2.category, "symptom")}))

        for s, e in demo_spans:
            entities.append(Entity(text=text[s:e], category="demographic", start=s, end=e, link_score=1.0))
        entities.sort(key=lambda x: (x.start, x.end))
        if self.linker_error:
            warnings.append(self.linker_error)
        return Extraction(entities=_dedupe(entities), age_years=age, sex=sex, durations=durations,
                          warnings=warnings)

    def _rule_spans(self, doc, info: dict, demo_spans: list[tuple[int, int]]) -> list:
        from spacy.tokens import Span  # noqa: PLC0415
        from spacy.util import filter_spans  # noqa: PLC0415

        def overlaps_demo(span) -> bool:
            return any(span.start_char < e and s < span.end_char for s, e in demo_spans)

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

        kept = filter_spans([c[0] for c in candidates if not overlaps_demo(c[0])])
        by_pos = {}
        for span, meta in candidates:
            by_pos.setdefault((span.start, span.end), meta)

        # 5. fuzzy linking of out-of-vocabulary words not covered by a match
        if self.linker is not None:
            kept = filter_spans(kept + self._fuzzy_spans(doc, kept, by_pos, demo_spans))

        out = []
        for span in kept:
            meta = by_pos[(span.start, span.end)]
            label = meta.get("category") or "ENTITY"
            new = Span(doc, span.start, span.end, label=label)
            info[(new.start_char, new.end_char)] = meta
            out.append(new)
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
            if ratio < self.fuzzy_min_ratio:
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


def _find_tokens(doc, forms: dict[str, str]) -> list:
    """Every occurrence of the given short forms as whole token sequences, outside parentheses' long forms."""
    out = []
    for tok in doc:
        if tok.text in forms:
            out.append(doc[tok.i:tok.i + 1])
    return out


def _dedupe(entities: list[Entity]) -> list[Entity]:
    """Keep the first mention of each (concept, polarity); unlinked entities are keyed by their text."""
    seen: set[tuple] = set()
    out = []
    for e in entities:
        key = (e.concept_id or e.text.lower(), e.category if e.category == "demographic" else "",
               e.negated, e.family, e.hypothetical)
        if key in seen:
            continue
        seen.add(key)
        out.append(e)
    return out

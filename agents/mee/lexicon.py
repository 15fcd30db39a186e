"""The matchable view of a vocabulary: phrase keys, acronyms and aliases (:func:`build_lexicon`), cached on disk.

Every name and synonym of the knowledge-graph vocabulary (diseases, symptoms, HPO phenotypes, drugs, anatomy)
becomes a phrase key of folded token norms (:func:`knowledge.text.fold`: lower case, regular plurals folded);
short upper-case acronyms are kept apart and matched case-sensitively. Junk terms (stop words, very short or
very generic words) are dropped. Lay synonyms and US/international drug names are added as keys of the
vocabulary phrase they stand for.
"""
from __future__ import annotations

import hashlib
import logging
import pickle
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agents.types import Category
from knowledge.kg.mesh_nodes import is_mesh_disease
from knowledge.text import fold

log = logging.getLogger(__name__)

LEXICON_VERSION = 11  # bump when build_lexicon changes

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
# A disease the graph took from MeSH is read after a phenotype of the same name: those that share one were named like
# a finding (cluster headache, anaphylaxis: Mondo holds them as diseases, HPO as phenotypes), and the findings of a
# presentation stay findings.
FINDING_NAMED_PRIORITY = 2.5


def _priority(cid: str, category: str) -> float:
    if is_mesh_disease(cid, category):
        return FINDING_NAMED_PRIORITY
    return CATEGORY_PRIORITY.get(category, 9)


# In a past-history / family context a disease reading is more likely than a symptom reading.
HISTORY_PRIORITY = {"disease": 0, "symptom": 1, "phenotype": 2}

# Common words that occur as synonyms in the ontologies but are noise in a presentation. The hospital's verbs are here
# too: in "he is discharged with follow-up" the near-match step read "discharged" as a misspelt "discharge".
JUNK_TERMS = frozenset("""
all other can may will aim men women man woman male female tall short large small normal abnormal disease syndrome
disorder sign signs symptom symptoms finding stage type growth fall falls left right high low positive negative
increased decreased patient history weight age aged old young adult child children infant birth death dead
mother father family onset chronic acute severe mild moderate episode episodic recurrent progressive congenital
unknown other present absent general generalized change changes level levels use face hand foot head body skin
arm leg eye ear nose mouth tongue back neck chest breast heart brain blood bone liver lung kidney feeling sense
state condition problem issue process complication complications tumor tumour cancer mass lesion injury
drug medication medicine test exam examination result results cold hot heat cell cells tissue
hypochondrium hypochondrial epigastrium dullness fecal tearing
admitted discharged transferred
""".split()) | frozenset({"family history", "medical history", "past medical history", "social history",
                          "history of", "chief complaint", "present illness", "review of systems",
                          # the name of a measurement is no finding ("blood pressure is normal")
                          "blood pressure", "heart rate", "pulse rate", "respiratory rate", "vital signs"})
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
    "SAH": ("subarachnoid hemorrhage",),
    "ACS": ("acute coronary syndrome",),
    "CVA": ("stroke",),
    "BPH": ("benign prostatic hyperplasia",),
    "RA": ("rheumatoid arthritis",),
    "OA": ("osteoarthritis",),
    "TB": ("tuberculosis",),
    "HIV": ("HIV infection",),
    # one token each: "a 35-year-old HIV-positive woman" names the infection too
    "HIV-positive": ("HIV infection",), "HIV+": ("HIV infection",), "HIV-infected": ("HIV infection",),
    "HIV-seropositive": ("HIV infection",),
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
class VocabEntryLike(Protocol):
    id: str
    name: str
    synonyms: Sequence[str]
    category: str


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
            rank = (_priority(e.id, cat), 0 if i == 0 else 1)
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


# Cached lexicons are pickles that name these classes by module: keep the name they had when agents.mee was one
# module, so caches written before and after the split load in both.
Concept.__module__ = Lexicon.__module__ = "agents.mee"


def lexicon_cache_path(cache_dir: Path, pipe_tag: str) -> Path:
    return Path(cache_dir) / f"lexicon-v{LEXICON_VERSION}-{pipe_tag}.pkl"


def load_or_build_lexicon(vocabulary: Sequence[VocabEntryLike], tokenize, cache_dir: Path, pipe_tag: str) -> Lexicon:
    """The cached lexicon of this vocabulary and pipeline, else a new one (then cached)."""
    path = lexicon_cache_path(cache_dir, pipe_tag)
    if path.exists():
        try:
            with open(path, "rb") as f:
                lex = pickle.load(f)
            if isinstance(lex, Lexicon):
                return lex
        except Exception as exc:  # noqa: BLE001
            log.warning("rebuilding MEE lexicon cache (%s)", exc)
    lex = build_lexicon(vocabulary, tokenize)
    try:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            pickle.dump(lex, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
    except OSError as exc:
        log.warning("could not cache the MEE lexicon: %s", exc)
    return lex


__all__ = ["LEXICON_VERSION", "CATEGORY_MAP", "CATEGORY_PRIORITY", "HISTORY_PRIORITY", "JUNK_TERMS",
           "SHORT_WHITELIST", "CLINICAL_ABBREVIATIONS", "ABBREVIATION_CATEGORY", "DRUG_NAME_VARIANTS",
           "LAY_SYNONYMS", "VocabEntryLike", "Concept", "Lexicon", "vocabulary_hash", "build_lexicon",
           "load_or_build_lexicon", "lexicon_cache_path"]

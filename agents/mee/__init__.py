"""MEE: medical entity extraction (paper Eq. 1), ``E = {(e_i, c_i)} = MEE(q)``.

- :mod:`.lexicon`: the vocabulary as phrase keys, acronyms and aliases (cached on disk);
- :mod:`.linker`: fuzzy linking of out-of-vocabulary words (TF-IDF char-3-gram ANN index, cached on disk);
- :mod:`.demographics`: age, sex and durations by regular expression;
- :mod:`.vitals`: vital signs (temperature, pulse, respirations, blood pressure, oxygen saturation, BMI) and their
  abnormal values as findings (fever, tachycardia, hypotension, hypoxemia, ...);
- :mod:`.labs`: laboratory values against reference ranges and test results written in words (``lab_phrases.tsv``)
  as findings;
- :mod:`.findings`: the records both produce and the concept ids of each finding;
- :mod:`.sections`: how far a section header (past history, family history) reaches;
- :mod:`.extractor`: the :class:`MEE` agent (spaCy/medspaCy pipeline, matching, ConText, optional LLM).
"""
from .demographics import find_age_sex, find_durations
from .extractor import MEE, LLMEntities, LLMEntity
from .findings import FINDING_CONCEPTS, Finding, Reading
from .labs import find_lab_phrases, find_labs, read_lab_values
from .lexicon import (
    CATEGORY_MAP,
    CLINICAL_ABBREVIATIONS,
    LEXICON_VERSION,
    Concept,
    Lexicon,
    VocabEntryLike,
    build_lexicon,
    vocabulary_hash,
)
from .linker import Linker
from .vitals import find_vitals, read_vitals

__all__ = ["MEE", "LLMEntity", "LLMEntities", "find_age_sex", "find_durations", "Lexicon", "Concept",
           "VocabEntryLike", "build_lexicon", "vocabulary_hash", "LEXICON_VERSION", "CATEGORY_MAP",
           "CLINICAL_ABBREVIATIONS", "Linker", "Finding", "Reading", "FINDING_CONCEPTS", "find_vitals", "read_vitals",
           "find_labs", "find_lab_phrases", "read_lab_values"]

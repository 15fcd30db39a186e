"""MEE: medical entity extraction (paper Eq. 1), ``E = {(e_i, c_i)} = MEE(q)``.

- :mod:`.lexicon`: the vocabulary as phrase keys, acronyms and aliases (cached on disk);
- :mod:`.linker`: fuzzy linking of out-of-vocabulary words (TF-IDF char-3-gram ANN index, cached on disk);
- :mod:`.demographics`: age, sex and durations by regular expression;
- :mod:`.extractor`: the :class:`MEE` agent (spaCy/medspaCy pipeline, matching, ConText, optional LLM).
"""
from .demographics import find_age_sex, find_durations
from .extractor import MEE, LLMEntities, LLMEntity
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

__all__ = ["MEE", "LLMEntity", "LLMEntities", "find_age_sex", "find_durations", "Lexicon", "Concept",
           "VocabEntryLike", "build_lexicon", "vocabulary_hash", "LEXICON_VERSION", "CATEGORY_MAP",
           "CLINICAL_ABBREVIATIONS", "Linker"]

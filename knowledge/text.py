"""Text normalisation shared by the index and the agents: word patterns, stop-word lists and stemmers.

There are three word-level normalisations, each tuned to one job. They are kept apart on purpose: merging
them would silently change the BM25 index (which would then need a rebuild) or the verifier's scores.

==================  =======================  ====================  =========================================
family              words                    stop list             stemmer
==================  =======================  ====================  =========================================
index (BM25)        ``[a-z0-9]+``            :data:`INDEX_STOP`    :func:`index_stem` -> :func:`bm25_tokens`
terms (agents)      ``[a-z0-9][a-z0-9-']*``  :data:`TERM_STOP`     :func:`term_stem` -> :func:`terms`
claims (verifier)   hyphen/apostrophe words  :data:`CLAIM_STOP`    :func:`claim_stem` -> :func:`claim_words`
==================  =======================  ====================  =========================================

- *index*: queries and chunks of the text index; keeps negations and generic clinical words.
- *terms*: overlap of content terms between a presentation, evidence sentences and answers (HKI, KNL,
  generator); drops negations and generic clinical words ("symptom", "disease", "patient").
- *claims*: the verifier's lexical coverage; lay phrases are first folded to clinical terms
  (:func:`fold_synonyms`), and the stemmer is more aggressive (``-ation``, ``-ment``, ``-ness``,
  doubled final consonants) so that paraphrases of evidence still match.

:func:`fold` is the MEE's token norm: lower case and regular plural folding only, because vocabulary phrases
must stay close to their surface form.
"""
from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------- words

WORD_RE = re.compile(r"[a-z0-9]+")
TERM_WORD_RE = re.compile(r"[a-z0-9][a-z0-9\-']*")
CLAIM_WORD_RE = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*")


# ------------------------------------------------------------------------------------- index (BM25)

INDEX_STOP = frozenset("""a an and are as at be by for from has have how i in is it its of on or that the this to was
were what when where which who why will with can do does does not may my your you about than there these those
they them their if into also been being other such some most more many much very""".split())


def index_stem(w: str) -> str:
    """A light English suffix stripper (plurals, -ing/-ed), enough to match 'symptoms'/'symptom'."""
    if len(w) <= 3 or w.isdigit():
        return w
    for suf, rep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            if suf == "s" and (w.endswith("ss") or w.endswith("us") or w.endswith("is")):
                return w
            return w[: len(w) - len(suf)] + rep
    return w


def bm25_tokens(text: str) -> list[str]:
    """Tokens of ``text`` as the BM25 index stores them (order and repeats kept)."""
    return [index_stem(t) for t in WORD_RE.findall(text.lower()) if t not in INDEX_STOP]


# ------------------------------------------------------------------------------------------- terms

TERM_STOP = frozenset("""a an and are as at be been being by can could do does for from had has have having he her his
how i if in into is it its may might more most no not of on or other our she should so some such than that the their
them then there these they this those to too very was we were what when where which while who whom why will with
would you your also about after before over under between during through per each any all both either one two
patient patients people person often usually sometimes common commonly include includes including called known
cause causes caused symptom symptoms sign signs disease diseases condition conditions""".split())


def term_stem(w: str) -> str:
    """Strip one of -ing, -ies (-> y), -es, -ed, -s from words long enough to keep a stem of 4+ letters."""
    for suf in ("ing", "ies", "es", "ed", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)] + ("y" if suf == "ies" else "")
    return w


def terms(text: str) -> set[str]:
    """Content terms (lowercased, light stemming, stop words and words of 1-2 letters removed)."""
    return {term_stem(w) for w in TERM_WORD_RE.findall(text.lower()) if w not in TERM_STOP and len(w) > 2}


# ------------------------------------------------------------------------------------------ claims

CLAIM_STOP = frozenset("""a an and are as at be been being by can could do did does for from had has have having he her
his how i if in into is it its may might more most much of on or other our she should so some such than that the
their them then there these they this those to too very was we were what when where which while who whom whose why
will with would you your also about after before over under between during through per each any all both either
one two three me my us here just only own same s t than up down out off again further once whether yet via upon
well get gets got less more make makes made""".split())

# British and international spellings of medical words folded to the US spelling the vocabularies mostly use
# ("rhinorrhoea", "paraesthesia", "amenorrhoea" are in no ontology as written). Each rule is a word part that is
# spelt this way only in those words: "oea" ends the Greek -rrhoea/-pnoea words, "aem" the blood words
# (haematuria, anaemia, ischaemic, leukaemia), "oe" starts oedema/oesophagus/oestrogen, "aesth" the sensation words.
_BRITISH = re.compile(r"(?<=rrh)oea|(?<=pn)oea|(?<=[hcklnprstx])aem|^oe(?=dem|soph|str)|(?<=[a-z])oedem|aesth|^paed"
                      r"|^faec|^foet|^coeliac|(?<=tum)our")
_US = {"oea": "ea", "aem": "em", "oe": "e", "oedem": "edem", "aesth": "esth", "paed": "ped", "faec": "fec",
       "foet": "fet", "coeliac": "celiac", "our": "or"}


def british_to_us(word: str) -> str:
    """A lower-case word spelt the US way (:data:`_BRITISH`): "haematuria" -> "hematuria"."""
    if "ae" in word or "oe" in word or "our" in word:
        return _BRITISH.sub(lambda m: _US[m.group(0)], word)
    return word


_SYNONYMS = [
    (r"\bshort(?:ness)? of breath\b|\bbreathlessness\b|\bdifficulty breathing\b|\btrouble breathing\b", "dyspnea"),
    (r"\bhigh blood pressure\b", "hypertension"),
    (r"\bhigh blood sugar\b|\bhigh blood glucose\b", "hyperglycemia"),
    (r"\bheart attack\b", "myocardial infarction"),
    (r"\bpyrexia\b|\bfebrile\b", "fever"),
    (r"\bchest tightness\b|\btight chest\b", "chest tightness"),
    (r"\bcoughing\b", "cough"),
    (r"\bpee\b|\burination\b", "urinate"),
    (r"\bthrowing up\b|\bemesis\b", "vomiting"),
    (r"\bitchy\b|\bitching\b|\bpruritus\b", "itch"),
    (r"\bsore throat\b", "pharyngitis"),
    (r"\bstomach ache\b|\bbelly pain\b|\babdominal pain\b", "abdominal pain"),
    (r"\btired(?:ness)?\b|\bexhaustion\b", "fatigue"),
    (r"\bloss of appetite\b", "anorexia"),
]
_SYN_RE = [(re.compile(p), r) for p, r in _SYNONYMS]
_BRITISH_WORD = re.compile(r"[a-z]*(?:ae|oe|our)[a-z]*")


def fold_synonyms(text: str) -> str:
    """Lower case, typographic apostrophe to ``'``, British spellings and lay phrases to clinical terms."""
    t = _BRITISH_WORD.sub(lambda m: british_to_us(m.group(0)), text.lower().replace("\u2019", "'"))
    for rx, rep in _SYN_RE:
        t = rx.sub(rep, t)
    return t


def claim_stem(word: str) -> str:
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


def claim_words(text: str) -> list[str]:
    """Words of ``text`` after :func:`fold_synonyms` (hyphenated words and contractions stay whole)."""
    return CLAIM_WORD_RE.findall(fold_synonyms(text))


# ------------------------------------------------------------------------------------- MEE token norm

_NO_FOLD_ENDINGS = ("ss", "us", "is", "ous", "ics", "sis", "xis", "ys", "as", "os")
# ... but a vowel before "ys" is an English plural ("kidneys", "airways")
_VOWEL_YS = re.compile(r"[aeou]ys$").search


def fold(word: str) -> str:
    """Lower-case a token, spell it the US way ("haematuria" -> "hematuria", :data:`_BRITISH`) and fold a regular
    English plural ("headaches" -> "headache").

    Deliberately conservative: only words longer than four letters that end in a plain ``s`` are folded, and
    Latin/Greek endings (``-sis``, ``-us``, ``-ics``, ...) are kept.
    """
    w = word.lower()
    w = british_to_us(w)
    if len(w) > 4 and w.endswith("s") and w.isalpha() and (not w.endswith(_NO_FOLD_ENDINGS) or _VOWEL_YS(w)):
        if w.endswith("ies") and len(w) > 5:
            return w[:-3] + "y"
        return w[:-1]
    return w


__all__ = ["WORD_RE", "TERM_WORD_RE", "CLAIM_WORD_RE", "INDEX_STOP", "index_stem", "bm25_tokens",
           "TERM_STOP", "term_stem", "terms", "CLAIM_STOP", "fold_synonyms", "claim_stem", "claim_words", "fold",
           "british_to_us"]

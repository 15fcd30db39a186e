"""Small text helpers shared by agents: sentence splitting with offsets, question sentences, content terms, fencing
untrusted text.

Word normalisation (stop words, stemming) lives in :mod:`knowledge.text`; :func:`terms` is re-exported here.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from knowledge.text import terms

_SENT = re.compile(r"(?:[^.!?\n]|\.(?=\d))+(?:[.!?]+|\n|$)")   # "3.6" does not end a sentence


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of sentences in ``text`` (trimmed of surrounding whitespace)."""
    out = []
    for m in _SENT.finditer(text):
        s, e = m.start(), m.end()
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e - s >= 3:
            out.append((s, e))
    return out


# The patient's own verb after "and" or "but" with the subject left out starts a clause of its own: a denial before it
# ends there ("she denies fever and has a cough", "no chest pain but is short of breath"); read by the extractor's
# ConText rules (agents.nlp) and by the classic-sign reader (agents.signs)
CLAUSE_VERBS: tuple[str, ...] = ("has", "have", "had", "is", "was", "are", "were", "reports", "reported", "complains",
                                 "complained", "describes", "described", "notes", "noted", "shows", "showed",
                                 "developed", "develops", "presents", "presented", "feels", "felt")

# words that open a question ("What are the symptoms of ...?", "Is it inherited?", "How is it diagnosed?")
_QUESTION_WORDS = frozenset({
    "what", "how", "why", "when", "where", "which", "who", "whom", "whose", "is", "are", "was", "were", "am", "do",
    "does", "did", "can", "could", "should", "would", "will", "shall", "may", "might", "must", "has", "have", "had"})
_LEAD_WORDS = frozenset({"but", "and", "so", "or", "then", "now", "also", "yet"})
_OPENERS = " \t\n-–—*•·\"'“‘([«"   # bullets, opening quotes and brackets before a sentence
_CLOSERS = " \t\n\"'”’)]»"         # closing quotes and brackets after it
_WORDS = re.compile(r"[A-Za-z][A-Za-z'’]*")


def is_question(sentence: str) -> bool:
    """True for a sentence that only asks something, such as a reference page's question heading ("What are the
    signs and symptoms of X?", "- How is it diagnosed?", "But how would you know, for example, whether ...?").
    It asserts nothing, so it is never a claim. A statement that merely ends with a question mark (a list of link
    titles, "These resources address ...: How Is It Treated?") is not a question."""
    s = sentence.rstrip(_CLOSERS)
    if not s.endswith("?"):
        return False
    s = s.lstrip(_OPENERS)
    for _ in range(3):   # a short lead-in ("For example, ...", "Even with your glasses, ...") before the question
        words = _WORDS.findall(s[:80].lower())
        if not words:
            return False
        while words and words[0] in _LEAD_WORDS:
            words = words[1:]
        if words and words[0] in _QUESTION_WORDS:
            return True
        head, comma, rest = s.partition(",")
        if not comma or len(_WORDS.findall(head)) > 5:
            return False
        s = rest.lstrip(_OPENERS)
    return False


# Page furniture of the reference sites: sentences about the page, not about the disease
_BOILERPLATE = re.compile(
    r"^\W*(?:The Human Phenotype Ontology provides the following list of signs and symptoms"
    r"|If the information is available, the table below includes how often"
    r"|You can use the MedlinePlus Medical Dictionary to look up"
    r"|To enlarge the videos?(?: appearing on this page)?, click the brackets"
    r"|(?:This|The) (?:table|list) below (?:includes|lists|shows)"
    r"|These resources address the diagnosis or management of"
    # GARD's explanation of the HPO frequency table, sentence by sentence
    r"|The Human Phenotype Ontology \(HPO\) has collected information on how often"
    r"|Much of this information comes from Orphanet"
    r"|The frequency of a sign or symptom is usually listed"
    r"|The frequency may also be listed as a fraction"
    r"|The first number of the fraction is"
    r"|For example, a frequency of \d+/\d+ means"
    r"|Because these frequencies are based on a specific study"
    r"|Sometimes, no information on frequency is available"
    r"|In these cases, the sign or symptom may be rare or common"
    # MedlinePlus and NCI page furniture
    r"|These resources from MedlinePlus offer information about"
    r"|For more specific results, refine the search"
    r"|(?:General )?information about clinical trials is available from the NCI website"
    r"|These have been retrieved from NCI's listing of clinical trials"
    r"|Talk with your doctor about clinical trials)", re.I)


def is_boilerplate(sentence: str) -> bool:
    """True for a reference page's furniture ("The Human Phenotype Ontology provides the following list of signs
    and symptoms for Malaria.", "You can use the MedlinePlus Medical Dictionary to look up ..."): it says nothing
    about the disease, so it is neither quoted nor checked as a claim."""
    return bool(_BOILERPLATE.match(sentence))


def fence(text: str) -> str:
    """Neutralise our own fence markers inside untrusted text before it goes into a prompt."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


# "signs of a bacterial infection include ...", "symptoms of a cold or the flu may ...": the condition named is the
# sentence's topic, whatever page it is on
_SIGNS_OF = re.compile(r"\b(?:signs?|symptoms?)\s+(?:(?:and|or)\s+(?:signs?|symptoms?)\s+)?of\s+(?:a|an)\s+"
                       r"([a-z][^,.;:()]{2,60}?)\s+(?:include|includes|may|might|can|could|are|is)\b", re.I)
_NAME_WORD = re.compile(r"[a-z]{4,}")
_PLAIN_WORDS = frozenset(("severe", "mild", "acute", "chronic", "sudden", "serious", "possible", "common", "other",
                          "early", "late", "high", "very", "kind", "type", "form", "case", "attack", "episode"))


def _stem(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def name_stems(names: Iterable[str]) -> frozenset[str]:
    """Word stems (four letters or more, a plural's "s" dropped) of disease names: what
    :func:`signs_of_another` compares with."""
    return frozenset(_stem(w) for n in names if n for w in _NAME_WORD.findall(n.lower()))


def signs_of_another(sentence: str, own_words: frozenset[str]) -> str | None:
    """The condition a "signs of a ... include" sentence is about when none of its words is one of ``own_words``
    (:func:`name_stems` of the page's disease names), else None."""
    m = _SIGNS_OF.search(sentence)
    if not m:
        return None
    words = {_stem(w) for w in _NAME_WORD.findall(m.group(1).lower())} - _PLAIN_WORDS
    return m.group(1) if words and not words & own_words else None


__all__ = ["sentences", "is_question", "is_boilerplate", "terms", "fence", "name_stems", "signs_of_another"]

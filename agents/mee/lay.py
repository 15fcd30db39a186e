"""Findings said in everyday words ("my neck hurts", "blood in my pee", "I can't sleep") as knowledge-graph findings.

Patients, and clinicians quoting them, describe findings in words no ontology lists: the vocabulary knows "neck
pain", "hematuria" and "insomnia", not "my neck hurts", "blood in my pee" or "I can't fall asleep". The lay phrase
table (``lay_phrases.tsv``, tab-separated: concept id, the concept's name in the knowledge graph, form, pattern) maps
such expressions to the concept the vocabulary would have found for the clinical word. Forms:

``phrase``
    the (case-insensitive) pattern is the whole finding;
``pain``
    the pattern names a body part; "my P hurts/aches/is sore", "my P, Q and R hurt" (each part),
    "pain/ache/discomfort/tenderness in (over, of, behind) my P", "sore/aching P" and "P ache/pain/discomfort/soreness"
    give the finding, and so does each place of a clinician's list before the word for pain ("chest and back pain",
    "abdominal and pelvic pain": the part, its adjective or the first words of the concept's name);
``swelling``
    the pattern names a body part; "swelling in (my) P", "swollen/swelled/puffy P", "my P is swollen / swells / has been
    swelling", "P swelling" and "swelling P" give the finding. An examiner's description of a joint or a limb is
    read whole: "a hot, swollen, exquisitely painful P", "my P is red and swollen", "woke with his P red, hot, swollen
    and too painful to touch", "pain and swelling in P",
    "swelling and tenderness of P" give the swelling and the pain over one span, so both findings are kept; parts
    said to swell together ("my knees and ankles are swollen") each give their own row's finding;
``lesion``
    the pattern is a word describing a skin lesion ("scaly", "annular", "umbilicated") or naming its kind
    ("plaque"); it is read only inside the description of a lesion — a run of descriptive words ending in a lesion
    noun ("an itchy, annular, scaly rash", "umbilicated papules", "erythematous plaques on the elbows") — and the
    finding's span is the word itself, so each word of one description gives its finding ("dental plaque",
    "pleural plaques" and "Koplik spots" are no skin lesions);
``region``
    the pattern names a region where pain is felt ("epigastrium", "left hypochondrium"); the region's words are the
    finding when a word for pain or tenderness comes before them in the same clause, so each place of a list is
    read: "pain (burning) in the lower chest, the left hypochondrium and the epigastrium" gives left upper
    quadrant pain and epigastric pain;
``worsening``
    the pattern is a worsening by the time of day or with use ("worse in the evening", "worsens with exercise");
    it is the finding only when a word of weakness, drooping or double vision comes before it in the same clause
    ("drooping eyelids that get worse in the evening" gives fatigable weakness beside ptosis and diplopia; "the
    traffic gets worse in the evening" gives nothing).

Negation, history and family come from the sentence around the phrase (medspaCy ConText), as for any vocabulary
match: "no blood in my pee" is a negated hematuria. A phrase is read as a whole (its words are not matched again),
and the longest of overlapping phrases wins. The integration tests check that every id exists in the knowledge graph
under the name given.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from .findings import Finding, PhraseRule, read_phrase_table, resolve_overlaps

LAY_TABLE = Path(__file__).with_name("lay_phrases.tsv")
FORMS = ("phrase", "pain", "swelling", "lesion", "region", "worsening")
# words for pain: a region named after one in its clause is a site of pain (no sentence or clause break between)
_PAIN_WORDS = r"pains?|painful|tender(?:ness)?|discomfort|aches?|aching|cramps?|cramping|colic(?:ky)?"
# (\Z, not $: "$" also matches before a line's end, letting a word on the line above reach a line's first words)
_PAIN_BEFORE = re.compile(rf"\b(?:{_PAIN_WORDS})\b[^.;:!?\n]{{0,160}}\Z", re.I)
# words for weakness: a worsening named after one in its clause is the weakness's ("ptosis that worsens by evening")
_WEAK_BEFORE = re.compile(r"\b(?:weak(?:ness|er)?|droop\w*|ptosis|eyelids?|double\s+vision|diplopia|tired\w*|"
                          r"fatigue\w*|chewing|swallowing|speech|voice)\b[^.;:!?\n]{0,100}\Z", re.I)
# the forms read only after a word in their clause: a region after a word for pain, a worsening after one of weakness
_NEEDS_BEFORE = {"region": _PAIN_BEFORE, "worsening": _WEAK_BEFORE}

_I = re.IGNORECASE
# a word leading up to a place named after a pain ("the top of the head", "the thoracic spine"): any word but an -ing
# verb, so "soreness in the neck when turning the head" does not make the head a site of the pain
_LEAD_UP = r"(?:(?![\w-]*ing\s)[\w-]+\s+)"
# the text before a body part that a pain radiates to: a word for pain (or pressure), a verb of radiation, a
# preposition and, for the later places of a list ("to the left arm, neck and jaw"), the places named before it
_RADIATES_TO = re.compile(
    rf"\b(?:{_PAIN_WORDS}|pressure|tightness|heaviness)\b[^.;:!?\n]{{0,100}}?\b(?:radiat(?:e|es|ed|ing)|"
    r"spread(?:s|ing)?|shoot(?:s|ing)?|travel(?:s|led|ling|ing)?|extend(?:s|ed|ing)?|goes|going|went|"
    r"mov(?:es|ed|ing)|refer(?:s|red))\s+(?:\w+\s+){0,2}?(?:to|into|towards?|down|through(?:\s+to)?|up(?:\s+to)?|"
    r"across)\s+(?:(?:the|his|her|my|their|both|either)\s+)?"
    r"(?:(?:[\w-]+\s+){0,2}?[\w-]+(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)"
    r"(?:(?:the|his|her|my|their|both)\s+)?){0,3}" + _LEAD_UP + "{0,2}$", re.I)
# the text before a body part that is one of the sites of a pain: a word for pain, its qualities in brackets, a
# preposition and, for the later sites of a list ("pain (sharp) in the forehead, the left cheek and the right
# temple"), the sites named before it; a few words may lead up to the part ("the top of the head", "the right and
# left side of the chest", "the left posterior chest wall")
_PAIN_IN = re.compile(
    rf"\b(?:{_PAIN_WORDS}|soreness)\b(?:\s*\([^()]{{0,100}}\))?\s+(?:in|on|around|at|behind|over)\s+"
    r"(?:(?:the|his|her|my|their|both|either)\s+)?"
    r"(?:(?:[\w-]+\s+){0,5}?[\w-]+(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)"
    r"(?:(?:the|his|her|my|their|both)\s+)?){0,6}" + _LEAD_UP + "{0,5}$", re.I)
# a skin lesion's description: descriptive words (those of the lesion rows and these) ending in a lesion noun
_LESION_NOUN = (r"papules?|plaques?|patch(?:es)?|macules?|nodules?|lesions?|rash(?:es)?|eruptions?|vesicles?|bullae|"
                r"blisters?|pustules?|ulcers?|ulcerations?|growths?|scales?|spots?|bumps?|moles?|wheals?|welts?|"
                r"erosions?|areas?")
_LESION_WORDS = (r"small|large|tiny|multiple|several|numerous|few|many|single|solitary|isolated|raised|elevated|flat|"
                 r"firm|soft|smooth|shiny|waxy|rough|red|reddish|pink|brown|tan|black|white|yellow(?:ish)?|purple|"
                 r"violaceous|dusky|skin[\s-]colou?red|flesh[\s-]colou?red|hyper-?pigmented|hypo-?pigmented|"
                 r"erythematous|well[\s-](?:demarcated|circumscribed|defined)|sharply\s+demarcated|dome[\s-]shaped|"
                 r"round|oval|irregular|pruritic|itchy|painful|painless|tender|non-?tender|discrete|confluent|grouped|"
                 r"clustered|thick(?:ened)?|dry|new|pearly|translucent|verrucous|warty|keratotic|hyperkeratotic|crusted|"
                 r"crusting|excoriated|ulcerated|greasy|stuck-on|velvety|nodular|papular|macular|vesicular|pustular|"
                 r"bullous|tense|flaccid|target(?:oid)?|petechial|purpuric|telangiectatic|pedunculated|atrophic|"
                 r"lichenified|depigmented|blanching|non-?blanching|serpiginous|linear|polygonal|flat-topped|"
                 r"\d+(?:\.\d+)?[\s-]?(?:mm|cm)|appearing|looking")     # "greasy-appearing", "waxy looking"
# words before a lesion noun that make it something other than a skin lesion
_NOT_SKIN = re.compile(r"\b(?:dental|pleural|atherosclerotic|atheromatous|arterial|amyloid|senile|neuritic|coronary|"
                       r"carotid|aortic|demyelinating|Peyer'?s|Koplik|Roth|Bitot'?s?|Janeway|cotton[\s-]wool|"
                       r"ash[\s-]leaf|caf[eé][\s-]au[\s-]lait|Forchheimer|Brushfield|blind|hot|cold)\s+$",
                       re.I)
_OWNER = r"(?:my|the|his|her|their|your|both|both\s+of\s+my)\s+"
_SIDE = r"(?:(?:left|right|lower|upper|whole|entire|inner|outer|anterior|posterior|lateral|medial|front)\s+)?"
_ADV = r"(?:(?:\w+ly|really|so|very|quite|also|still|now|always|often|sometimes|a\s+bit|a\s+lot|more|too)\s+)"
# how a joint or a limb looks and feels, each word perhaps graded ("exquisitely tender"), and the separators of a run of
# them ("hot, swollen and exquisitely tender")
# (the grades are listed, not any "-ly" word: a pattern that opens on "\w+ly" is tried at every word of every text)
_GRADE = (r"(?:exquisitely|extremely|very|markedly|mildly|slightly|severely|intensely|moderately|quite|really|acutely|"
          r"increasingly|exceedingly|visibly|diffusely|painfully|too)\s+")
_STATE = (rf"(?:{_GRADE})?(?:red(?:dened)?|hot|warm|tender|painful|sore|swollen|erythematous|inflamed|stiff|puffy|firm|"
          r"tense|shiny)")
_SEP = r"(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s+)"
# the states said before the one a row reads ("a hot, swollen, painful toe", "is red and swollen") and after it ("is
# swollen and tender"): the pain and the swelling rows take the whole run, so both findings of one description share
# its span and are kept. Before a finding that opens on its own word ("painful", "swollen") the run is found by
# looking back from it (_RUN_BACK, :func:`_run_start`): a pattern opening on a run would be tried at every word.
_RUN = rf"(?:{_STATE}{_SEP}){{0,3}}"
_RUN_AFTER = rf"(?:{_SEP}{_STATE}){{0,3}}"
_RUN_BACK = re.compile(rf"\b(?:(?:{_STATE}{_SEP}){{1,3}}(?:{_GRADE})?|{_GRADE})\Z", re.I)
_RUN_FORMS = ("pain", "swelling")
# the words that may stand between "swollen" and the part: "swollen, tender", "swollen and red", "swollen warm"
_ALSO = rf"{_SEP}(?:{_STATE}{_SEP}){{0,2}}"
# the other complaints said with a pain or a swelling in one phrase ("pain and swelling in", "swelling and tenderness
# of")
_WITH = r"(?:swelling|redness|warmth|stiffness|tenderness|pain|erythema)"
_BE = (r"(?:is|are|was|were|feels?|felt|has\s+been|have\s+been|gets?|got|became|become|looks?|seems?|seem"
       r"|ha(?:ve|s|d)\s+(?:become|gotten|got))")      # "my joints have become swollen"


def load_lay_table(path: Path | str = LAY_TABLE) -> list[PhraseRule]:
    """The rows of a lay phrase table (see :func:`.findings.read_phrase_table`)."""
    return read_phrase_table(path, FORMS)


def expand(form: str, part: str) -> str:
    """The regular expression a ``pain``, ``swelling``, ``region`` or ``worsening`` row stands for (``part`` names
    the body part, the region or the worsening);
    a ``phrase`` or ``lesion`` row's pattern as it is."""
    p = f"(?:{part})"
    if form == "pain":
        return "|".join((
            rf"\b{_OWNER}{_SIDE}{p}\s+{_ADV}{{0,2}}(?:hurts?|hurting|aches?|aching|throbs?|throbbing|pains|"
            rf"{_BE}\s+{_ADV}{{0,2}}{_RUN}(?:{_GRADE})?(?:sore|painful|tender|aching|achy|hurting|killing\s+me)"
            rf"{_RUN_AFTER})\b",
            rf"\b(?:{_WITH}\s+and\s+)?(?:pains?|aches?|aching|agony|discomfort|soreness|tenderness)"
            rf"(?:\s+and\s+{_WITH})?\s+(?:in|on|around|at|behind|over|of)\s+"
            rf"{_OWNER}{_SIDE}{p}\b(?!\s+of\b)",    # "pain in the back", not "... the back of the head"
            rf"\b(?:sore|painful|aching|achy|throbbing){_ALSO}{_SIDE}{p}\b(?!\s+of\b)",
            # "woke with his big toe hot, swollen and too painful to touch": the part and its states after "with"
            rf"\bwith\s+{_OWNER}{_SIDE}{p}\s+{_RUN}(?:{_GRADE})?(?:sore|painful|tender){_RUN_AFTER}\b",
            rf"\b{p}\s?(?:aches?|pains?|discomfort|soreness)\b",    # "back discomfort", "chest discomfort"
        ))
    if form == "swelling":
        return "|".join((
            rf"\b(?:{_WITH}\s+and\s+)?(?:swelling|swollenness|puffiness|oedema|edema)(?:\s+and\s+{_WITH})?"
            rf"\s+(?:in|of|on|around|over)\s+(?:{_OWNER})?{_SIDE}{p}\b",
            rf"\b(?:swollen|swelled|puffy|bulging){_ALSO}{_SIDE}{p}\b",    # "a swollen, tender left calf"
            rf"\b{_OWNER}{_SIDE}{p}\s+{_ADV}{{0,2}}(?:swell(?:s|ed|ing)?(?:\s+up)?|(?:ha(?:ve|s|d)\s+)?swollen|"
            rf"{_BE}\s+{_ADV}{{0,2}}{_RUN}(?:swollen|puffy|bulging|swelling(?:\s+up)?){_RUN_AFTER})\b",
            # "woke with his big toe red, hot and swollen": the part and its states after "with", no verb
            rf"\bwith\s+{_OWNER}{_SIDE}{p}\s+{_RUN}(?:swollen|puffy|bulging){_RUN_AFTER}\b",
            rf"\b{p}\s+swelling\b",
            rf"\bswelling\s+{p}\b",
        ))
    if form in ("region", "worsening"):
        return rf"\b(?:{part})\b"
    return anyones(part)


# A phrase row is often written in the patient's own words ("blood in my stools"); a clinician writes "his" or "her"
_OTHER_OWNERS = ("his", "her", "their", "your")
_INNER_GROUP = re.compile(r"(?<!\\)\(\?:((?:[^()\[\]\\]|\\[^()\[\]])*)\)")


def anyones(pattern: str) -> str:
    """``pattern`` with every innermost group of alternatives that offers "my" (alone, or before a space) offering
    "his", "her", "their" and "your" beside it: "blood in (?:my|the) stools" also reads "blood in his stools"."""
    def widen(m: re.Match) -> str:
        alts = m.group(1).split("|")
        extra = [o if a == "my" else o + a[2:] for a in alts if a == "my" or a.startswith(r"my\s")
                 for o in _OTHER_OWNERS]
        extra = [e for e in dict.fromkeys(extra) if e not in alts]
        return "(?:" + "|".join(alts + extra) + ")" if extra else m.group(0)
    return _INNER_GROUP.sub(widen, pattern)


@lru_cache(maxsize=4)
def _compiled(path: str) -> list[tuple[PhraseRule, re.Pattern]]:
    return [(rule, re.compile(expand(rule.form, rule.pattern), _I)) for rule in load_lay_table(path)
            if rule.form != "lesion"]


@lru_cache(maxsize=8)
def _body_parts(path: str, form: str = "pain") -> list[tuple[PhraseRule, re.Pattern]]:
    """The body parts of the ``pain`` rows (or of another form's) as places a pain radiates to or is felt in, one of a
    list ("the back", not "the back of the head": that is the head's)."""
    return [(rule, re.compile(rf"\b({_SIDE})(?:{rule.pattern})\b(?!\s+of\b)", _I))
            for rule in load_lay_table(path) if rule.form == form]


# what is said of several parts at once, by form: they hurt ("my joints and back hurt", "my arms and legs pain a lot")
# or they swell ("my knees and ankles are swollen", "my knees and wrists have been swelling up")
_TOGETHER = {
    "pain": rf"(?:hurt|hurting|ache|aching|pain|throb|throbbing|"
            rf"{_BE}\s+{_ADV}{{0,2}}{_RUN}(?:sore|painful|tender|aching|achy|hurting){_RUN_AFTER})",
    "swelling": rf"(?:swell|swelling|swelled|(?:have\s+|had\s+)?swollen(?:\s+up)?|"
                rf"{_BE}\s+{_ADV}{{0,2}}{_RUN}(?:swollen|puffy|swelling(?:\s+up)?){_RUN_AFTER})",
}


@lru_cache(maxsize=8)
def _coordinated(path: str, form: str = "pain") -> re.Pattern:
    """Several body parts said to hurt (``form`` "pain") or to swell ("swelling") together: group 1 is the list,
    each of its parts a finding of its own row (:func:`find_lay_phrases`)."""
    part = "|".join(f"(?:{rule.pattern})" for rule in load_lay_table(path) if rule.form == form)
    one = rf"(?:{_OWNER})?{_SIDE}(?:{part})"
    return re.compile(rf"\b{_OWNER}({_SIDE}(?:{part})(?:(?:\s*,\s*(?:and\s+)?|\s+(?:and|&)\s+){one}){{1,4}})"
                      rf"\s+{_ADV}{{0,2}}{_TOGETHER[form]}\b", _I)


# the adjective of a part clinicians put before "pain" where the pain rows name the part as a noun ("abdominal pain")
_ADJECTIVES = {"abdomen": "abdominal", "pelvis": "pelvic", "muscles?": "muscular", "eyes?": "ocular",
               "cheeks?": "facial", "testicles?": "testicular", "ears?": "otic", "flanks?": "loin"}
_PAIN_NOUN = r"(?:pains?|aches?|discomfort|tenderness|soreness)"
_LIST_SIDE = r"(?:(?:left|right|lower|upper|central|bilateral)\s+){0,2}"


@lru_cache(maxsize=4)
def _clinical_forms(path: str) -> list[tuple[PhraseRule, re.Pattern]]:
    """Each pain row's words for its part in a clinician's list of painful places: the row's own nouns, the
    adjective ("abdominal", "pelvic") and the first words of the concept's name ("chest" of chest pain, "joint" of
    joint pain)."""
    out = []
    for rule in load_lay_table(path):
        if rule.form != "pain":
            continue
        words = [rule.pattern, *(adj for noun, adj in _ADJECTIVES.items() if noun in rule.pattern.split("|"))]
        head = re.sub(r"\s*(?:pain|ache)$", "", rule.name.strip(), flags=_I)
        if head and head.lower() != rule.name.strip().lower():
            words.append(re.escape(head))
        out.append((rule, re.compile(rf"\b(?:{'|'.join(words)})\b", _I)))    # whole words: no "back" in "backpack"
    return out


@lru_cache(maxsize=4)
def _clinical_list(path: str) -> re.Pattern:
    """Places of one pain listed before the word for it, "chest and back pain", "neck, shoulder and arm pain",
    "right lower abdominal and pelvic pain": group 1 is the list before the last place (the last place and the word
    for pain are read as usual), each of its places a finding (:func:`find_lay_phrases`)."""
    forms = "|".join(pat.pattern for _, pat in _clinical_forms(path))
    place = rf"{_LIST_SIDE}(?:{forms})"
    return re.compile(rf"\b({place}(?:\s*,\s*{place}){{0,3}})(?:\s*,)?\s+(?:and|&|or|and/or)\s+{place}\s+"
                      rf"{_PAIN_NOUN}\b", _I)


@lru_cache(maxsize=4)
def _lesion(path: str) -> tuple[re.Pattern, list[tuple[PhraseRule, re.Pattern]]]:
    """The pattern of a lesion's description and the ``lesion`` rows' own patterns."""
    rows = [(rule, re.compile(rf"\b(?:{rule.pattern})\b", _I)) for rule in load_lay_table(path)
            if rule.form == "lesion"]
    words = "|".join([_LESION_WORDS, *(f"(?:{rule.pattern})" for rule, _ in rows)])
    description = re.compile(rf"\b(?:(?:{words})(?:\s*,\s*(?:and\s+)?|\s+(?:and|or)\s+|\s+|-)){{0,6}}"
                             rf"(?:{_LESION_NOUN})\b", _I)
    return description, rows


_SIDE_AT_END = re.compile(rf"{_LIST_SIDE}$", _I)


def _sided(text: str, list_start: int, start: int, end: int, path: str) -> Finding | None:
    """A place of a clinician's list with its side words, read as that pain when a phrase row names it: "right lower
    abdominal" of "right lower abdominal and pelvic pain" is right-lower-quadrant pain, not abdominal pain; None
    when the place has no side words or no row names the sided pain."""
    side = _SIDE_AT_END.search(text, list_start, start)
    if side is None or side.start() == start:
        return None
    said = f"{text[side.start():end]} pain"
    for rule, pat in _compiled(path):
        if rule.form == "phrase" and pat.fullmatch(said):
            return _finding(rule, text, side.start(), end)
    return None


def _finding(rule: PhraseRule, text: str, start: int, end: int) -> Finding:
    return Finding(start=start, end=end, text=text[start:end], analyte=rule.name, key=rule.concept_id,
                   name=rule.name, concept_ids=(rule.concept_id,), measured=False, negated=False)


def _run_start(text: str, start: int) -> int:
    """Where the run of states just before ``start`` begins ("hot, swollen, exquisitely " before "painful first MTP
    joint"), else ``start``."""
    m = _RUN_BACK.search(text, max(0, start - 120), start)
    return m.start() if m else start


def find_lay_phrases(text: str, path: Path | str = LAY_TABLE) -> list[Finding]:
    """Findings said in everyday words, in text order, overlaps resolved (the longest wins)."""
    found: list[Finding] = []
    for rule, pat in _compiled(str(path)):
        for m in pat.finditer(text):
            if m.end() <= m.start():
                continue
            before = _NEEDS_BEFORE.get(rule.form)
            if before is not None and not before.search(text, max(0, m.start() - 200), m.start()):
                continue
            start = _run_start(text, m.start()) if rule.form in _RUN_FORMS else m.start()
            found.append(_finding(rule, text, start, m.end()))
    for rule, pat in _body_parts(str(path)):     # a place a pain radiates to, or one of the sites listed after it
        for m in pat.finditer(text):
            if _RADIATES_TO.search(text, max(0, m.start() - 220), m.start()):
                found.append(_finding(rule, text, m.start(), m.end()))     # with its side ("the left arm")
            part = m.end(1)                                                 # the part itself ("cheek")
            if _PAIN_IN.search(text, max(0, part - 300), part):
                found.append(_finding(rule, text, part, m.end()))
    for form in _RUN_FORMS:      # "my joints and back hurt", "my knees and ankles are swollen": each part a finding
        parts = _body_parts(str(path), form)
        for m in _coordinated(str(path), form).finditer(text):
            for rule, pat in parts:
                for p in pat.finditer(text, m.start(1), m.end(1)):
                    found.append(_finding(rule, text, p.start(), p.end()))
    forms = _clinical_forms(str(path))
    for m in _clinical_list(str(path)).finditer(text):    # "chest and back pain": the chest's pain too
        for rule, pat in forms:
            for p in pat.finditer(text, m.start(1), m.end(1)):
                found.append(_sided(text, m.start(1), p.start(), p.end(), str(path)) or
                             _finding(rule, text, p.start(), p.end()))
    description, rows = _lesion(str(path))
    for d in description.finditer(text):
        if _NOT_SKIN.search(text, max(0, d.start() - 40), d.start()):
            continue
        for rule, pat in rows:
            for m in pat.finditer(text, d.start(), d.end()):
                found.append(_finding(rule, text, m.start(), m.end()))
    return resolve_overlaps(found)


__all__ = ["FORMS", "LAY_TABLE", "expand", "find_lay_phrases", "load_lay_table"]

"""Demographics and durations by regular expression: age in years, sex, and how long findings have lasted."""
from __future__ import annotations

import re

from agents.nlp import INFORMANT_RELATIVES, INFORMANT_VERBS
from agents.types import Duration

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
# clinical shorthand for a duration: "2/7" two days, "3/52" three weeks, "6/12" six months, "4/24" four hours (not
# a date "1/12/2024", not "24/7", not a score "4/5" or a pressure "120/80")
_SHORTHAND = re.compile(r"(?<![\w/.])(\d{1,2})\s?/\s?(7|52|12|24)(?![\w/.])")
_SHORTHAND_UNIT = {"7": "d", "52": "w", "12": "mo", "24": "h"}
_AGE_PATTERNS = [
    re.compile(r"\b(\d{1,3}(?:\.\d+)?)[\s-]*(years?|yrs?|y|months?|mos?|weeks?|wks?|days?|d)[\s-]*old\b", re.I),
    re.compile(r"\b(\d{1,3})\s*(?:yo|y/o|y\.o\.?|yoa|yrs?)(?![a-z])", re.I),
    re.compile(r"\b(?:aged?|age:?)\s*(\d{1,3})\b", re.I),
    re.compile(r"\b[MF]\s*[,/]\s*(\d{1,3})\b"),
    re.compile(r"\b(\d{1,3})\s*[,/-]?\s*(?:[MF])\b"),
    # a patient who gives an age in words of their own ("I am 67 and smoked", "I'm 45.", "she is 3, and ...")
    re.compile(r"\b(?:I(?:'m|\s+am)|(?:he|she)(?:'s|\s+is))\s+(\d{1,3})(?=\s*(?:[,.;)]|and\b|years?\b|$))", re.I),
]
# The presentation opens with the relative the writer speaks for: "My son has a barking cough", "Our 2-year-old
# daughter ...", "Child of 4 with ...", "A 34-year-old mother of two presents with ...". That relative is the patient:
# the word is the subject of the illness described, not a family-history cue, and gives the patient's sex.
_RELATIVE_SEX = {"son": "male", "grandson": "male", "husband": "male", "father": "male", "dad": "male",
                 "brother": "male", "nephew": "male", "daughter": "female", "granddaughter": "female",
                 "wife": "female", "mother": "female", "mom": "female", "mum": "female", "sister": "female",
                 "grandmother": "female", "niece": "female", "grandfather": "male",
                 "boy": "male", "girl": "female", "child": None, "kid": None, "baby": None, "infant": None,
                 "toddler": None, "partner": None, "spouse": None}
_AGE_WORD = r"\d{1,3}(?:\.\d+)?[\s-]*(?:years?|yrs?|months?|mos?|weeks?|wks?|days?)[\s-]*old"
# how an opening describes the child it is about ("A 5-year-old unvaccinated child", "a previously healthy boy")
_STATE_WORD = (r"(?:previously\s+|otherwise\s+|fully\s+)?(?:healthy|well|unvaccinated|unimmuni[sz]ed|vaccinated|"
               r"immuni[sz]ed|febrile|afebrile|sick|ill|unwell|irritable|lethargic|fussy|obese|overweight|thin|"
               r"premature|preterm|term|breast-?fed|bottle-?fed|adopted)")
# the informant's words are ConText's (agents.nlp), with the forms an opening needs besides ("Parents ... report",
# "Mom says", "is worried")
_INFORMANT_VERB = "|".join(v.replace(" ", r"\s+") for v in sorted(
    {*INFORMANT_VERBS, "report", "bring", "state", "note", "describe", "tell", "tells", "told", "think", "thought",
     "is worried", "was worried", "is concerned"}, key=lambda v: (-len(v), v)))
_INFORMANT = "|".join(sorted({*INFORMANT_RELATIVES, "mom", "mum", "dad", "caregiver", "guardian"},
                             key=lambda v: (-len(v), v)))
_OPENING_RELATIVE = re.compile(
    # the informant who brings or speaks for the patient: "A mother brings her 3-year-old son ...", "Mother reports
    # that her son ...", "Parents of a 2-month-old girl report ..."
    r"^\W*(?P<informant>(?:(?:his|her|the|a|an|my|their|our)\s+)?(?:" + _INFORMANT + r")\s+"
    r"(?:(?:" + _INFORMANT_VERB + r")\s+(?:in\s+)?(?:that\s+)?|of\s+))?"
    # "his/her/their" only after an informant ("His mother has asthma": the patient is "he", the mother family)
    r"(?:(?:my|our|a|an|the)\s+|(?(informant)(?:his|her|their)\s+))?"
    r"(?:(?:" + _AGE_WORD + r"|little|baby|infant|newborn|teenage|young|adult|elderly|older|younger|eldest|youngest|"
    r"oldest|" + _STATE_WORD + r")[\s,]+){0,3}(?P<who>" + "|".join(_RELATIVE_SEX) + r")\b"
    # not the informant ("My wife noticed that I ..."), unless one was named first ("Parents of a girl report ...")
    r"(?!['’]s)(?(informant)|(?!\s+(?:" + _INFORMANT_VERB + r")\b))", re.I)
_CHILDREN = frozenset({"son", "daughter", "child", "kid", "grandson", "granddaughter", "boy", "girl", "baby", "infant",
                       "toddler"})
_SPOUSES = frozenset({"husband", "wife", "partner", "spouse"})
# "child of 4", "son aged 6", "my daughter (3)", "my son, 7,", "my daughter is 2 and ...": the age beside the child
# who opens the text
_RELATIVE_AGE = re.compile(r"^\s*(?:of|aged?|is|,\s+who\s+is)\s+(\d{1,2})\b(?!\s*(?:children|kids|sons|daughters|"
                           r"times|days?|weeks?|months?|kg|cm|lbs?|pounds|%|[.,]\d))|^\s*[(,]\s*(\d{1,2})\s*[),]", re.I)


# the writer speaks of their own illness: a parent, sibling or grandparent named first is family history ("My mother
# had breast cancer. I have a lump in my breast.")
_FIRST_PERSON = re.compile(r"\bI(?:\s+(?:have|had|am|feel|felt|get|got|keep|noticed\s+a)|['’](?:ve|m))\b")


def _opening(text: str) -> re.Match | None:
    m = _OPENING_RELATIVE.search(text)
    if m and m.group("who").lower() not in _CHILDREN | _SPOUSES and _FIRST_PERSON.search(text):
        return None
    return m


def opening_relative(text: str) -> tuple[int, int] | None:
    """The character span of the phrase a presentation opens with that names a relative as its subject ("My son"
    has ..., "Child" of 4 with ..., "A mother brings her 3-year-old son" to ...), or None. That relative is the
    patient (see ``_OPENING_RELATIVE``), unless a parent, sibling or grandparent is named first and the writer goes on
    about their own complaints."""
    m = _opening(text)
    return (m.start() + len(m.group(0)) - len(m.group(0).lstrip(" \t\n\"'([-*")), m.end("who")) if m else None


_FEMALE = re.compile(r"\b(woman|women|female|girl|lady|gravida|pregnant|she|her|mrs|ms)\b", re.I)
_MALE = re.compile(r"\b(man|men|male|boy|gentleman|he|his|him|mr)\b", re.I)
_SEX_LETTER = re.compile(r"(?:\b\d{1,3}\s*(?:yo|y/o|y\.o\.?|yrs?)?\s*[,/-]?\s*([MF])\b|\b([MF])\s*[,/]\s*\d{1,3}\b)")
_STRONG_SEX = {"woman", "women", "female", "girl", "lady", "gravida", "pregnant", "man", "men", "male", "boy",
               "gentleman"}


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
    opening = _opening(text)
    if opening:
        who = opening.group("who").lower()
        extra = _RELATIVE_AGE.search(text[opening.end():]) if who in _CHILDREN else None
        if age is None and extra:
            group = 1 if extra.group(1) else 2
            age = float(extra.group(group))
            spans.append((opening.end() + extra.start(group), opening.end() + extra.end(group)))
        if _RELATIVE_SEX.get(who):
            spans.append(opening.span("who"))
            return age, _RELATIVE_SEX[who], spans
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


def _taken(found: list[tuple[int, int, Duration]], m: re.Match) -> bool:
    """``m`` overlaps a duration already found (the earlier pattern wins)."""
    return any(s < m.end() and m.start() < e for s, e, _ in found)


def find_durations(text: str) -> list[Duration]:
    found: list[tuple[int, int, Duration]] = []
    for pat in _DURATION_PATTERNS:
        for m in pat.finditer(text):
            if _taken(found, m):
                continue
            num = _parse_number(m.group(1)) if m.group(1) else 1.0
            if num is None:
                continue
            unit = _unit_key(m.group(2))
            if unit in ("d", "w", "y", "h") and not re.search(r"\d", m.group(0)):
                continue
            days = num * _UNIT_DAYS.get(unit, 1.0)
            found.append((m.start(), m.end(), Duration(text=m.group(0).strip(), days=round(days, 4),
                                                       start=m.start(), end=m.end())))
    for m in _SHORTHAND.finditer(text):
        num, unit = int(m.group(1)), _SHORTHAND_UNIT[m.group(2)]
        if num == 0 or (m.group(1), m.group(2)) == ("24", "7") or _taken(found, m):
            continue
        found.append((m.start(), m.end(), Duration(text=m.group(0), days=round(num * _UNIT_DAYS[unit], 4),
                                                   start=m.start(), end=m.end())))
    return [d for _, _, d in sorted(found, key=lambda t: t[0])]


# How long the presenting illness has lasted. A duration belongs to the illness unless it dates something else: a
# disease of the past history ("a 10-year history of hypertension"), a habit ("has smoked for 30 years"), a
# medicine, a pregnancy or a last period, a job, a move or a journey ("returned from Ghana 3 months ago"); "since
# yesterday", "began this morning" and "woke up with" are a day ("woke up and found a rash" says when it was seen).
ACUTE_DAYS, CHRONIC_DAYS = 14.0, 56.0
_NOT_ILLNESS = re.compile(r"\b(?:smok\w*|cigarettes?|pack|packs|drinks?|drinking|drank|alcohol|beers?|wine|taking|"
                          r"takes|took|medications?|medicines?|tablets?|treated|therapy|married|marriage|works?|worked|"
                          r"working|employed|job|lived|living|lives|moved|immigrated|emigrated|pregnan\w*|"
                          r"gestation\w*|gravida|postpartum|menarche|menopaus\w*|menstrual|LMP|surgery|operation|"
                          r"underwent|transplant\w*|diagnosed|sexually\s+active|partner|relationship|retired|vegan|"
                          r"vegetarian|diet|travel\w*|returned|back\s+from|came\s+back|trip|vacation|holiday|"
                          r"visit\w*|born|birth|delivered|delivery|adopted)\b", re.I)
_ONE_DAY = re.compile(r"\b(?:since|started|starting|began|beginning|begun)\s+(?:\w+\s+){0,3}?"
                      r"(?:yesterday|this\s+morning|last\s+night|earlier\s+today|today|overnight)\b|"
                      r"\bwoke\s+up\s+(?:this\s+morning\s+|today\s+)?with\b", re.I)
_CLAUSE_END = re.compile(r"[.;:!?\n]")
# a complaint the text adds beside the presenting one ("She also says she has suffered from mild constipation for the
# past few years"): long-standing, it is the background of this illness, not its course
_ADDED = re.compile(r"\b(?:also|additionally|in\s+addition|as\s+well|besides)\b", re.I)
_AGO = re.compile(r"\bago\b", re.I)
_DISEASE_FOR = re.compile(r"\s*(?:,\s*)?(?:for|since|of)\b", re.I)   # "diabetes for 15 years" (the span starts at "for")
_ONSET = re.compile(r"\b(?:began|begun|begin|beginning|start\w*|onset|develop\w*|noticed|first|appeared|came\s+on|"
                    r"since)\b", re.I)


# the findings that say weight has been lost over time (their names in the knowledge graph)
_WEIGHT_LOST = frozenset({"weight loss", "cachexia", "abnormal weight loss", "unintentional weight loss"})


def illness_course(text: str, durations: list[Duration], entities: list | None = None) -> str | None:
    """"acute" when every duration of the presenting illness is ``ACUTE_DAYS`` or less, "chronic" when one is
    ``CHRONIC_DAYS`` or more, else None (no duration said, or only ones in between). A duration is left out when the
    words beside it in its clause (up to 25 characters before, 15 after) date a habit, a medicine, a pregnancy, a
    job, a journey or a past event ("smoked for 30 years", "at 32 weeks' gestation", "diagnosed 5 years ago"), or
    when the entity right after it (within 12 characters, in its clause) is a disease ("a 10-year history of
    hypertension": the hypertension is history, the 10 years are not this illness's), and so when a disease ends
    just before it, joined by "for", "since" or "of" ("type 2 diabetes for 15 years"). "N years ago" dates an
    event, not an illness, unless its clause says something began then ("the cough began 3 weeks ago"). A duration of
    ``CHRONIC_DAYS`` or more in a clause that adds a complaint beside the presenting one ("she also says she has
    suffered from mild constipation for the past few years") is its background, not this illness's course. A
    course of days with weight lost (a present weight-loss finding among ``entities``) is not called acute: the
    weight says the illness is older than the complaint dated."""
    kept: list[float] = []
    for d in durations:
        if d.start < 0:
            continue
        lo = max([m.end() for m in _CLAUSE_END.finditer(text, 0, d.start)], default=0)
        nxt = _CLAUSE_END.search(text, d.end)
        hi = nxt.start() if nxt else len(text)
        near = text[max(lo, d.start - 25):min(hi, d.end + 15)]
        if _NOT_ILLNESS.search(near):
            continue
        if d.days >= CHRONIC_DAYS and _ADDED.search(text, lo, hi):
            continue     # a long-standing complaint added beside the presenting one is background
        if _AGO.search(d.text) and not _ONSET.search(text, lo, hi):
            continue     # "a hysterectomy 16 years ago" dates an event; "the cough began 3 weeks ago" an illness
        after = [e for e in (entities or ()) if d.end <= getattr(e, "start", -1) < min(hi, d.end + 12)
                 and getattr(e, "category", "") != "demographic"]
        if after and min(after, key=lambda e: e.start).category == "disease":
            continue
        # "type 2 diabetes for 15 years": a disease just before "for"/"since" and the duration is its history
        before = [e for e in (entities or ()) if max(lo, d.start - 12) <= getattr(e, "end", -1) <= d.start
                  and getattr(e, "category", "") != "demographic"]
        if before:
            last = max(before, key=lambda e: e.end)
            if last.category == "disease" and not text[last.end:d.start].strip(" ,") and \
                    _DISEASE_FOR.match(text, last.end, d.end):
                continue
        kept.append(d.days)
    if _ONE_DAY.search(text):
        kept.append(1.0)
    if not kept:
        return None
    if max(kept) >= CHRONIC_DAYS:
        return "chronic"
    if max(kept) <= ACUTE_DAYS:
        # weight lost is the mark of an illness older than its stated complaint ("two weeks of dysphagia, lost 4 kg"):
        # the course is then not called acute
        if any(e.current and (e.concept_name or "").lower() in _WEIGHT_LOST for e in entities or ()):
            return None
        return "acute"
    return None


__all__ = ["find_age_sex", "find_durations", "illness_course", "opening_relative", "ACUTE_DAYS", "CHRONIC_DAYS"]

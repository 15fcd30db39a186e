"""Vital signs as findings: temperature, pulse, respirations, blood pressure, oxygen saturation and body-mass index
read from the presentation by regular expression, and their abnormal values turned into findings.

Readings are recognised in the ways vignettes and notes write them::

    Her temperature is 38.9°C (102°F), pulse is 120/min, respirations are 22/min, and blood pressure is
    85/50 mm Hg. Oxygen saturation is 86% on room air.
    T 38.9 °C, HR 120, BP 80/50 mm Hg, RR 28, SpO2 88%, O2 sat 91% RA, BMI 34 kg/m2

A name (``temperature``, ``temp``, ``T``, ``pulse``, ``heart rate``, ``HR``, ``respirations``, ``RR``,
``blood pressure``, ``BP``, ``SpO2``, ``oxygen saturation``, ``PaO2``, ``BMI``) is followed by a few linking words
("is", "of", "was", ":") and the value; a value whose unit says what it is ("38.9°C", "120 bpm", "28 breaths/min",
"85/50 mm Hg") is read without a name. A temperature without a unit is taken as °C between 30 and 45 and as °F
between 86 and 113. Values outside a plausible range are ignored.

Thresholds (adults; :func:`vital_limits` gives approximate paediatric limits for pulse, respirations and systolic
pressure when the age is known):

==========================  ============================================
fever                       temperature >= 38.0 °C (100.4 °F)
low-grade fever             37.8 <= temperature < 38.0 °C (100.0-100.3 °F)
hypothermia                 temperature < 35.0 °C (95 °F)
tachycardia / bradycardia   pulse > 100 / < 60 per minute
tachypnea / bradypnea       respirations > 20 / < 10 per minute (bradypnea: age 12 and over)
hypotension                 systolic pressure < 90 mm Hg
elevated blood pressure     systolic >= 140 or diastolic >= 90 mm Hg (age 12 and over)
hypoxemia                   SpO2 < 92 %, or PaO2 < 80 mm Hg
obesity / underweight       BMI >= 30 / < 18.5 kg/m2 (underweight: adults only)
==========================  ============================================

A value inside these limits gives a :class:`~.findings.Finding` with ``key=None`` (no entity).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .findings import Finding, Reading, finding, parse_number, resolve_overlaps

_I = re.IGNORECASE

# linking words between a name and its value: "pulse is 120/min", "temperature of up to 39.4°C", "BP: 120/80"
_LINK = (r"(?:\s*(?:[:=~]|\b(?:is|are|was|were|of|at|to|now|about|approximately|around|measured|measures|recorded|"
         r"reached|reaches|rose\s+to|rises\s+to|spiked\s+to|up\s+to|peaked\s+at|has\s+been|had\s+been|remains|remained|"
         r"regular|irregular|weak|"
         r"thready|bounding|shallow|labored|laboured)\b)){0,4}\s*")
_DEGREE = r"(?:°|º|˚|\u2103|\u2109)"
_PAREN_TEMP = r"(?:\s*\(\s*\d{2,3}(?:[.,]\d{1,2})?\s*" + _DEGREE + r"?\s*(?:degrees?\s*)?[CF]?\s*\))?"
_PER_MIN = r"(?:/\s*min(?:ute)?\b|per\s+min(?:ute)?\b|min(?:-1|\u207b\u00b9))"
_BEATS = r"(?:bpm\b|beats?\s*(?:/|per|a)\s*min(?:ute)?\b)"
_BREATHS = r"(?:breaths?\s*(?:/|per|a)\s*min(?:ute)?\b)"
_MMHG = r"(?:mm\s*Hg\b|mmHg\b|mm\s+of\s+(?:Hg|mercury)\b|millimeters\s+of\s+mercury\b)"

_TEMP_NAMED = re.compile(
    r"(?:\b(?:(?:body|oral|rectal|axillary|tympanic|core|maximum|max)\s+)?(?:temperature|temp)s?\b\.?"
    r"|\b(?-i:T\s?max|T)\b)" + _LINK
    + r"(?P<value>\d{2,3}(?:[.,]\d{1,2})?)\s*(?P<unit>" + _DEGREE + r"\s*[CF]?(?![a-z])|degrees?\s+(?:Celsius|"
    r"Fahrenheit|centigrade|C|F)\b|deg\.?\s*[CF]\b|[CF](?![a-z]))?" + _PAREN_TEMP, _I)
_TEMP_BARE = re.compile(
    r"(?<![\d.,])(?P<value>\d{2,3}(?:[.,]\d{1,2})?)\s*(?P<unit>" + _DEGREE + r"\s*[CF](?![a-z])|\u2103|\u2109"
    r"|degrees?\s+(?:Celsius|Fahrenheit|C|F)\b)" + _PAREN_TEMP, _I)

_HR_NAMED = re.compile(
    r"(?:\b(?:heart\s+rate|(?:apical\s+|radial\s+)?pulse(?:\s+rate)?)\b|\b(?-i:HR)\b)" + _LINK
    + r"(?P<value>\d{2,3})(?![\d.,]\d)\s*(?P<unit>" + _PER_MIN + "|" + _BEATS + r")?", _I)
_HR_LETTER = re.compile(r"\b(?-i:P)\s*[:=]?\s*(?P<value>\d{2,3})\s*(?P<unit>" + _PER_MIN + "|" + _BEATS + ")", _I)
_HR_BARE = re.compile(r"(?<![\d.,/])(?P<value>\d{2,3})\s*(?P<unit>" + _BEATS + ")", _I)

_RR_NAMED = re.compile(
    r"(?:\b(?:respirations?|respiratory\s+rate|respiration\s+rate|breathing\s+rate|resp(?:\s+rate)?)\b\.?"
    r"|\b(?-i:RR)\b)" + _LINK
    + r"(?P<value>\d{1,2})(?![\d.,]\d)\s*(?P<unit>" + _PER_MIN + "|" + _BREATHS + r"|bpm\b)?", _I)
_RR_LETTER = re.compile(r"\b(?-i:R)\s*[:=]?\s*(?P<value>\d{1,2})\s*(?P<unit>" + _PER_MIN + "|" + _BREATHS + ")", _I)
_RR_BARE = re.compile(r"(?<![\d.,/])(?P<value>\d{1,2})\s*(?P<unit>" + _BREATHS + ")", _I)

_BP_NAMED = re.compile(
    r"(?:\b(?:(?:arterial\s+)?blood\s+pressure|arterial\s+pressure)\b|\b(?-i:BP|B/P|NIBP)\b)" + _LINK
    + r"(?P<value>\d{2,3})\s*/\s*(?P<value2>\d{2,3})\b(?:\s*(?P<unit>" + _MMHG + "))?", _I)
_BP_BARE = re.compile(r"(?<![\d./])(?P<value>\d{2,3})\s*/\s*(?P<value2>\d{2,3})\s*(?P<unit>" + _MMHG + ")", _I)
_SBP_NAMED = re.compile(
    r"\bsystolic\s+(?:(?:blood\s+)?pressure|(?-i:BP))" + _LINK
    + r"(?P<value>\d{2,3})\b(?!\s*/)(?:\s*(?P<unit>" + _MMHG + "))?", _I)

_SAT_CONTEXT = (
    r"(?:\s*,?\s*(?:on|while\s+breathing|breathing|with)\s+(?:room\s+air|ambient\s+air|(?-i:RA)\b|\d+(?:\.\d+)?\s*"
    r"(?:L|liters?|litres?)(?:\s*/\s*min)?(?:\s+(?:of\s+)?(?:oxygen|O2))?(?:\s+(?:via|by)\s+(?:nasal\s+cannula|"
    r"(?-i:NC)|(?:non-?rebreather\s+|face\s*)?mask))?|(?:supplemental\s+)?oxygen|nasal\s+cannula)"
    r"|\s+(?-i:RA)\b|\s*\(\s*(?:room\s+air|(?-i:RA))\s*\))?")
_SAT_NAMED = re.compile(
    r"(?P<name>\b(?-i:SpO2|SpO\u2082|SaO2|SaO\u2082)|\b(?:O2|O\u2082|oxygen)\s+sat(?:uration)?s?\b"
    r"|\bsats?\b|\bsaturating\b|\bpulse\s+ox(?:imetry)?\b(?:\s+(?:shows?|showed|reveals?|revealed|reading|"
    r"reads|is|was|of|an?|oxygen|saturation|sat))*)" + _LINK
    + r"(?P<value>\d{2,3}(?:\.\d)?)(?![\d])\s*(?P<unit>%)?" + _SAT_CONTEXT, _I)
_PAO2_NAMED = re.compile(
    r"(?:\b(?-i:PaO2|PaO\u2082)|\barterial\s+(?:oxygen\s+tension|partial\s+pressure\s+of\s+oxygen)\b)" + _LINK
    + r"(?P<value>\d{1,3}(?:\.\d)?)\s*(?P<unit>" + _MMHG + r"|kPa\b)?", _I)

_BMI_NAMED = re.compile(
    r"\b(?:(?-i:BMI)|body[\s-]+mass\s+index)\b(?:\s*\(\s*(?-i:BMI)\s*\))?" + _LINK
    + r"(?P<value>\d{2}(?:\.\d{1,2})?)\b(?:\s*(?P<unit>kg\s*/\s*m(?:2|\u00b2|\^2)|kg\s+per\s+(?:square\s+met(?:er|re)"
    r"|m2|m\u00b2)))?", _I)


@dataclass(frozen=True)
class VitalLimits:
    """Limits outside which a pulse, respiratory rate or systolic pressure is abnormal."""

    pulse_high: float = 100
    pulse_low: float = 60
    respirations_high: float = 20
    systolic_low: float = 90
    adult_pressure: bool = True     # judge a high blood pressure by the adult 140/90 limit
    respirations_low: float | None = 10     # an adult's respiratory depression (opioids, a coma); none for a child


def vital_limits(age_years: float | None = None) -> VitalLimits:
    """Approximate limits by age (adult limits from age 12 or when the age is unknown). Children breathe and beat
    faster and have lower pressures: infants pulse > 160, < 100, respirations > 50, systolic < 70; ages 1-5
    > 140, < 80, > 40, systolic < 70 + 2 x age; ages 6-11 > 120, < 70, > 30, systolic < 70 + 2 x age."""
    if age_years is None or age_years >= 12:
        return VitalLimits()
    if age_years < 1:
        return VitalLimits(160, 100, 50, 70, adult_pressure=False, respirations_low=None)
    low_sbp = min(90.0, 70 + 2 * int(age_years))
    if age_years < 6:
        return VitalLimits(140, 80, 40, low_sbp, adult_pressure=False, respirations_low=None)
    return VitalLimits(120, 70, 30, low_sbp, adult_pressure=False, respirations_low=None)


def _temperature_celsius(value: float, unit: str | None) -> float | None:
    u = (unit or "").strip().lower()
    if "f" in u or "\u2109" in u:
        celsius = (value - 32) * 5 / 9
    elif "c" in u or "\u2103" in u or 30 <= value <= 45:
        celsius = value
    elif 86 <= value <= 113:
        celsius = (value - 32) * 5 / 9
    else:
        return None
    return celsius if 25 <= celsius <= 46 else None


def _reading(m: re.Match, text: str, analyte: str, value: float, value2: float | None = None,
             unit: str = "") -> Reading:
    return Reading(start=m.start(), end=m.end(), text=text[m.start():m.end()], analyte=analyte, value=value,
                   value2=value2, unit=unit)


def read_vitals(text: str) -> list[Reading]:
    """Every vital-sign reading in ``text`` (overlaps resolved: the longest expression wins), in text order."""
    out: list[Reading] = []
    for pat in (_TEMP_NAMED, _TEMP_BARE):
        for m in pat.finditer(text):
            v = parse_number(m.group("value"))
            c = _temperature_celsius(v, m.group("unit")) if v is not None else None
            if c is not None:
                out.append(_reading(m, text, "temperature", round(c, 2), unit="°C"))
    for pat, analyte, lo, hi in ((_HR_NAMED, "pulse", 20, 300), (_HR_LETTER, "pulse", 20, 300),
                                 (_HR_BARE, "pulse", 20, 300), (_RR_NAMED, "respirations", 4, 80),
                                 (_RR_LETTER, "respirations", 4, 80), (_RR_BARE, "respirations", 4, 80)):
        for m in pat.finditer(text):
            v = parse_number(m.group("value"))
            if v is not None and lo <= v <= hi:
                out.append(_reading(m, text, analyte, v, unit="/min"))
    for pat in (_BP_NAMED, _BP_BARE):
        for m in pat.finditer(text):
            sys_, dia = float(m.group("value")), float(m.group("value2"))
            if 40 <= sys_ <= 300 and 20 <= dia <= 200 and sys_ > dia:
                out.append(_reading(m, text, "blood pressure", sys_, dia, "mm Hg"))
    for m in _SBP_NAMED.finditer(text):
        v = float(m.group("value"))
        if 40 <= v <= 300:
            out.append(_reading(m, text, "blood pressure", v, None, "mm Hg"))
    for m in _SAT_NAMED.finditer(text):
        v = parse_number(m.group("value"))
        if m.group("unit") is None and not re.search(r"O2|O\u2082", m.group("name"), _I):
            continue                                       # "sats 88" without "%" is too loose
        if v is not None and 50 <= v <= 100:
            out.append(_reading(m, text, "oxygen saturation", v, unit="%"))
    for m in _PAO2_NAMED.finditer(text):
        v = parse_number(m.group("value"))
        if v is None:
            continue
        if (m.group("unit") or "").lower() == "kpa":
            v = round(v * 7.50062, 1)
        if 20 <= v <= 700:
            out.append(_reading(m, text, "PaO2", v, unit="mm Hg"))
    for m in _BMI_NAMED.finditer(text):
        v = parse_number(m.group("value"))
        if v is not None and 10 <= v <= 100:
            out.append(_reading(m, text, "BMI", v, unit="kg/m2"))
    return _longest_first(out)


def _longest_first(readings: list[Reading]) -> list[Reading]:
    kept: list[Reading] = []
    for r in sorted(readings, key=lambda r: (-(r.end - r.start), r.start)):
        if not any(k.start < r.end and r.start < k.end for k in kept):
            kept.append(r)
    return sorted(kept, key=lambda r: r.start)


def vital_finding(reading: Reading, age_years: float | None = None) -> Finding:
    """The finding of one vital-sign reading (``key=None`` when it is within the limits, with the findings the
    reading rules out in ``rules_out``: a temperature of 36.8 °C is no fever, a pulse of 80/min neither tachycardia
    nor bradycardia; a value in the grey zone — 37.8-37.9 °C, a saturation of 92-94 %, a systolic pressure of 90-99
    mm Hg — rules nothing out)."""
    lim = vital_limits(age_years)
    v = reading.value
    key: str | None = None
    rules_out: tuple[str | None, ...] = ()
    if reading.analyte == "temperature":
        key = ("fever" if v >= 38.0 else "low-grade fever" if v >= 37.8 else "hypothermia" if v < 35.0
               else None)
        rules_out = ("fever",)
    elif reading.analyte == "pulse":
        key = "tachycardia" if v > lim.pulse_high else "bradycardia" if v < lim.pulse_low else None
        rules_out = ("tachycardia", "bradycardia")
    elif reading.analyte == "respirations":
        low = lim.respirations_low
        key = ("tachypnea" if v > lim.respirations_high else "bradypnea" if low is not None and v < low else None)
        rules_out = ("tachypnea", "bradypnea" if low is not None else None)
    elif reading.analyte == "blood pressure":
        dia = reading.value2
        if v < lim.systolic_low:
            key = "hypotension"
        elif lim.adult_pressure and (v >= 140 or (dia is not None and dia >= 90)):
            key = "elevated blood pressure"
        # a systolic pressure within 10 mm Hg of the limit (90-99 in an adult) is no hypotension but does not rule
        # one out either: a fainting young woman's 92/58 is low for her
        rules_out = ("hypotension" if v >= lim.systolic_low + 10 else None,
                     "elevated blood pressure" if lim.adult_pressure else None)
    elif reading.analyte == "oxygen saturation":
        key = "hypoxemia" if v < 92 else None
        rules_out = ("hypoxemia",) if v >= 95 else ()
    elif reading.analyte == "PaO2":
        key = "hypoxemia" if v < 80 else None
        rules_out = ("hypoxemia",)
    elif reading.analyte == "BMI":
        adult = age_years is None or age_years >= 18
        key = "obesity" if v >= 30 else "underweight" if (v < 18.5 and adult) else None
    return finding(reading, key, rules_out)


def find_vitals(text: str, age_years: float | None = None) -> list[Finding]:
    """The vital-sign findings of ``text``, normal readings included (``key=None``), in text order."""
    return resolve_overlaps(vital_finding(r, age_years) for r in read_vitals(text))


__all__ = ["VitalLimits", "find_vitals", "read_vitals", "vital_finding", "vital_limits"]

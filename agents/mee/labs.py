"""Test results as findings: numeric laboratory values checked against reference ranges, and results written in
words ("elevated troponin", "ST elevation", "anti-dsDNA antibodies are positive") looked up in a curated table.

**Numeric values** (:func:`read_lab_values`, :func:`lab_finding`): an analyte name, a few linking words and a value
with an optional unit, as in "hemoglobin 7.2 g/dL", "serum sodium of 125 mEq/L", "Na+ 125 mEq/L", "leukocyte
count is 18,000/mm3", "WBC 18.5 x 10^9/L", "glucose 450 mg/dL", "creatinine 2.1 mg/dL". Units are converted to one
reference unit per analyte (g/L -> g/dL, mmol/L -> mg/dL for glucose and calcium, umol/L -> mg/dL for creatinine,
10^9/L and K/uL -> cells/mm3); a value without a unit is taken in the unit its size implies, and implausible values
are ignored. Reference limits (adults; haemoglobin and creatinine by sex when it is known, haemoglobin also by age):

=================  ========================================  =======================================
analyte            low                                       high
=================  ========================================  =======================================
hemoglobin         anemia < 12 g/dL (men < 13; children       increased > 17.5 (women > 16)
                   < 11-11.5)
WBC                leukopenia < 4,000/mm3                    leukocytosis > 11,000/mm3
platelets          thrombocytopenia < 150,000/mm3            thrombocytosis > 450,000/mm3
sodium             hyponatremia < 135 mEq/L                  hypernatremia > 145 mEq/L
potassium          hypokalemia < 3.5 mEq/L                   hyperkalemia > 5.0 mEq/L
glucose            hypoglycemia < 70 mg/dL                   hyperglycemia > 140 mg/dL
creatinine                                                   elevated > 1.2 mg/dL (men 1.3, women 1.1)
urea nitrogen                                                elevated > 20 mg/dL
calcium            hypocalcemia < 8.5 mg/dL                  hypercalcemia > 10.5 mg/dL
HbA1c                                                        elevated >= 5.7 %
ESR                                                          elevated > 20 mm/h (women > 30)
ALT, AST                                                     elevated > 40 U/L
alkaline phosph.                                             elevated > 150 U/L (adults only)
bilirubin                                                    hyperbilirubinemia > 1.2 mg/dL
albumin            hypoalbuminemia < 3.5 g/dL
MCV                decreased < 80 fL                         increased > 100 fL
TSH                decreased < 0.4 mU/L                      elevated > 4.5 mU/L
free T4            decreased < 0.8 ng/dL                     increased > 1.8 ng/dL
creatine kinase                                              elevated > 200 U/L
ferritin           decreased < 15 ng/mL (WHO, iron stores)   increased > 300 ng/mL (women > 200)
neutrophil count   neutropenia < 1,500/mm3                   neutrophilia > 8,000/mm3
lymphocyte count   lymphopenia < 1,000/mm3                   lymphocytosis > 4,000/mm3
eosinophil count                                             eosinophilia > 500/mm3
neutrophils (%)                                              neutrophilia > 80 % (a % only)
eosinophils (%)                                              eosinophilia > 6 %
lymphocytes (%)                                              lymphocytosis > 50 %
lipase                                                       elevated > 160 U/L
amylase                                                      elevated > 125 U/L
LDH                                                          elevated > 280 U/L
CRP                                                          elevated > 10 mg/L (mg/dL x 10)
lactate                                                      elevated > 2.0 mmol/L
PT                                                           prolonged > 13.5 s
INR                                                          prolonged PT > 1.3
aPTT                                                         prolonged > 40 s
magnesium          hypomagnesemia < 1.6 mg/dL                hypermagnesemia > 2.6 mg/dL
phosphate          hypophosphatemia < 2.5 mg/dL              hyperphosphatemia > 4.5 mg/dL
uric acid                                                    hyperuricemia > 7.0 mg/dL
triglycerides                                                hypertriglyceridemia > 200 mg/dL
total cholesterol                                            hypercholesterolemia > 240 mg/dL
LDL cholesterol                                              hypercholesterolemia > 160 mg/dL
chloride           hypochloremia < 96 mEq/L
bicarbonate        decreased < 22 mEq/L                      elevated > 29 mEq/L
blood pH           acidosis < 7.35                           alkalosis > 7.45
PaCO2              hypocapnia < 35 mm Hg                     hypercapnia > 45 mm Hg
=================  ========================================  =======================================

**Results in words** (:func:`find_lab_phrases`): the table ``lab_phrases.tsv`` next to this module lists, per
knowledge-graph concept, a pattern and its form (an analyte that is high, low, positive or prolonged, or a fixed
phrase); its header explains the forms. "Troponin is normal", "ANA negative" and "not elevated" give the finding
negated; a fixed phrase takes its negation from the context ("no ST elevation").
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from .findings import Finding, PhraseRule, Reading, finding, parse_number, read_phrase_table, resolve_overlaps

_I = re.IGNORECASE
PHRASE_TABLE = Path(__file__).with_name("lab_phrases.tsv")

# ---------------------------------------------------------------------------------------------- numeric values

_LINK = (r"(?:\s*(?:[:=~]|\b(?:is|are|was|were|of|at|to|now|levels?|concentrations?|counts?|measured|measures|"
         r"shows?|showed|remains?|remained|has|been|"
         r"(?:risen|rose|increased|climbed|gone\s+up|fallen|fell|dropped|decreased)(?:\s+from\s+\d+(?:[.,]\d+)?)?\s+to|"
         r"elevated\s+at|elevated\s+to|low\s+at|high\s+at)\b)){0,4}\s*")
_VALUE = (r"(?:[<>\u2264\u2265]\s*)?(?P<value>\d{1,3}(?:,\d{3})+(?![\d])|\d{1,3}(?:\s\d{3})+(?![\d.,])"
          r"|\d+(?:[.,]\d+)?)")
_MEQ = r"(?:mEq\s*/\s*L|mmol\s*/\s*L)\b"
_MGDL = r"mg\s*/\s*dL\b"
_PER_MM3 = (r"(?:/\s*(?:mm3|mm\u00b3|mm\^3|\u00b5L|uL|\u03bcL|microliters?|cu\s*mm)\b"
            r"|cells\s*/\s*(?:mm3|mm\u00b3|\u00b5L|uL)"
            r"|per\s+(?:mm3|mm\u00b3|cubic\s+millimet(?:er|re)|microlit(?:er|re)))")
_TIMES_10 = r"(?:[x\u00d7*]\s*10\s*(?:\^|e|\*\*)?\s*(?:9|3|\u2079|\u00b3|\(9\)|\(3\))\s*(?:/\s*(?:L|\u00b5L|uL|mm3))?)"
_K_UL = r"(?:K\s*/\s*(?:\u00b5L|uL|mm3)|thousand(?:\s*/\s*(?:\u00b5L|uL|mm3))?)"
_COUNT_UNIT = _PER_MM3 + "|" + _TIMES_10 + "|" + _K_UL


@dataclass(frozen=True)
class _Analyte:
    key: str
    name: str                                # regular expression of its names
    unit: str                                # regular expression of its units (the group "unit")
    normalise: Callable[[float, str], float | None]   # (value, unit text) -> value in the reference unit
    short: bool = False                      # written as a symbol (Na, K, Cr), it needs a unit or a decimal value


def _hemoglobin(v: float, unit: str) -> float | None:
    u = unit.lower().replace(" ", "")
    if u == "g/l" or (not u and 30 <= v <= 250):
        v = v / 10
    elif u == "mmol/l":
        v = v * 1.611
    return v if 2 <= v <= 25 else None


def _cell_count(lo: float, hi: float) -> Callable[[float, str], float | None]:
    def norm(v: float, unit: str) -> float | None:
        u = unit.lower()
        if re.search(r"10|k/|thousand", u):
            v = v * 1000
        elif not u and v < 2000:
            v = v * 1000                     # "WBC 18.5", "platelets 45": thousands per mm3
        return v if lo <= v <= hi else None
    return norm


def _plain(lo: float, hi: float) -> Callable[[float, str], float | None]:
    def norm(v: float, unit: str) -> float | None:
        return v if lo <= v <= hi else None
    return norm


def _scaled(factor: float, other: str, lo: float, hi: float,
            bare: Callable[[float], bool] | None = None) -> Callable[[float, str], float | None]:
    """A value in the reference unit, or in the unit ``other`` names (a part of it, compared without case or spaces:
    "mol" for the molar units) times ``factor``; a value without a unit is taken in ``other`` when ``bare(value)``
    holds (its size implies it); None outside ``[lo, hi]`` in the reference unit."""
    def norm(v: float, unit: str) -> float | None:
        u = unit.lower().replace(" ", "")
        if (u and other in u) or (not u and bare is not None and bare(v)):
            v = v * factor
        return v if lo <= v <= hi else None
    return norm


_glucose = _scaled(18.016, "mol", 10, 2500, bare=lambda v: v < 35)              # mmol/L -> mg/dL
_creatinine = _scaled(1 / 88.4, "mol", 0.1, 25, bare=lambda v: v > 25)           # umol/L -> mg/dL
_calcium = _scaled(4.008, "mol", 3, 20, bare=lambda v: v < 4)                   # mmol/L -> mg/dL
_bilirubin = _scaled(1 / 17.1, "mol", 0.05, 60, bare=lambda v: v > 40)          # umol/L -> mg/dL
_albumin = _scaled(0.1, "g/l", 0.5, 7, bare=lambda v: v > 10)                   # g/L -> g/dL
_crp = _scaled(10, "mg/dl", 0, 1000)                                            # mg/dL -> mg/L
_free_t4 = _scaled(1 / 12.87, "mol", 0.05, 10, bare=lambda v: v > 6)            # pmol/L -> ng/dL
_phosphate = _scaled(3.097, "mol", 0.3, 20, bare=lambda v: v < 1.0)             # mmol/L -> mg/dL
_uric_acid = _scaled(1 / 59.48, "mol", 0.5, 30, bare=lambda v: v > 30)          # umol/L -> mg/dL
_cholesterol = _scaled(38.67, "mol", 10, 10_000, bare=lambda v: v < 25)         # mmol/L -> mg/dL
_triglycerides = _scaled(88.57, "mol", 10, 10_000, bare=lambda v: v < 25)       # mmol/L -> mg/dL
_paco2 = _scaled(7.5006, "kpa", 5, 150, bare=lambda v: v < 15)                  # kPa -> mm Hg


def _hba1c(v: float, unit: str) -> float | None:
    if "mol" in unit.lower():
        v = v / 10.929 + 2.15            # IFCC mmol/mol -> NGSP %
    return v if 3 <= v <= 20 else None


def _percent(v: float, unit: str) -> float | None:
    """A share of the white cells: only as a percentage ("Neutrophils 89%"; a bare number may be a count)."""
    return v if unit.strip() == "%" and 0 <= v <= 100 else None


def _magnesium(v: float, unit: str) -> float | None:
    u = unit.lower().replace(" ", "")
    if u == "meq/l":
        v = v * 1.215                    # mEq/L -> mg/dL
    elif u == "mmol/l":
        v = v * 2.431
    elif not u:
        return None                      # a bare value is ambiguous between mg/dL and mEq/L
    return v if 0.2 <= v <= 15 else None


_UL = r"(?:U|IU|units?)\s*/\s*L\b"
_NO_UNIT = r"(?!)"                       # a ratio or a pH: read without a unit
_SECONDS = r"(?:s(?:ec(?:onds?)?)?)\b"
# "sodium bicarbonate 50 mEq", "potassium chloride", "sodium phosphate": a salt given, not a serum value
_NOT_A_SALT = r"(?<!sodium\s)(?<!potassium\s)(?<!calcium\s)(?<!magnesium\s)(?<!ammonium\s)"
_ANALYTES: tuple[_Analyte, ...] = (
    _Analyte("hba1c", r"(?:h(?:a)?emoglobin\s*A1c|(?-i:HbA1c|HbA1C|Hb\s*A1c|A1c|A1C)|glyc(?:ated|osylated)\s+"
                      r"h(?:a)?emoglobin)", r"%|mmol\s*/\s*mol\b", _hba1c),
    _Analyte("hemoglobin", r"(?:h(?:a)?emoglobin(?:\s+concentration)?(?!\s*A1c)|(?-i:Hgb|Hb)(?!\s*A1c))",
             r"g\s*/\s*dL\b|g\s*/\s*L\b|mmol\s*/\s*L\b", _hemoglobin),
    _Analyte("wbc", r"(?:(?:white\s+(?:blood\s+)?(?:cell\s+)?|total\s+)?"
                    r"(?:leu[ck]ocyte|white\s+(?:blood\s+)?cell|white)\s+count|(?-i:WBC|WCC)(?:\s+count)?)",
             _COUNT_UNIT, _cell_count(100, 500_000)),
    _Analyte("platelets", r"(?:platelets?(?:\s+count)?|(?-i:PLT|Plt)s?)", _COUNT_UNIT, _cell_count(1_000, 3_000_000)),
    # "Na 125" is read without a unit: the symbol is unambiguous and its plausible range narrow
    _Analyte("sodium", r"(?:sodium|(?-i:Na)\+?)", _MEQ, _plain(90, 200)),
    _Analyte("potassium", r"(?:potassium|(?<!vitamin\s)(?-i:K)\+?)", _MEQ, _plain(1, 12), short=True),
    _Analyte("glucose", r"(?:(?:blood|serum|plasma|fasting|random|capillary|fingerstick|fasting\s+plasma)\s+"
                        r"(?:glucose|sugars?)|glucose)", _MGDL + r"|mmol\s*/\s*L\b", _glucose),
    _Analyte("creatinine", r"(?:creatinine(?!\s+clearance)|(?-i:Cr|Creat))",
             _MGDL + r"|(?:\u00b5|u|\u03bc|micro)mol\s*/\s*L\b", _creatinine, short=True),
    _Analyte("urea nitrogen", r"(?:(?:blood\s+)?urea\s+nitrogen|(?-i:BUN))", _MGDL, _plain(1, 300)),
    _Analyte("calcium", r"(?:(?:total\s+|serum\s+)?calcium|(?-i:Ca)(?:2\+|\+\+)?)", _MGDL + r"|mmol\s*/\s*L\b",
             _calcium, short=True),
    _Analyte("esr", r"(?:(?:erythrocyte\s+)?sedimentation\s+rate|(?-i:ESR))", r"mm\s*/\s*h(?:r|our)?\b|mm\s+in\s+"
             r"(?:the\s+first\s+|1\s+)?hour\b", _plain(0, 200)),
    _Analyte("alt", r"(?:alanine\s+(?:amino)?transaminase|alanine\s+aminotransferase|(?-i:ALT|SGPT))", _UL,
             _plain(1, 20_000)),
    _Analyte("ast", r"(?:aspartate\s+(?:amino)?transaminase|aspartate\s+aminotransferase|(?-i:AST|SGOT))", _UL,
             _plain(1, 20_000)),
    _Analyte("alp", r"(?:alkaline\s+phosphatase|(?-i:ALP|ALKP))", _UL, _plain(5, 10_000)),
    _Analyte("bilirubin", r"(?:(?:total|direct|indirect|conjugated|unconjugated|serum)\s+)?bilirubin|(?-i:T\.?\s?bili)",
             _MGDL + r"|(?:\u00b5|u|\u03bc|micro)mol\s*/\s*L\b", _bilirubin),
    _Analyte("albumin", r"(?:(?:serum\s+)?albumin(?![\s-]+(?:to|/)[\s-]*creatinine))", r"g\s*/\s*dL\b|g\s*/\s*L\b",
             _albumin),
    _Analyte("mcv", r"(?:mean\s+corpuscular\s+volume|(?-i:MCV))", r"f[lL]\b|\u00b5m3|um3|\u00b5m\u00b3",
             _plain(40, 150)),
    _Analyte("tsh", r"(?:thyroid[\s-]+stimulating\s+hormone|(?-i:TSH)|thyrotropin)",
             r"(?:m|\u00b5|u|\u03bc|micro)I?U\s*/\s*m?L\b", _plain(0.0, 500)),
    _Analyte("free t4", r"(?:free\s+(?:T4|thyroxine)|(?-i:FT4|fT4))", r"ng\s*/\s*dL\b|pmol\s*/\s*L\b", _free_t4),
    _Analyte("ck", r"(?:creatine\s+(?:phospho)?kinase|(?-i:CK|CPK))", _UL, _plain(1, 500_000)),
    _Analyte("ferritin", r"(?:(?:serum\s+)?ferritin)", r"ng\s*/\s*mL\b|(?:\u00b5|u|\u03bc)g\s*/\s*L\b",
             _plain(0.5, 100_000)),
    # the white-cell differential: absolute counts, then percentages ("Neutrophile 70%" misspelt too)
    _Analyte("neutrophil count", r"(?:absolute\s+neutrophil\s+count|neutrophil\s+count|(?-i:ANC))", _COUNT_UNIT,
             _cell_count(0, 200_000)),
    _Analyte("lymphocyte count", r"(?:(?:absolute\s+)?lymphocyte\s+count|(?-i:ALC))", _COUNT_UNIT,
             _cell_count(0, 500_000)),
    _Analyte("eosinophil count", r"(?:(?:absolute\s+)?eosinophil\s+count|(?-i:AEC))", _COUNT_UNIT,
             _cell_count(0, 100_000)),
    _Analyte("neutrophils %", r"(?:(?:segmented\s+)?neutrophil(?:s|es?)?|(?-i:PMNs|Segs))", r"%", _percent),
    _Analyte("eosinophils %", r"(?:eosinophil(?:s|es?)?|(?-i:Eos))", r"%", _percent),
    _Analyte("lymphocytes %", r"(?:lymphocytes?|(?-i:Lymphs))", r"%", _percent),
    _Analyte("lipase", r"(?:(?:serum\s+|pancreatic\s+)?lipase)", _UL, _plain(1, 100_000)),
    _Analyte("amylase", r"(?:(?:serum\s+)?amylase)", _UL, _plain(1, 100_000)),
    _Analyte("ldh", r"(?:lactate\s+dehydrogenase|(?-i:LDH|LD))", _UL, _plain(10, 50_000), short=True),
    _Analyte("crp", r"(?:C[\s-]*reactive\s+protein|(?-i:CRP))", r"mg\s*/\s*L\b|mg\s*/\s*dL\b", _crp),
    _Analyte("lactate", r"(?:(?:serum\s+|blood\s+|venous\s+|arterial\s+)?(?<!ringer's\s)(?<!ringers\s)(?<!ringer\s)"
                        r"lactate(?!\s+dehydrogenase)|lactic\s+acid)",
             r"mmol\s*/\s*L\b|mEq\s*/\s*L\b", _plain(0.1, 40)),
    # coagulation: "Prothrombin time (PT) 12 sec", "aPTT 60 s", "INR 2.8"
    _Analyte("pt", r"(?:prothrombin\s+time(?:\s*\(\s*(?-i:PT)\s*\))?|(?-i:PT))", _SECONDS, _plain(5, 200),
             short=True),
    _Analyte("inr", r"(?:(?-i:INR)|international\s+normali[sz]ed\s+ratio(?:\s*\(\s*(?-i:INR)\s*\))?)", _NO_UNIT,
             _plain(0.5, 20)),
    _Analyte("aptt", r"(?:(?:activated\s+)?partial\s+thromboplastin\s+time(?:\s*\(\s*(?-i:a?PTT)\s*\))?|"
                     r"(?-i:aPTT|APTT|PTT))", _SECONDS, _plain(10, 300), short=True),
    _Analyte("magnesium", r"(?:magnesium|(?-i:Mg)(?:2\+|\+\+)?)", _MGDL + r"|mEq\s*/\s*L\b|mmol\s*/\s*L\b",
             _magnesium, short=True),
    _Analyte("phosphate", _NOT_A_SALT + r"(?:(?:serum\s+|inorganic\s+)?(?:phosphorus|phosphate)|(?-i:PO4|Phos))",
             _MGDL + r"|mmol\s*/\s*L\b", _phosphate, short=True),
    _Analyte("uric acid", r"(?:(?:serum\s+)?uric\s+acid|urate)",
             _MGDL + r"|(?:\u00b5|u|\u03bc)mol\s*/\s*L\b", _uric_acid),
    _Analyte("triglycerides", r"(?:(?:serum\s+|fasting\s+)?triglycerides?|(?-i:TGs?))",
             _MGDL + r"|mmol\s*/\s*L\b", _triglycerides, short=True),
    _Analyte("total cholesterol", r"(?:(?<!HDL\s)(?<!LDL\s)(?<!HDL-)(?<!LDL-)(?:total\s+|serum\s+)?cholesterol)",
             _MGDL + r"|mmol\s*/\s*L\b", _cholesterol),
    _Analyte("ldl cholesterol", r"(?:(?:(?-i:LDL)|low[\s-]+density\s+lipoprotein)(?:[\s-]+cholesterol|-C\b)?)",
             _MGDL + r"|mmol\s*/\s*L\b", _cholesterol),
    _Analyte("chloride", _NOT_A_SALT + r"(?:chloride|(?-i:Cl)(?:-|\u2212)?)", _MEQ, _plain(50, 150), short=True),
    _Analyte("bicarbonate", _NOT_A_SALT + r"(?:(?:serum\s+)?bicarbonate|(?-i:HCO3)(?:-|\u2212)?)", _MEQ,
             _plain(2, 60), short=True),
    # blood gases: a pH outside 6.8-7.8 is not blood (urine, vaginal, gastric)
    _Analyte("ph", r"(?:(?:arterial\s+)?(?-i:pH))", _NO_UNIT, _plain(6.8, 7.8)),
    _Analyte("paco2", r"(?:(?-i:PaCO2|PCO2|pCO2|Pco2)|partial\s+pressure\s+of\s+carbon\s+dioxide)",
             r"mm\s*Hg\b|kPa\b", _paco2, short=True),
)
_LAB_PATTERNS = [
    (a, re.compile(r"(?<![\w-])(?P<name>" + a.name + r")(?![\w-])(?!\s+(?:clearance|tolerance|chloride|bicarbonate|"
                   r"gluconate|citrate|carbonate|supplement))" + _LINK + _VALUE + r"(?:\s*(?P<unit>" + a.unit + "))?",
                   _I))
    for a in _ANALYTES
]
# "ionized calcium", "urine sodium", "urinary glucose", "CSF glucose": not the serum value the ranges are for
_OTHER_FLUID = re.compile(r"(?:ionized|ionised|free|urine|urinary|CSF|cerebrospinal\s+fluid|pleural|ascitic|"
                          r"peritoneal|synovial|stool|sweat)\s+$", _I)


def read_lab_values(text: str) -> list[Reading]:
    """Every numeric laboratory value of the supported analytes in ``text`` (in its reference unit), in text
    order."""
    out: list[Reading] = []
    for a, pat in _LAB_PATTERNS:
        for m in pat.finditer(text):
            if _OTHER_FLUID.search(text[max(0, m.start() - 30):m.start()]):
                continue
            raw, unit = m.group("value"), m.group("unit") or ""
            if a.short and len(m.group("name")) <= 5 and not unit and not re.search(r"[.,]", raw):
                continue                               # "K 4", "Ca 9": a bare symbol needs a unit or a decimal
            v = parse_number(raw)
            if v is None:
                continue
            norm = a.normalise(v, unit)
            if norm is None:
                continue
            out.append(Reading(start=m.start(), end=m.end(), text=text[m.start():m.end()], analyte=a.key,
                               value=round(norm, 3), unit=unit))
    kept: list[Reading] = []
    for r in sorted(out, key=lambda r: (-(r.end - r.start), r.start)):
        if not any(k.start < r.end and r.start < k.end for k in kept):
            kept.append(r)
    return sorted(kept, key=lambda r: r.start)


# Analytes with fixed limits: analyte -> (finding below, low limit, finding above, high limit); the others (sex-,
# age-dependent or inclusive limits) are read in lab_finding.
_LIMITS: dict[str, tuple[str | None, float | None, str | None, float | None]] = {
    "wbc": ("leukopenia", 4_000, "leukocytosis", 11_000),
    "platelets": ("thrombocytopenia", 150_000, "thrombocytosis", 450_000),
    "sodium": ("hyponatremia", 135, "hypernatremia", 145),
    "potassium": ("hypokalemia", 3.5, "hyperkalemia", 5.0),
    "glucose": ("hypoglycemia", 70, "hyperglycemia", 140),
    "urea nitrogen": (None, None, "elevated urea nitrogen", 20),
    "calcium": ("hypocalcemia", 8.5, "hypercalcemia", 10.5),
    "alt": (None, None, "elevated alt", 40),
    "ast": (None, None, "elevated ast", 40),
    "bilirubin": (None, None, "hyperbilirubinemia", 1.2),
    "albumin": ("hypoalbuminemia", 3.5, None, None),
    "mcv": ("decreased mcv", 80, "increased mcv", 100),
    "tsh": ("decreased tsh", 0.4, "elevated tsh", 4.5),
    "free t4": ("decreased free t4", 0.8, "increased free t4", 1.8),
    "ck": (None, None, "elevated ck", 200),
    # adults' differential: neutrophils 40-75 %, eosinophils up to 6 %, lymphocytes 20-45 %; a share this far out is
    # what a vignette's differential points at
    "neutrophil count": ("neutropenia", 1_500, "neutrophilia", 8_000),
    "lymphocyte count": ("lymphopenia", 1_000, "lymphocytosis", 4_000),
    "eosinophil count": (None, None, "eosinophilia", 500),
    "neutrophils %": (None, None, "neutrophilia", 80),
    "eosinophils %": (None, None, "eosinophilia", 6),
    "lymphocytes %": (None, None, "lymphocytosis", 50),
    # the highest upper limits in common use, so that a value called high is high in any laboratory
    "lipase": (None, None, "elevated lipase", 160),
    "amylase": (None, None, "elevated amylase", 125),
    "ldh": (None, None, "elevated ldh", 280),
    "crp": (None, None, "elevated crp", 10),
    "lactate": (None, None, "elevated lactate", 2.0),
    # coagulation, electrolytes, lipids and blood gases: limits a laboratory of any kind would call abnormal
    "pt": (None, None, "prolonged pt", 13.5),
    "inr": (None, None, "prolonged pt", 1.3),
    "aptt": (None, None, "prolonged ptt", 40),
    "magnesium": ("hypomagnesemia", 1.6, "hypermagnesemia", 2.6),
    "phosphate": ("hypophosphatemia", 2.5, "hyperphosphatemia", 4.5),
    "uric acid": (None, None, "hyperuricemia", 7.0),
    "triglycerides": (None, None, "hypertriglyceridemia", 200),
    "total cholesterol": (None, None, "hypercholesterolemia", 240),
    "ldl cholesterol": (None, None, "hypercholesterolemia", 160),
    "chloride": ("hypochloremia", 96, None, None),
    "bicarbonate": ("decreased bicarbonate", 22, "elevated bicarbonate", 29),
    "ph": ("acidosis", 7.35, "alkalosis", 7.45),
    "paco2": ("hypocapnia", 35, "hypercapnia", 45),
}


def lab_finding(reading: Reading, sex: str | None = None, age_years: float | None = None) -> Finding:
    """The finding of one numeric laboratory value (``key=None`` inside the reference range, with the findings the
    value rules out in ``rules_out``)."""
    v = reading.value
    a = reading.analyte
    low_key: str | None = None
    high_key: str | None = None
    low: float | None = None
    high: float | None = None
    if a == "hemoglobin":
        if age_years is not None and age_years < 5:
            low = 11.0
        elif age_years is not None and age_years < 12:
            low = 11.5
        elif age_years is not None and age_years < 15:
            low = 12.0
        else:
            low = 13.0 if sex == "male" else 12.0
        high = 16.0 if sex == "female" else 17.5
        low_key, high_key = "anemia", "increased hemoglobin"
    elif a == "creatinine":
        high_key, high = "elevated creatinine", 1.3 if sex == "male" else 1.1 if sex == "female" else 1.2
    elif a == "hba1c":
        # inclusive limit: 5.7 % is prediabetes
        high_key, high = "elevated hba1c", 5.7 - 1e-9
    elif a == "esr":
        high_key, high = "elevated esr", 30 if sex == "female" else 20
    elif a == "alp":
        # children's bones make alkaline phosphatase: the adult limit says nothing below 18
        if age_years is None or age_years >= 18:
            high_key, high = "elevated alp", 150
    elif a == "ferritin":
        low_key, low = "decreased ferritin", 15
        high_key, high = "increased ferritin", 200 if sex == "female" else 300
    elif a in _LIMITS:
        low_key, low, high_key, high = _LIMITS[a]
    key = low_key if low is not None and v < low else high_key if high is not None and v > high else None
    return finding(reading, key, (low_key if low is not None else None, high_key if high is not None else None))


# ---------------------------------------------------------------------------------------------- results in words

_HIGH = (r"(?:elevated|increased|raised|high|higher|rising|positive|abnormally\s+high|"
         # "lipase is three times the upper limit of normal", "ALT 5x ULN", "above the normal range"
         r"(?:(?:more\s+than|over|about|nearly|almost)\s+)?"
         r"(?:\d+(?:\.\d+)?|two|three|four|five|six|seven|eight|nine|ten|several)[\s-]*(?:times|fold|x|\u00d7)\s+"
         r"(?:the\s+)?(?:upper\s+limit(?:\s+of\s+(?:the\s+)?normal)?(?:\s+range)?|(?-i:ULN)|normal)"
         r"|above\s+(?:the\s+)?(?:upper\s+limit\s+of\s+)?normal(?:\s+range)?)")
_LOW = r"(?:low|lower|decreased|reduced|depressed|diminished|suppressed|falling|abnormally\s+low)"
_POSITIVE = r"(?:positive|reactive|detected|present|elevated|raised|high|increased)"
_PROLONGED = r"(?:prolonged|elevated|increased|raised|high)"
_NORMAL = (r"(?:normal|within\s+(?:the\s+)?normal\s+(?:limits|range)|(?-i:WNL)|negative|unremarkable|undetectable|"
           r"non-?reactive|not\s+(?:elevated|increased|raised|high|low|decreased|reduced|detected|prolonged|"
           r"positive|present))")
_WORDS = {"high": _HIGH, "low": _LOW, "positive": _POSITIVE, "prolonged": _PROLONGED}
_QUALIFIER = r"(?:(?:markedly|mildly|slightly|significantly|very|persistently|strongly|moderately|greatly|severely|" \
             r"also|now|newly|still|both)\s+)"
_SPECIMEN = r"(?:(?:serum|plasma|blood|circulating|cardiac|urine|urinary)\s+)"
_SUFFIX = r"(?:\s+(?:levels?|concentrations?|titers?|titres?|values?|tests?|assays?|results?|counts?|" \
          r"antibod(?:y|ies)))?"
_VERB = r"(?:\s+(?:is|are|was|were|came\s+back|returned|has\s+been|have\s+been|remains?|remained|appears?|" \
        r"appeared|found\s+to\s+be|noted\s+to\s+be|also|both))*"
_NOT_A_RESULT = r"(?!\s+(?:diet|intake|supplements?|foods?|drinks?|replacement|infusion))"


LAB_FORMS = ("high", "low", "positive", "prolonged", "phrase")


def load_phrase_table(path: Path | str = PHRASE_TABLE) -> list[PhraseRule]:
    """The rows of the test-result phrase table (see :func:`.findings.read_phrase_table`)."""
    return read_phrase_table(path, LAB_FORMS)


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern
    negated: bool
    kind: str          # "pre": the result word before the analyte ("elevated ALT"); "post": after ("ALT is elevated")


@lru_cache(maxsize=4)
def _compiled(path: str) -> list[tuple[PhraseRule, list[_Pattern], re.Pattern | None]]:
    """Per rule: its patterns, and (forms other than "phrase") the bare analyte, for coordinated results."""
    out = []
    for rule in load_phrase_table(path):
        if rule.form == "phrase":
            out.append((rule, [_Pattern(re.compile(rule.pattern, _I), False, "phrase")], None))
            continue
        an = r"(?:" + rule.pattern + r")"
        word = _WORDS[rule.form]
        pats = [
            # elevated (serum) troponin (levels)
            (r"(?<![\w-])" + word + r"\s+" + _SPECIMEN + r"{0,2}" + an + _SUFFIX + r"(?![\w-])" + _NOT_A_RESULT, False,
             "pre"),
            # troponin (levels) is (markedly) elevated
            (r"(?<![\w-])" + an + _SUFFIX + _VERB + r"\s+" + _QUALIFIER + r"?" + word + r"\b", False, "post"),
            # normal troponin; troponin is normal / negative / not elevated
            (r"(?<![\w-])(?:normal|negative|undetectable)\s+" + _SPECIMEN + r"?" + an + _SUFFIX + r"(?![\w-])",
             True, "pre"),
            (r"(?<![\w-])" + an + _SUFFIX + _VERB + r"\s+" + _NORMAL + r"\b", True, "post"),
        ]
        if rule.form == "positive":
            pats += [
                (r"\bpositive\s+for\s+" + an + _SUFFIX + r"(?![\w-])", False, "pre"),
                (r"\bnegative\s+for\s+" + an + _SUFFIX + r"(?![\w-])", True, "pre"),
                (r"(?<![\w-])" + an + _SUFFIX + r"\s*\+(?![\w+])", False, "post"),
                (r"(?<![\w-])" + an + _SUFFIX + r"(?:\s+(?:titer|titre))?(?:\s+(?:of|at|is|was))?\s*"
                 r"(?:>\s*)?1\s*:\s*(?P<titre>\d{2,5})\b", False, "post"),
            ]
        bare = re.compile(r"(?<![\w-])" + an + _SUFFIX + r"(?![\w-])", _I)
        out.append((rule, [_Pattern(re.compile(p, _I), neg, kind) for p, neg, kind in pats], bare))
    return out


# between two analytes of one list: "ALT, AST and GGT", "ANA or anti-dsDNA", "PT/PTT", "LE & nitrites"
_LIST_JOIN = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or|as\s+well\s+as)\s+|/|&)\s*(?:the\s+|both\s+)?", _I)


def _coordinated(text: str, stated: list[tuple[Finding, str, str]],
                 bare: list[tuple[Finding, str]]) -> list[Finding]:
    """Analytes of a list that share one result word: "leukocyte esterase and nitrites positive", "ALT and AST are
    elevated", "elevated ALT, AST and bilirubin", "ANA and anti-dsDNA negative". ``stated``: (finding, form, kind)
    of the results read with their own word; ``bare``: (finding, form) of analytes named without one. A bare analyte
    joined by a list word to a stated result of the same form, on the side its result word is not ("post": the
    word follows the list, so the analyte comes before it), gets that result, its negation included; lists chain."""
    def joined(end: int) -> int | None:
        """Where the next analyte of a list starts after one ending at ``end`` (None: no list word follows)."""
        m = _LIST_JOIN.match(text, end)
        return m.end() if m else None

    stated_at = {f.start: (f, form) for f, form, kind in stated if kind == "post"}
    # a "pre" result ("elevated ALT") keyed by where the next analyte of its list would start
    before = {j: (f, form) for f, form, kind in stated if kind == "pre" and (j := joined(f.end)) is not None}
    taken = [(f.start, f.end) for f, _, _ in stated]
    free = [(f, form) for f, form in bare if not any(s < f.end and f.start < e for s, e in taken)]
    out: list[Finding] = []
    # the result word after the list: walk right to left, so "A, B and C are positive" reaches A through B
    for f, form in sorted(free, key=lambda x: -x[0].start):
        j = joined(f.end)
        nxt = stated_at.get(j) if j is not None else None
        if nxt and nxt[1] == form:
            g = replace(f, negated=nxt[0].negated)
            out.append(g)
            stated_at[f.start] = (g, form)
    # the result word before the list: left to right, "elevated A, B and C"
    done = {g.start for g in out}
    for f, form in sorted(free, key=lambda x: x[0].start):
        prev = before.get(f.start)
        if f.start in done or not prev or prev[1] != form:
            continue
        g = replace(f, negated=prev[0].negated)
        out.append(g)
        if (j := joined(f.end)) is not None:
            before[j] = (g, form)
    return out


def find_lab_phrases(text: str, path: Path | str = PHRASE_TABLE) -> list[Finding]:
    """Test results written in words (the phrase table), in text order; overlapping matches resolved (the longest
    wins; one phrase may state two findings, e.g. "sodium is normal": neither hypo- nor hypernatremia). Analytes
    listed together share the list's result word ("ALT and AST are elevated")."""
    found: list[Finding] = []
    stated: list[tuple[Finding, str, str]] = []
    bare: list[tuple[Finding, str]] = []
    for rule, pats, bare_pat in _compiled(str(path)):
        for pat in pats:
            for m in pat.regex.finditer(text):
                titre = m.groupdict().get("titre")
                if titre is not None and int(titre) < 80:
                    continue
                f = Finding(start=m.start(), end=m.end(), text=text[m.start():m.end()],
                            analyte=rule.name, key=rule.concept_id, name=rule.name,
                            concept_ids=(rule.concept_id,), measured=False, negated=pat.negated)
                found.append(f)
                if pat.kind != "phrase":
                    stated.append((f, rule.form, pat.kind))
        if bare_pat is not None:
            for m in bare_pat.finditer(text):
                bare.append((Finding(start=m.start(), end=m.end(), text=text[m.start():m.end()], analyte=rule.name,
                                     key=rule.concept_id, name=rule.name, concept_ids=(rule.concept_id,),
                                     measured=False, negated=False), rule.form))
    if stated and bare:
        kept = resolve_overlaps(found)
        keep = {(f.start, f.end, f.key) for f in kept}
        found += _coordinated(text, [x for x in stated if (x[0].start, x[0].end, x[0].key) in keep], bare)
    return resolve_overlaps(found)


def find_labs(text: str, sex: str | None = None, age_years: float | None = None) -> list[Finding]:
    """Numeric laboratory findings (normal values included, ``key=None``) and results in words, overlaps
    resolved, in text order."""
    numeric = [lab_finding(r, sex, age_years) for r in read_lab_values(text)]
    return resolve_overlaps(numeric + find_lab_phrases(text))


__all__ = [
    "PHRASE_TABLE",
    "PhraseRule",
    "find_lab_phrases",
    "find_labs",
    "lab_finding",
    "load_phrase_table",
    "read_lab_values",
]

"""Findings read from measurements and test results (shared by :mod:`.vitals` and :mod:`.labs`).

A *reading* is a value written in the presentation ("pulse is 120/min", "sodium 125 mEq/L") with its character
span; a *finding* is what a reading means clinically (tachycardia, hyponatremia) together with the knowledge-graph
concept ids that name it. A reading inside its reference range still yields a :class:`Finding`, with ``key`` set to
``None`` and the findings it rules out in ``rules_out`` (:func:`denials` makes them denied findings); its span tells
the extractor not to read the words inside it as findings of their own (the bare words "blood pressure" in "blood
pressure is 120/80 mm Hg" are not a symptom).

The concept ids of every finding are listed in :data:`FINDING_CONCEPTS`, best first: a Symptom Ontology concept
where one exists, else a Human Phenotype Ontology concept; the extractor takes the first id its vocabulary knows.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FindingConcept:
    """The knowledge-graph name of a finding and its concept ids, best first."""

    name: str
    ids: tuple[str, ...]


# Finding key -> concept. Ids were chosen with the knowledge graph's own look-up (symptom concept first, else the
# HPO phenotype); the integration tests check that every id exists under this name.
FINDING_CONCEPTS: dict[str, FindingConcept] = {
    # vital signs
    "fever": FindingConcept("fever", ("SYMP:0000613", "HP:0001945")),
    "low-grade fever": FindingConcept("low-grade fever", ("SYMP:0000879", "HP:0011134")),
    "hypothermia": FindingConcept("hypothermia", ("SYMP:0000302", "HP:0002045")),
    "tachycardia": FindingConcept("tachycardia", ("SYMP:0000529", "HP:0001649")),
    "bradycardia": FindingConcept("bradycardia", ("SYMP:0000231", "HP:0001662")),
    "tachypnea": FindingConcept("tachypnea", ("SYMP:0000603", "HP:0002789")),
    "bradypnea": FindingConcept("bradypnea", ("SYMP:0000429", "HP:0046507")),
    "hypotension": FindingConcept("hypotension", ("SYMP:0000059", "HP:0002615")),
    # A single high reading is a finding, not the disease: "Increased blood pressure" is the HPO parent of
    # "Hypertension" (which the graph equates with the disease hypertension), so the ranker still reaches the
    # diseases annotated with hypertension through it without naming the disease itself.
    "elevated blood pressure": FindingConcept("Increased blood pressure", ("HP:0032263", "SYMP:0020064")),
    "hypoxemia": FindingConcept("hypoxemia", ("SYMP:0000303", "HP:0012418")),
    "obesity": FindingConcept("Obesity", ("HP:0001513", "SYMP:0020018")),
    "underweight": FindingConcept("underweight", ("SYMP:0000475", "HP:0004325")),
    # numeric laboratory results
    "anemia": FindingConcept("anemia", ("SYMP:0000208", "HP:0001903")),
    "increased hemoglobin": FindingConcept("Increased circulating hemoglobin concentration",
                                           ("HP:0001900", "HP:0001901")),
    "leukocytosis": FindingConcept("leukocytosis", ("SYMP:0000634", "HP:0001974")),
    "leukopenia": FindingConcept("Leukopenia", ("HP:0001882", "SYMP:0020060")),
    "thrombocytopenia": FindingConcept("thrombocytopenia", ("SYMP:0000114", "HP:0001873")),
    "thrombocytosis": FindingConcept("Thrombocytosis", ("HP:0001894",)),
    "hyponatremia": FindingConcept("hyponatremia", ("SYMP:0019146", "HP:0002902")),
    "hypernatremia": FindingConcept("Hypernatremia", ("HP:0003228",)),
    "hypokalemia": FindingConcept("Hypokalemia", ("HP:0002900",)),
    "hyperkalemia": FindingConcept("Hyperkalemia", ("HP:0002153",)),
    "hyperglycemia": FindingConcept("Hyperglycemia", ("HP:0003074",)),
    "hypoglycemia": FindingConcept("Hypoglycemia", ("HP:0001943",)),
    "elevated creatinine": FindingConcept("Elevated circulating creatinine concentration", ("HP:0003259",)),
    "elevated urea nitrogen": FindingConcept("Increased blood urea nitrogen", ("HP:0003138",)),
    "hypercalcemia": FindingConcept("Hypercalcemia", ("HP:0003072",)),
    "hypocalcemia": FindingConcept("Hypocalcemia", ("HP:0002901",)),
    "elevated hba1c": FindingConcept("Elevated hemoglobin A1c", ("HP:0040217",)),
    "elevated esr": FindingConcept("Elevated erythrocyte sedimentation rate", ("HP:0003565",)),
    "elevated alt": FindingConcept("Elevated circulating alanine aminotransferase concentration", ("HP:0031964",)),
    "elevated ast": FindingConcept("Elevated circulating aspartate aminotransferase concentration", ("HP:0031956",)),
    "elevated alp": FindingConcept("Elevated circulating alkaline phosphatase concentration", ("HP:0003155",)),
    "hyperbilirubinemia": FindingConcept("Hyperbilirubinemia", ("HP:0002904",)),
    "hypoalbuminemia": FindingConcept("Hypoalbuminemia", ("HP:0003073",)),
    "decreased mcv": FindingConcept("Decreased mean corpuscular volume", ("HP:0025066",)),
    "increased mcv": FindingConcept("Increased mean corpuscular volume", ("HP:0005518",)),
    "decreased tsh": FindingConcept("Decreased thyroid-stimulating hormone level", ("HP:0031098",)),
    "elevated tsh": FindingConcept("Elevated circulating thyroid-stimulating hormone concentration", ("HP:0002925",)),
    "decreased free t4": FindingConcept("Decreased circulating free T4 concentration", ("HP:0033078",)),
    "increased free t4": FindingConcept("Increased circulating free T4 concentration", ("HP:0033077",)),
    "elevated ck": FindingConcept("Elevated circulating creatine kinase concentration", ("HP:0003236",)),
    "decreased ferritin": FindingConcept("Decreased circulating ferritin concentration", ("HP:0012343",)),
    "increased ferritin": FindingConcept("Increased circulating ferritin concentration", ("HP:0003281",)),
    "neutrophilia": FindingConcept("Neutrophilia", ("HP:0011897",)),
    "neutropenia": FindingConcept("Neutropenia", ("HP:0001875",)),
    "lymphopenia": FindingConcept("Lymphopenia", ("HP:0001888",)),
    "eosinophilia": FindingConcept("Eosinophilia", ("HP:0001880",)),
    "lymphocytosis": FindingConcept("Lymphocytosis", ("HP:0100827",)),
    "elevated lipase": FindingConcept("Increased circulating pancreatic triacylglycerol lipase level",
                                      ("HP:0032932",)),
    "elevated amylase": FindingConcept("Hyperamylasemia", ("HP:0410288",)),
    "elevated ldh": FindingConcept("Increased circulating lactate dehydrogenase concentration", ("HP:0025435",)),
    "elevated crp": FindingConcept("Elevated circulating C-reactive protein concentration", ("HP:0011227",)),
    "elevated lactate": FindingConcept("Increased circulating lactate concentration", ("HP:0002151",)),
    "prolonged pt": FindingConcept("Prolonged prothrombin time", ("HP:0008151",)),
    "prolonged ptt": FindingConcept("Prolonged partial thromboplastin time", ("HP:0003645",)),
    "hypomagnesemia": FindingConcept("Hypomagnesemia", ("HP:0002917",)),
    "hypermagnesemia": FindingConcept("Hypermagnesemia", ("HP:0002918",)),
    "hypophosphatemia": FindingConcept("Hypophosphatemia", ("HP:0002148",)),
    "hyperphosphatemia": FindingConcept("Hyperphosphatemia", ("HP:0002905",)),
    "hyperuricemia": FindingConcept("Hyperuricemia", ("HP:0002149",)),
    "hypertriglyceridemia": FindingConcept("Hypertriglyceridemia", ("HP:0002155",)),
    "hypercholesterolemia": FindingConcept("Hypercholesterolemia", ("HP:0003124",)),
    "hypochloremia": FindingConcept("Hypochloremia", ("HP:0003113",)),
    "decreased bicarbonate": FindingConcept("Decreased serum bicarbonate concentration", ("HP:0032066",)),
    "elevated bicarbonate": FindingConcept("Elevated serum bicarbonate concentration", ("HP:0032067",)),
    "acidosis": FindingConcept("Acidosis", ("HP:0001941",)),
    "alkalosis": FindingConcept("Alkalosis", ("HP:0001948",)),
    "hypocapnia": FindingConcept("Hypocapnia", ("HP:0012417",)),
    "hypercapnia": FindingConcept("Hypercapnia", ("HP:0012416",)),
}


@dataclass(frozen=True)
class Reading:
    """A value written in the text: ``analyte`` (``"temperature"``, ``"sodium"``), the value in the analyte's
    reference unit (°C, /min, mm Hg, %, kg/m2, mEq/L, mg/dL, cells/mm3, g/dL), a second value for blood pressure
    (diastolic) and the character span ``[start, end)`` of the whole expression."""

    start: int
    end: int
    text: str
    analyte: str
    value: float
    value2: float | None = None
    unit: str = ""


@dataclass(frozen=True)
class Finding:
    """What a reading or a test-result phrase means, with its character span.

    ``key`` names the finding (``"fever"``); ``None`` marks a reading inside its reference range (no entity of its
    own). ``rules_out``: the findings such an in-range reading excludes (a platelet count of 250,000/mm3 is neither
    thrombocytopenia nor thrombocytosis; :func:`denials` turns them into denied findings). ``measured``: a number
    was read, so a negation cue around it does not apply (a measured pulse of 120/min is a fact); a phrase such as
    "ST elevation" is not measured and keeps the negation of its context ("no ST elevation"). ``negated``: the
    phrase itself says the result is normal or negative ("troponin is normal").
    """

    start: int
    end: int
    text: str
    analyte: str
    key: str | None
    name: str = ""
    concept_ids: tuple[str, ...] = ()
    value: float | None = None
    unit: str = ""
    measured: bool = True
    negated: bool = False
    rules_out: tuple[str, ...] = ()
    in_range: bool = False           # a denial read from an in-range value (see :func:`denials`)

    @property
    def abnormal(self) -> bool:
        return self.key is not None


def finding(reading: Reading, key: str | None, rules_out: tuple[str | None, ...] = ()) -> Finding:
    """The finding of a reading under the key ``key`` (``None``: within the reference range, in which case the
    findings of ``rules_out`` are the ones the value excludes)."""
    concept = FINDING_CONCEPTS.get(key) if key else None
    return Finding(start=reading.start, end=reading.end, text=reading.text, analyte=reading.analyte, key=key,
                   name=concept.name if concept else "", concept_ids=concept.ids if concept else (),
                   value=reading.value, unit=reading.unit,
                   rules_out=() if key else tuple(dict.fromkeys(k for k in rules_out if k)))


def denials(f: Finding) -> list[Finding]:
    """An in-range reading as the findings it excludes, each denied (same span, ``negated`` and ``in_range``):
    "platelets 250,000/mm3" denies thrombocytopenia and thrombocytosis, "temperature 36.8 °C" denies fever. Any
    other finding is returned as it is."""
    if f.key is not None or not f.rules_out:
        return [f]
    out = []
    for k in f.rules_out:
        concept = FINDING_CONCEPTS[k]
        out.append(Finding(start=f.start, end=f.end, text=f.text, analyte=f.analyte, key=k, name=concept.name,
                           concept_ids=concept.ids, value=f.value, unit=f.unit, measured=True, negated=True,
                           in_range=True))
    return out


def resolve_overlaps(findings: Iterable[Finding]) -> list[Finding]:
    """Findings whose spans do not overlap, longest span first (a finding sharing the exact span of a kept one is
    kept too: one phrase can state two findings), in text order."""
    kept: list[Finding] = []
    spans: list[tuple[int, int]] = []
    for f in sorted(findings, key=lambda f: (-(f.end - f.start), f.start)):
        if any(s < f.end and f.start < e and (s, e) != (f.start, f.end) for s, e in spans):
            continue
        if any(k == f for k in kept):
            continue
        kept.append(f)
        spans.append((f.start, f.end))
    return sorted(kept, key=lambda f: (f.start, f.end))


@dataclass(frozen=True)
class PhraseRule:
    """One row of a phrase table (test results in words, everyday wording): the finding's concept id and its name
    in the knowledge graph, how the pattern is read (``form``) and the pattern."""

    concept_id: str
    name: str
    form: str
    pattern: str


def read_phrase_table(path: Path | str, forms: tuple[str, ...]) -> list[PhraseRule]:
    """The rows of a phrase table (tab-separated: concept id, name, form, pattern; ``#`` starts a comment); a row
    with another number of columns, a form not in ``forms`` or a pattern that does not compile is an error naming
    its line."""
    rules = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) != 4 or parts[2] not in forms:
            raise ValueError(f"{path}:{n}: expected 'concept id<TAB>name<TAB>form<TAB>pattern' with form "
                             f"{', '.join(forms[:-1])} or {forms[-1]}")
        try:
            re.compile(parts[3])
        except re.error as exc:
            raise ValueError(f"{path}:{n}: the pattern does not compile: {exc}") from exc
        rules.append(PhraseRule(*parts))
    return rules


def mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with the given character spans blanked out (offsets unchanged), so that e.g. "temp 101 F" is not
    read as a 101-year-old woman."""
    chars = list(text)
    for s, e in spans:
        for i in range(max(0, s), min(len(chars), e)):
            if not chars[i].isspace():
                chars[i] = " "
    return "".join(chars)


def parse_number(raw: str) -> float | None:
    """A number as written: ``"38.9"``, ``"38,9"`` (decimal comma), ``"18,000"`` / ``"18 000"`` (thousands)."""
    s = raw.strip().replace("\u2009", "").replace("\u00a0", "")
    if re.fullmatch(r"\d{1,3}(?:[, ]\d{3})+", s):
        s = re.sub(r"[, ]", "", s)
    elif re.fullmatch(r"\d+,\d{1,2}", s):
        s = s.replace(",", ".")
    try:
        return float(s)
    except ValueError:
        return None


__all__ = [
    "FINDING_CONCEPTS",
    "Finding",
    "FindingConcept",
    "PhraseRule",
    "Reading",
    "denials",
    "finding",
    "mask",
    "parse_number",
    "read_phrase_table",
    "resolve_overlaps",
]

"""Cardinal findings of common diseases: a curated, cited table laid into the knowledge graph as disease -> finding
edges (source ``kg-cardinal``).

Why: the open sources link rare diseases to findings far better than everyday ones. The Disease Ontology's curated
disease -> symptom file has a few thousand edges, HPO annotates Mendelian and rare diseases, HSDN's literature
profiles are long and noisy (hypertension "has" tetraplegia and birth weight) and the sentences mined from MedQuAD
cover only what a consumer page happens to say. A clinician's differential starts from the typical presentation a
textbook gives for each common disease; ``cardinal_findings.yaml`` (next to this module) writes that presentation
down for the diseases a consumer health site, the HSDN literature network or a drug indication marks as common
(the selection rule is in the file's header), each entry naming the textbook it follows.

File format (YAML)::

    version: 1
    references:                       # key -> full citation
      harrison: "Loscalzo J, ... Harrison's Principles of Internal Medicine. 21st ed. McGraw Hill; 2022."
    diseases:
    - disease: {id: DOID:10459, name: common cold}
      reference: harrison             # a key of ``references``
      findings:                       # most characteristic first; KG symptom/phenotype concepts with their KG names
      - {id: SYMP:0000139, name: sneezing}
    - disease: {id: DOID:13378, name: Kawasaki disease}
      reference: nelson
      typical_age: {max: 16}          # optional: the ages (years) the textbook gives; outside them the disease is rare
      course: acute                   # optional: how a first presentation unfolds in time (acute or chronic)
      findings: [...]

``typical_age`` (``min`` and/or ``max``, in years) is written only where the cited textbook says the disease is rare
outside those ages (Kawasaki disease in adults, polymyalgia rheumatica before 50); the ranker's age fit then weighs
a patient outside them down softly (``RankerConfig.age_mismatch``), never to zero.

``course`` says how a first presentation of the disease unfolds in time, as the cited textbook describes it:
``chronic`` when the first complaints have typically lasted weeks to months before the diagnosis (bronchiectasis,
pulmonary tuberculosis, most cancers) and an illness of a few days is an unusual first presentation; ``acute`` when
the illness declares itself within days and resolves, is treated or becomes an emergency within weeks (influenza,
pneumonia, appendicitis), so a complaint unchanged for months argues against it. Diseases with acute attacks on a
chronic background (asthma, gout, migraine) and those with a variable course carry none. The ranker compares it
with how long the presenting complaints have lasted (``RankerConfig.course_mismatch``), softly, never to zero.

Every id is checked against the built graph by ``tests/integration/test_cardinal_findings_kg.py`` (it exists and
carries the name written beside it). The graph builder (:func:`knowledge.kg.build.ingest_cardinal_findings`) adds
one ``has_symptom`` edge per finding with the citation in its ``reference`` attribute, or, when a source already
links the disease to the finding, adds ``kg-cardinal`` to that edge's ``also_sources``: one fact stays one edge.
Clinical review: change a finding in the YAML file, never in code.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

SOURCE = "kg-cardinal"
PATH = Path(__file__).with_name("cardinal_findings.yaml")
LICENSE = "Apache-2.0 (ClinicalRAG; curated after the cited textbooks)"
FORMAT_VERSION = 1
MIN_FINDINGS, MAX_FINDINGS = 2, 10
MAX_AGE = 120
COURSES = ("acute", "chronic")


class CardinalFormatError(ValueError):
    """The cardinal-findings file does not follow the format; the message names the file and the entry."""


@dataclass(frozen=True)
class Ref:
    id: str
    name: str


@dataclass(frozen=True)
class CardinalEntry:
    disease: Ref
    findings: tuple[Ref, ...]
    reference: str      # the full citation
    typical_age: tuple[float | None, float | None] | None = None   # (min, max) years; None: any age
    course: str | None = None      # "acute" or "chronic" first presentation; None: either


def _typical_age(raw: object, where: str) -> tuple[float | None, float | None]:
    if not isinstance(raw, dict) or not raw or set(raw) - {"min", "max"}:
        raise CardinalFormatError(f"{where}: typical_age must be {{min: years, max: years}} (one or both), "
                                  f"not {raw!r}")
    lo, hi = raw.get("min"), raw.get("max")
    for v in (lo, hi):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_AGE):
            raise CardinalFormatError(f"{where}: typical_age bounds are years between 0 and {MAX_AGE}, not {v!r}")
    if lo is not None and hi is not None and lo >= hi:
        raise CardinalFormatError(f"{where}: typical_age min ({lo}) must be below max ({hi})")
    return (None if lo is None else float(lo), None if hi is None else float(hi))


def _ref(raw: object, where: str) -> Ref:
    if not isinstance(raw, dict) or set(raw) != {"id", "name"}:
        raise CardinalFormatError(f"{where}: must be {{id: ..., name: ...}}, not {raw!r}")
    cid, name = str(raw["id"] or "").strip(), " ".join(str(raw["name"] or "").split())
    if ":" not in cid or not name:
        raise CardinalFormatError(f"{where}: needs a prefixed id (DOID:…, SYMP:…, HP:…) and a name, got {raw!r}")
    return Ref(cid, name)


def read_table(path: Path, version: int, error: type[ValueError]) -> tuple[dict, dict, list]:
    """A curated table's YAML (this one, :mod:`.endemic`): the whole mapping, its ``references`` and its
    ``diseases`` rows, or ``error`` naming the file when it cannot be read, has another ``version`` or lacks them."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise error(f"{path.name}: cannot read it: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != version:
        raise error(f"{path.name}: needs 'version: {version}', 'references' and 'diseases'")
    refs, rows = data.get("references"), data.get("diseases")
    if not isinstance(refs, dict) or not refs or not isinstance(rows, list):
        raise error(f"{path.name}: 'references' must map keys to citations and 'diseases' be a list")
    return data, refs, rows


def read(path: Path | str = PATH) -> list[CardinalEntry]:
    """The entries of a cardinal-findings file; :class:`CardinalFormatError` naming the file (and the entry) when it
    cannot be read or breaks the format: unknown keys, a reference key not defined, a disease twice, a finding twice
    in one entry, fewer than 2 or more than 10 findings, a typical age that is not a range of years, a course other
    than acute or chronic."""
    path = Path(path)
    _, refs, rows = read_table(path, FORMAT_VERSION, CardinalFormatError)
    out: list[CardinalEntry] = []
    seen: set[str] = set()
    for i, row in enumerate(rows, start=1):
        where = f"{path.name}, disease entry {i}"
        if not isinstance(row, dict) or not {"disease", "reference", "findings"} <= set(row) \
                or set(row) - {"disease", "reference", "findings", "typical_age", "course"}:
            raise CardinalFormatError(f"{where}: needs 'disease', 'reference' and 'findings' (and optionally "
                                      f"'typical_age' and 'course'), nothing else")
        disease = _ref(row["disease"], where)
        where = f"{path.name}, {disease.id} ({disease.name})"
        if disease.id in seen:
            raise CardinalFormatError(f"{where}: the disease is listed twice")
        seen.add(disease.id)
        citation = refs.get(row["reference"])
        if not isinstance(citation, str) or not citation.strip():
            raise CardinalFormatError(f"{where}: reference {row['reference']!r} is not defined under 'references'")
        if not isinstance(row["findings"], list):
            raise CardinalFormatError(f"{where}: 'findings' must be a list")
        findings = tuple(_ref(f, f"{where}, finding {j}") for j, f in enumerate(row["findings"], start=1))
        if not MIN_FINDINGS <= len(findings) <= MAX_FINDINGS:
            raise CardinalFormatError(f"{where}: {len(findings)} findings; a cardinal presentation has "
                                      f"{MIN_FINDINGS} to {MAX_FINDINGS}")
        if len({f.id for f in findings}) != len(findings):
            raise CardinalFormatError(f"{where}: a finding is listed twice")
        ages = _typical_age(row["typical_age"], where) if "typical_age" in row else None
        course = row.get("course")
        if course is not None and course not in COURSES:
            raise CardinalFormatError(f"{where}: course must be one of {', '.join(COURSES)} (or left out), "
                                      f"not {course!r}")
        out.append(CardinalEntry(disease, findings, " ".join(citation.split()), ages, course))
    return out


__all__ = ["SOURCE", "PATH", "LICENSE", "FORMAT_VERSION", "COURSES", "CardinalFormatError", "Ref", "CardinalEntry",
           "read", "read_table"]

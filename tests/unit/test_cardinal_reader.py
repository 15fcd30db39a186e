"""The cardinal-findings table's reader (knowledge/kg/cardinal.py): the shipped file reads, and every break of the
format is an error naming the file and the entry."""
from __future__ import annotations

import pytest

from knowledge.kg import cardinal
from knowledge.kg.cardinal import CardinalFormatError, read

GOOD = """\
version: 1
references:
  harrison: "Harrison's Principles of Internal Medicine. 21st ed. McGraw Hill; 2022."
diseases:
- disease: {id: DOID:10459, name: common cold}
  reference: harrison
  findings:
  - {id: SYMP:0000139, name: sneezing}
  - {id: SYMP:0000372, name: rhinorrhea}
"""


def _write(tmp_path, text):
    p = tmp_path / "cardinal.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def test_the_shipped_table_reads_and_cites_a_textbook_for_every_entry():
    entries = read()
    assert len(entries) >= 100
    assert len({e.disease.id for e in entries}) == len(entries)
    for e in entries:
        assert e.disease.id.startswith(("DOID:", "MESH:", "ORPHA:", "OMIM:")), e.disease   # DO, or a disease only MeSH or HPO has
        assert 2 <= len(e.findings) <= 10, e.disease
        assert e.reference.endswith(("2019.", "2020.", "2021.", "2022.", "2023.")), e.reference
        assert all(f.id.split(":")[0] in ("SYMP", "HP", "MESH") for f in e.findings), e.disease


def test_a_good_file_gives_entries_with_the_full_citation(tmp_path):
    [e] = read(_write(tmp_path, GOOD))
    assert e.disease == cardinal.Ref("DOID:10459", "common cold")
    assert [f.name for f in e.findings] == ["sneezing", "rhinorrhea"]
    assert e.reference.startswith("Harrison's Principles")


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.replace("version: 1", "version: 2"), "needs 'version: 1'"),
    (lambda t: t.replace("reference: harrison", "reference: cecil"), "reference 'cecil' is not defined"),
    (lambda t: t.replace("  - {id: SYMP:0000372, name: rhinorrhea}\n", ""), "1 findings"),
    (lambda t: t.replace("SYMP:0000372, name: rhinorrhea", "SYMP:0000139, name: sneezing"), "listed twice"),
    (lambda t: t.replace("{id: SYMP:0000139, name: sneezing}", "{id: SYMP:0000139}"), "finding 1"),
    (lambda t: t.replace("  reference: harrison\n", "  reference: harrison\n  note: x\n"), "nothing else"),
    (lambda t: t.replace("  reference: harrison\n", "  reference: harrison\n  typical_age: 10\n"), "typical_age must"),
    (lambda t: t.replace("  reference: harrison\n", "  reference: harrison\n  typical_age: {max: 200}\n"),
     "between 0 and 120"),
    (lambda t: t.replace("  reference: harrison\n", "  reference: harrison\n  typical_age: {min: 50, max: 5}\n"),
     "must be below max"),
    (lambda t: t.replace("  reference: harrison\n", "  reference: harrison\n  typical_age: {from: 5}\n"),
     "typical_age must"),
    (lambda t: t.replace("  reference: harrison\n", "  reference: harrison\n  course: subacute\n"),
     "course must be one of acute, chronic"),
    (lambda t: t + t[t.index("- disease"):], "listed twice"),
    (lambda t: t.replace("name: common cold", "name: ''"), "needs a prefixed id"),
    (lambda t: t.replace("diseases:", "diseases: [\n"), "cannot read"),
])
def test_format_errors_name_the_file_and_the_entry(tmp_path, change, message):
    with pytest.raises(CardinalFormatError, match=message) as err:
        read(_write(tmp_path, change(GOOD)))
    assert "cardinal.yaml" in str(err.value)


def test_a_typical_age_is_read_as_years_and_is_optional(tmp_path):
    [e] = read(_write(tmp_path, GOOD))
    assert e.typical_age is None
    [e] = read(_write(tmp_path, GOOD.replace("  reference: harrison\n",
                                             "  reference: harrison\n  typical_age: {max: 10}\n")))
    assert e.typical_age == (None, 10.0)
    [e] = read(_write(tmp_path, GOOD.replace("  reference: harrison\n",
                                             "  reference: harrison\n  typical_age: {min: 50, max: 120}\n")))
    assert e.typical_age == (50.0, 120.0)


def test_the_shipped_typical_ages_are_few_and_clinically_plausible():
    entries = read()
    ages = {e.disease.name: e.typical_age for e in entries if e.typical_age}
    assert ages["Kawasaki disease"] == (None, 16.0)
    assert ages["polymyalgia rheumatica"] == (50.0, None) and ages["temporal arteritis"] == (50.0, None)
    # written only where the textbook says the disease is rare outside them: a small share of the entries
    assert 10 <= len(ages) <= 0.1 * len(entries)
    assert ages["neonatal abstinence syndrome"][1] <= 1 and ages["antisocial personality disorder"] == (18.0, None)
    assert "influenza" not in ages and "pneumonia" not in ages


def test_a_missing_file_is_a_format_error_naming_it(tmp_path):
    with pytest.raises(CardinalFormatError, match="nothere.yaml: cannot read"):
        read(tmp_path / "nothere.yaml")


def test_a_course_is_read_and_is_optional(tmp_path):
    [e] = read(_write(tmp_path, GOOD))
    assert e.course is None
    [e] = read(_write(tmp_path, GOOD.replace("  reference: harrison\n", "  reference: harrison\n  course: acute\n")))
    assert e.course == "acute"

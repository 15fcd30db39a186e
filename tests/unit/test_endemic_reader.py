"""The endemic-regions table's reader (knowledge/kg/endemic.py): the shipped file reads, and every break of the
format is an error naming the file and the entry."""
from __future__ import annotations

import pytest

from knowledge.kg.endemic import REGIONS, EndemicFormatError, read

GOOD = """\
version: 1
regions: [africa, asia, europe, middle_east, north_america, central_america_caribbean, south_america, oceania]
references:
  cdc_yellow: "CDC Yellow Book 2024: Health Information for International Travel. Oxford University Press; 2023."
diseases:
- disease: {id: DOID:4325, name: Ebola virus disease}
  reference: cdc_yellow
  regions: [africa]
"""


def _write(tmp_path, text):
    p = tmp_path / "endemic.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def test_the_shipped_table_reads():
    entries = read()
    assert len(entries) >= 20
    by_name = {e.disease_name: e for e in entries}
    assert by_name["Ebola virus disease"].regions == ("africa",)
    assert "asia" in by_name["dengue disease"].regions
    for e in entries:
        assert e.disease_id.startswith("DOID:") and e.regions and len(e.regions) < len(REGIONS), e
        assert e.reference.endswith(("2022.", "2023.")), e.reference


def test_a_good_file(tmp_path):
    [e] = read(_write(tmp_path, GOOD))
    assert (e.disease_id, e.disease_name, e.regions) == ("DOID:4325", "Ebola virus disease", ("africa",))
    assert e.reference.startswith("CDC Yellow Book")


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.replace("version: 1", "version: 2"), "needs 'version: 1'"),
    (lambda t: t.replace("regions: [africa, asia,", "regions: [asia, africa,"), "must be exactly"),
    (lambda t: t.replace("reference: cdc_yellow", "reference: nelson"), "'nelson' is not defined"),
    (lambda t: t.replace("  regions: [africa]", "  regions: [atlantis]"), "unknown region"),
    (lambda t: t.replace("  regions: [africa]", "  regions: []"), "non-empty"),
    (lambda t: t.replace("  regions: [africa]", "  regions: [" + ", ".join(REGIONS) + "]"), "every region"),
    (lambda t: t + t[t.index("- disease"):], "listed twice"),
    (lambda t: t.replace("  reference: cdc_yellow\n", "  reference: cdc_yellow\n  note: x\n"), "exactly"),
    (lambda t: t.replace("{id: DOID:4325, name: Ebola virus disease}", "{id: DOID:4325}"), "must be"),
])
def test_format_errors_name_the_file(tmp_path, change, message):
    with pytest.raises(EndemicFormatError, match=message) as err:
        read(_write(tmp_path, change(GOOD)))
    assert "endemic.yaml" in str(err.value)

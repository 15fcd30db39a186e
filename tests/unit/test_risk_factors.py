"""The exposure and risk-factor table (agents/risk_factors.py) without the knowledge graph: the file's format, what
counts as a stated exposure (denials, a relative's habits), and which diseases the exposures point to."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.risk_factors import RiskFactors, RiskFactorsError, load_risk_factor_file, load_risk_factors
from agents.types import Candidate


@pytest.fixture(scope="module")
def table() -> RiskFactors:
    return RiskFactors(load_risk_factors())


def test_the_table_is_well_formed(tmp_path):
    specs = load_risk_factors()
    assert len(specs) >= 15
    assert len({s.id for s in specs}) == len(specs)
    for s in specs:
        assert re.search(r"\b(19|20)\d\d\b", s.citation), f"{s.id}: a citation names its year"
    dup = tmp_path / "dup.yaml"
    dup.write_text("version: 1\nexposures:\n" + "".join(
        f"  - {{id: x, exposure: e, patterns: [a], diseases: [{{id: 'DOID:1', name: n}}], citation: c{i}}}\n"
        for i in range(2)))
    with pytest.raises(RiskFactorsError, match="used twice"):
        load_risk_factors(dup)
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nexposures:\n  - {id: x, exposure: e, patterns: ['(open'], "
                   "diseases: [{id: 'DOID:1', name: n}], citation: c}\n")
    with pytest.raises(RiskFactorsError, match="does not compile"):
        load_risk_factors(bad)


def _examples() -> list[tuple[str, str]]:
    path = Path(__file__).parents[1] / "cases" / "risk_factor_examples.tsv"
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            text, expected = line.split("\t")
            rows.append((text, expected))
    return rows


@pytest.mark.parametrize("text, expected", _examples())
def test_the_example_sentences_of_the_table(table, text, expected):
    got = [m.spec.id for m in table.find(text)]
    if expected == "-":
        assert got == [], got
    else:
        assert expected in got, got


def test_every_exposure_has_an_example():
    have = {e for _, e in _examples() if e != "-"}
    assert {s.id for s in load_risk_factors()} <= have


def test_a_denial_ends_at_but(table):
    got = [m.spec.id for m in table.find("He never smoked but drinks 6 beers a day.")]
    assert got == ["heavy-alcohol-use"], got


def test_the_diseases_of_two_exposures_are_listed_with_both(table):
    found = table.diseases("He smokes a pack a day and uses intravenous drugs.")
    hiv = "DOID:526"
    assert [m.spec.id for m in found[hiv]] == ["injection-drug-use"]
    assert [m.spec.id for m in found["DOID:1324"]] == ["smoking"]               # lung cancer
    assert "DOID:0060000" in found                                              # infective endocarditis
    assert table.diseases("She denies smoking and drug use.") == {}


def test_a_partners_hiv_is_a_sexual_exposure_not_the_patients_weakened_immunity(table):
    for text in ("Her partner is HIV-positive; she has been tested twice.",
                 "His boyfriend has HIV and takes antiretroviral therapy."):
        got = [m.spec.id for m in table.find(text)]
        assert "immunosuppression" not in got, (text, got)
    assert "immunosuppression" in [m.spec.id for m in table.find("He is HIV-positive.")]


def test_a_disease_that_needs_an_exposure_must_be_the_disease_of_one(tmp_path):
    bad = tmp_path / "needs.yaml"
    bad.write_text("version: 1\nexposures:\n  - {id: x, exposure: e, patterns: [a], "
                   "diseases: [{id: 'DOID:1', name: n}], citation: c}\n"
                   "needs_exposure:\n  - {id: 'DOID:2', name: m}\n")
    with pytest.raises(RiskFactorsError, match="the disease of no exposure"):
        load_risk_factors(bad)


def _needing_table() -> RiskFactors:
    data = load_risk_factor_file()
    return RiskFactors(data.exposures, None, data.needs_exposure)


def test_a_disease_that_needs_an_exposure_is_moved_down_without_it_and_kept():
    table = _needing_table()
    q_fever, flu = "DOID:11100", "DOID:8469"
    cands = [Candidate(concept_id=q_fever, name="Q fever", score=1.0),
             Candidate(concept_id=flu, name="influenza", score=0.5)]
    text = "Fever, a dry cough and a headache for 5 days."
    out = table.demote_unexposed(cands, table.diseases(text), 0.25)
    assert [c.concept_id for c in out] == [flu, q_fever]
    assert out[1].score == 0.25 and "seldom without farm animals" in out[1].demoted
    assert "none in the history" in out[1].demoted and out[0].demoted == ""
    # the exposure stated: nothing moves
    text = "Fever, a dry cough and a headache for 5 days. He works on a sheep farm and helped deliver lambs."
    out = table.demote_unexposed(cands, table.diseases(text), 0.25)
    assert [(c.concept_id, c.score, c.demoted) for c in out] == [(q_fever, 1.0, ""), (flu, 0.5, "")]
    # factor 1: marked only, order kept
    out = table.demote_unexposed(cands, {}, 1.0)
    assert [c.concept_id for c in out] == [q_fever, flu] and out[0].demoted


def test_long_covid_needs_a_past_covid():
    table = _needing_table()
    long_covid = "DOID:0080848"
    assert table.unexposed(long_covid, table.diseases("Fatigue and brain fog for three months.")) is not None
    assert table.unexposed(long_covid, table.diseases(
        "Fatigue and brain fog since she had COVID-19 in the spring.")) is None
    assert table.unexposed("DOID:8469", {}) is None          # influenza needs no exposure


@pytest.mark.parametrize("disease, bare, exposed", [
    ("DOID:1395", "Fever, an itchy rash and a cough for a week.",                       # schistosomiasis
     "Fever, an itchy rash and a cough for a week; he swam in Lake Malawi a month ago."),
    ("DOID:4953", "Fever, then weakness of one leg that he cannot lift.",               # poliomyelitis
     "Fever, then weakness of one leg that he cannot lift. He is unvaccinated."),
    ("MESH:D013471", "Red, painful, peeling skin on the shoulders.",                     # sunburn
     "Red, painful, peeling skin on the shoulders after a day at the beach without sunscreen."),
    ("DOID:840", "Cough, fever and breathlessness after work.",                           # cork-handlers' disease
     "Cough, fever and breathlessness after work in a cork factory."),
])
def test_a_disease_of_an_exposure_the_history_does_not_state_is_marked(disease, bare, exposed):
    """The diseases seldom named without their exposure: marked without it, spared with it (and a denial of the
    exposure spares nothing)."""
    table = _needing_table()
    assert table.unexposed(disease, table.diseases(bare)) is not None
    assert table.unexposed(disease, table.diseases(exposed)) is None


def test_a_stated_vaccination_is_no_exposure():
    table = _needing_table()
    assert table.unexposed("DOID:11405", table.diseases("Sore throat and a grey membrane on the tonsils. Her "
                                                        "vaccinations are up to date.")) is not None

"""The table of findings that argue against a diagnosis (agents/against.py) without the knowledge graph: the file's
format, the example sentences and look-alikes of its text patterns, denials, and what demoting does to a ranked list
(marks, multiplies, re-sorts, never drops)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.against import AgainstFindings, AgainstFindingsError, load_against
from agents.types import Candidate, Entity, Extraction


@pytest.fixture(scope="module")
def table() -> AgainstFindings:
    return AgainstFindings(load_against())


def test_the_table_is_well_formed(tmp_path):
    specs = load_against()
    assert len(specs) >= 5
    assert len({s.id for s in specs}) == len(specs)
    for s in specs:
        assert re.search(r"\b(19|20)\d\d\b", s.citation), f"{s.id}: a citation names its year"
        assert s.findings or s.patterns or s.always
    row = "  - {{id: {id}, finding: f, {what}, diseases: [{{id: 'DOID:1', name: n}}], reason: r, citation: c}}\n"
    dup = tmp_path / "dup.yaml"
    dup.write_text("version: 1\nrules:\n" + row.format(id="x", what="patterns: [a]") * 2)
    with pytest.raises(AgainstFindingsError, match="used twice"):
        load_against(dup)
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nrules:\n" + row.format(id="x", what="patterns: ['(open']"))
    with pytest.raises(AgainstFindingsError, match="does not compile"):
        load_against(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("version: 1\nrules:\n" + row.format(id="x", what="findings: []"))
    with pytest.raises(AgainstFindingsError, match="give findings, patterns or both"):
        load_against(empty)
    always = tmp_path / "always.yaml"
    always.write_text("version: 1\nrules:\n" + row.format(id="x", what="always: true"))
    with pytest.raises(AgainstFindingsError, match="needs unless findings or patterns"):
        load_against(always)
    always.write_text("version: 1\nrules:\n" + row.format(id="x", what="always: true, patterns: [a]"))
    with pytest.raises(AgainstFindingsError, match="takes no findings or patterns"):
        load_against(always)


def _examples() -> list[tuple[str, str]]:
    path = Path(__file__).parents[1] / "cases" / "against_examples.tsv"
    return [tuple(line.split("\t")) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize(("text", "expected"), _examples())
def test_the_example_sentences_of_the_patterns(table, text, expected):
    fired = [h.spec.id for h in table.fired(None, text) if not h.spec.always]    # those fire on any text
    assert fired == ([] if expected == "-" else [expected]), text


def test_every_pattern_rule_has_an_example():
    named = {rid for _, rid in _examples()}
    assert {s.id for s in load_against() if s.patterns} <= named


FEVER = Entity(text="fever", category="symptom", concept_id="HP:0001945")


def _ranked(*ids_scores):
    return [Candidate(concept_id=cid, name=cid, score=s) for cid, s in ids_scores]


def test_a_present_finding_demotes_marks_and_never_drops(table):
    ranked = _ranked(("DOID:4481", 0.5), ("DOID:10459", 0.3), ("DOID:8469", 0.2))   # allergic rhinitis, cold, flu
    out = table.demote(ranked, Extraction(entities=[FEVER]), "sneezing and a fever", 0.25)
    assert [c.concept_id for c in out] == ["DOID:10459", "DOID:8469", "DOID:4481"]
    rhinitis = out[-1]
    assert rhinitis.score == pytest.approx(0.125)
    assert rhinitis.demoted.startswith('against: a fever ("fever"): allergic rhinitis does not cause a fever')
    assert all(not c.demoted for c in out[:2])
    marked = table.demote(ranked, Extraction(entities=[FEVER]), "", 1.0)   # factor 1: marked, order and score kept
    assert [(c.concept_id, c.score) for c in marked] == [(c.concept_id, c.score) for c in ranked]
    assert marked[0].demoted


@pytest.mark.parametrize("flag", ["negated", "historical", "family", "hypothetical", "uncertain"])
def test_a_denied_past_or_hedged_finding_argues_against_nothing(table, flag):
    fever = FEVER.model_copy(update={flag: True})
    ranked = _ranked(("DOID:4481", 0.5), ("DOID:10459", 0.3))
    assert table.demote(ranked, Extraction(entities=[fever]), "", 0.25) == ranked


def test_two_rules_weigh_twice_and_no_more(table):
    # irritable bowel syndrome: fever, weight loss, blood in the stool are one rule (its alarm features)
    weight_loss = Entity(text="lost 5 kg", category="symptom", concept_id="HP:0001824")
    ranked = _ranked(("DOID:9778", 0.8), ("DOID:8536", 0.6), ("DOID:0000000", 0.1))
    text = "fever, weight loss and an itchy, painful rash all over her body"     # painful: not the zoster-pain rule
    out = table.demote(ranked, Extraction(entities=[FEVER, weight_loss]), text, 0.5)
    by_id = {c.concept_id: c for c in out}
    assert by_id["DOID:9778"].score == pytest.approx(0.4)        # one rule, fired by two of its findings
    assert by_id["DOID:8536"].score == pytest.approx(0.3)        # the rash pattern
    assert "all over her body" in by_id["DOID:8536"].demoted


def test_a_rule_the_definition_makes_counts_twice(table):
    # a transient ischaemic attack is a deficit that resolves: its rule counts as two, so a persisting deficit puts
    # the stroke first even when the commonness re-ranking put the attack far ahead
    ranked = _ranked(("DOID:224", 0.75), ("DOID:0051062", 0.04))
    text = "Weakness of the right arm and slurred speech for three hours; it has not improved."
    out = table.demote(ranked, None, text, 0.1)
    assert [c.concept_id for c in out] == ["DOID:0051062", "DOID:224"]
    assert out[1].score == pytest.approx(0.0075)
    assert table.demote(ranked, None, "Slurred speech for 20 minutes, now resolved.", 0.1) == ranked


def test_an_unless_finding_stops_the_rule_and_kinds_can_be_left_out(table):
    constipation = Entity(text="constipation", category="symptom", concept_id="HP:0002019")
    diarrhoea = Entity(text="diarrhoea", category="symptom", concept_id="HP:0002014")
    ranked = _ranked(("DOID:2326", 0.6), ("DOID:13258", 0.4))   # gastroenteritis, typhoid fever
    out = table.demote(ranked, Extraction(entities=[constipation]), "", 0.25)
    assert [c.concept_id for c in out] == ["DOID:13258", "DOID:2326"]
    assert "without diarrhoea" in out[1].demoted
    assert table.demote(ranked, Extraction(entities=[constipation, diarrhoea]), "", 0.25) == ranked
    denied = diarrhoea.model_copy(update={"negated": True})   # "no diarrhoea" does not stop it
    assert table.demote(ranked, Extraction(entities=[constipation, denied]), "", 0.25)[0].concept_id == "DOID:13258"


def test_a_rash_puts_an_exanthem_before_a_cold(table):
    """Coryza with a rash is an exanthem's start: the cold goes below chickenpox; a denied rash leaves it."""
    rash = Entity(text="itchy blisters", category="symptom", concept_id="HP:0000988")
    ranked = _ranked(("DOID:10459", 0.6), ("DOID:8659", 0.4))   # common cold, chickenpox
    out = table.demote(ranked, Extraction(entities=[rash]), "", 0.25)
    assert [c.concept_id for c in out] == ["DOID:8659", "DOID:10459"]
    assert "rash" in out[1].demoted
    denied = rash.model_copy(update={"negated": True})
    out = table.demote(ranked, Extraction(entities=[denied]), "", 0.25)
    assert out[0].concept_id == "DOID:10459" and not out[0].demoted


CANCER_RULE = "cancer-without-warning-features"


@pytest.mark.parametrize(("text", "fires"), [
    ("I have a cough and a sore throat.", True),
    ("A 30-year-old with heartburn after meals.", True),
    ("I found a lump in my breast.", False),
    ("CT shows a 3-cm mass in the pancreas.", False),
    ("A nodule on the chest X-ray.", False),
    ("Cough for the past three months.", False),
    ("Back pain over 6 months.", False),
    ("She has a history of breast cancer.", False),
    ("He was treated for Hodgkin lymphoma as a child.", False),
    ("A smoker of 40 pack-years with a cough.", False),
    ("A mole on her back has grown darker.", False),
    ("Raised PSA on screening.", False),
    ("No lump, no mass.", True),                              # denied
    ("A non-smoker with a cough.", True),
    ("A feeling of a lump in my throat.", True),              # globus: a sensation, not a lump
    ("Sore throat for three days.", True),                    # days, not months
])
def test_a_cancer_without_warning_features(table, text, fires):
    assert (CANCER_RULE in {h.spec.id for h in table.fired(None, text)}) is fires, text


def test_a_stated_warning_finding_stops_the_cancer_rule(table):
    weight_loss = Entity(text="lost 5 kg", category="symptom", concept_id="HP:0001824")
    assert CANCER_RULE in {h.spec.id for h in table.fired(Extraction(entities=[FEVER]), "fever")}
    assert CANCER_RULE not in {h.spec.id for h in table.fired(Extraction(entities=[FEVER, weight_loss]), "fever")}
    denied = weight_loss.model_copy(update={"negated": True})
    assert CANCER_RULE in {h.spec.id for h in table.fired(Extraction(entities=[FEVER, denied]), "fever")}


@pytest.mark.parametrize(("rule", "text", "fires"), [
    ("eclampsia-without-seizure", "32 weeks pregnant with headache, blood pressure 168/112 and protein in the urine.",
     True),
    ("eclampsia-without-seizure", "32 weeks pregnant, blood pressure 168/112; she had a generalised seizure.", False),
    ("eclampsia-without-seizure", "Convulsions at 34 weeks of pregnancy.", False),
    ("eclampsia-without-seizure", "No seizures; blood pressure 170/110 at 36 weeks.", True),
    ("exanthem-without-rash", "Fever, a runny nose and red eyes for three days.", True),
    ("exanthem-without-rash", "Fever and a rash that started behind the ears and spread down.", False),
    ("exanthem-without-rash", "Itchy blisters on the trunk and a mild fever.", False),
    ("exanthem-without-rash", "Bright red cheeks like a slapped cheek in a 6-year-old.", False),
    ("exanthem-without-rash", "Fever and sores in the mouth and on the hands.", False),
    ("exanthem-without-rash", "Fever and a headache; no rash.", True),                     # denied
    ("exanthem-without-rash", "Burning on passing urine and lower abdominal pain.", True),  # shingles too
    ("kawasaki-without-fever", "Red eyes, cracked lips and swollen hands in a 3-year-old.", True),
    ("kawasaki-without-fever", "Five days of high fever, red eyes and cracked lips in a 3-year-old.", False),
    ("kawasaki-without-fever", "A temperature of 39.5 for six days and a strawberry tongue.", False),
    ("behcet-without-oral-ulcers", "Painful red eyes and genital sores.", True),
    ("behcet-without-oral-ulcers", "Recurrent mouth ulcers, genital sores and a red eye.", False),
    ("behcet-without-oral-ulcers", "Aphthous ulcers every month and leg nodules.", False),
    ("zoster-without-pain", "An itchy red rash with small blisters on the chest and a mild fever.", True),
    ("zoster-without-pain", "A painful band of blisters on the left side of the chest.", False),
    ("zoster-without-pain", "Three days of burning and tingling over the ribs, now a rash there.", False),
    ("zoster-without-pain", "A rash on the chest; it does not hurt.", True),                 # denied
    ("coronary-without-cardiac-symptom", "Heartburn, vomiting after meals and a pain in the stomach.", True),
    ("coronary-without-cardiac-symptom", "A tight pressure in the chest when he climbs the stairs.", False),
    ("coronary-without-cardiac-symptom", "Short of breath on exertion and tired for months.", False),
    ("coronary-without-cardiac-symptom", "Nausea and a cold sweat, with pain in the left arm and jaw.", False),
    ("anaemia-disease-without-anaemia", "Bruises and petechiae in a well 7-year-old; platelets 12,000.", True),
    ("anaemia-disease-without-anaemia", "Confusion, fever, low platelets and schistocytes on the smear.", False),
    ("anaemia-disease-without-anaemia", "Petechiae, a haemoglobin of 7.9 g/dL and a raised LDH.", False),
    ("tia-without-resolution", "Weakness of the left arm and a drooping face since this morning.", True),
    ("tia-without-resolution", "Slurred speech for three hours; it has not improved.", True),          # denied
    ("tia-without-resolution", "Her right hand went numb for 20 minutes this morning.", False),
    ("tia-without-resolution", "Sudden loss of speech that resolved completely within an hour.", False),
    ("tia-without-resolution", "Two episodes of losing vision in one eye like a curtain coming down.", False),
])
def test_a_disease_named_by_a_finding_needs_it(table, rule, text, fires):
    """Rules that fire unless the finding the disease's case definition or criteria require is stated: eclampsia's
    seizure, the exanthems' rash, Kawasaki disease's fever, Behcet's disease's mouth ulcers, shingles' pain, coronary
    artery disease's chest, breathing, heart or exertional symptom, a transient ischaemic attack's resolution, a
    thrombotic thrombocytopenic purpura's haemolysis."""
    assert (rule in {h.spec.id for h in table.fired(None, text)}) is fires, text

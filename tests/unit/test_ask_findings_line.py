"""The `ask` face's findings line says how each phrase was read when its words do not name the finding
(clinicalrag/commands/ask.py)."""
from __future__ import annotations

import pytest

from clinicalrag.commands.ask import finding_label


@pytest.mark.parametrize("entity, label", [
    ({"text": "back", "concept_name": "backache", "category": "symptom"}, "back (backache)"),
    ({"text": "HR 110", "concept_name": "tachycardia", "category": "sign"}, "HR 110 (tachycardia)"),
    ({"text": "affect is flat", "concept_name": "Diminishment of emotional expression", "category": "phenotype"},
     "affect is flat (Diminishment of emotional expression)"),
    ({"text": "chest pain", "concept_name": "chest pain", "category": "symptom"}, "chest pain"),
    ({"text": "Chest-pain", "concept_name": "chest pain", "category": "symptom"}, "Chest-pain"),
    ({"text": "severe epigastric pain", "concept_name": "Epigastric pain", "category": "phenotype"},
     "severe epigastric pain"),
    ({"text": "58-year-old", "concept_name": "58 years", "category": "demographic"}, "58-year-old"),
    ({"text": "wheeze", "concept_name": None, "category": "symptom"}, "wheeze"),
])
def test_a_finding_is_shown_with_what_it_was_read_as_when_its_words_differ(entity, label):
    assert finding_label(entity) == label


def test_the_findings_line_leaves_age_and_sex_to_its_end():
    from clinicalrag.commands.ask import render

    r = {"status": "verified", "answer": "", "latency_ms": 12.0, "run_id": "r1", "extraction": {
        "age_years": 62, "sex": "male", "entities": [
            {"text": "62-year-old", "category": "demographic", "concept_name": "62 years"},
            {"text": "back", "category": "symptom", "concept_name": "backache"},
            {"text": "fever", "category": "symptom", "concept_name": "fever", "negated": True}]}}
    [line] = [x for x in render(r).splitlines() if x.startswith("Findings:")]
    assert line == "Findings: back (backache) | absent: fever | 62 y, male"


def test_the_findings_a_normal_value_denies_are_shown_once_with_both_names():
    from clinicalrag.commands.ask import render

    r = {"status": "verified", "answer": "", "latency_ms": 12.0, "run_id": "r1", "extraction": {"entities": [
        {"text": "aPTT 62 s", "start": 40, "end": 49, "category": "symptom",
         "concept_name": "Prolonged partial thromboplastin time"},
        {"text": "platelets 250,000/mm3", "start": 10, "end": 31, "category": "symptom",
         "concept_name": "thrombocytopenia", "negated": True, "measured": True},
        {"text": "platelets 250,000/mm3", "start": 10, "end": 31, "category": "symptom",
         "concept_name": "Thrombocytosis", "negated": True, "measured": True},
        {"text": "fever", "start": 0, "end": 5, "category": "symptom", "concept_name": "fever", "negated": True}]}}
    [line] = [x for x in render(r).splitlines() if x.startswith("Findings:")]
    assert line == ("Findings: aPTT 62 s (Prolonged partial thromboplastin time) | absent: platelets 250,000/mm3 "
                    "(thrombocytopenia, Thrombocytosis), fever")


@pytest.mark.parametrize("course, tail", [("acute", "62 y, male, complaints of 2 weeks or less"),
                                          ("chronic", "62 y, male, complaints of 8 weeks or more"), (None, "62 y, male")])
def test_the_findings_line_says_how_long_the_complaints_have_lasted(course, tail):
    from clinicalrag.commands.ask import render

    r = {"status": "verified", "answer": "", "latency_ms": 12.0, "run_id": "r1", "extraction": {
        "age_years": 62, "sex": "male", "course": course, "entities": [
            {"text": "cough", "category": "symptom", "concept_name": "cough"}]}}
    [line] = [x for x in render(r).splitlines() if x.startswith("Findings:")]
    assert line == f"Findings: cough | {tail}"


def test_the_models_own_answer_and_its_alternatives_are_shown_apart():
    from clinicalrag.commands.ask import render

    r = {"status": "verified", "answer": "", "latency_ms": 12.0, "run_id": "r1", "proposals": [
        {"rank": 1, "name": "Influenza", "concept_id": "DOID:8469", "concept_name": "influenza"},
        {"rank": 2, "name": "Mycoplasma pneumonia", "concept_id": "DOID:0050523",
         "concept_name": "Mycoplasma pneumoniae pneumonia", "alternative": True},
        {"rank": 3, "name": "Lung thing", "concept_id": None, "alternative": True}]}
    lines = render(r).splitlines()
    assert "The language model proposed: 1. Influenza" in lines
    assert ("It would also consider: 2. Mycoplasma pneumonia (= Mycoplasma pneumoniae pneumonia); "
            "3. Lung thing (not in the knowledge graph)") in lines

"""Benchmark datasets on the real files (read through the data layer from the mirror) and the label table on the
real knowledge graph."""
from __future__ import annotations

import re
from collections import Counter

import pytest
from support.data import mirror_file

from clinicalrag.bench import ddxplus
from clinicalrag.bench.datasets import (
    MEDQA_DIAGNOSIS,
    ddxplus_conditions_in_kg,
    label_aliases,
    load_dataset,
    question_sentence,
    source_path,
)
from clinicalrag.bench.matching import KIND_OF

RAW_CODES = re.compile(r"\b[EV]_\d+")
SECOND_PERSON = re.compile(r"\byou(?:r|rs|rself)?\b", re.IGNORECASE)

# labels the KG has no disease concept for (matched by name); see clinicalrag/bench/labels.yaml
UNLINKED = {
    "ddxplus": {"Larygospasm", "Localized edema", "Scombroid food poisoning"},
    "symptom2disease": {"Jaundice"},
}


@pytest.fixture(scope="module")
def ddx():
    mirror_file("ddxplus-test")
    mirror_file("ddxplus-evidences")
    return load_dataset("ddxplus")


@pytest.fixture(scope="module")
def s2d():
    mirror_file("symptom2disease")
    return load_dataset("symptom2disease")


@pytest.fixture(scope="module")
def medqa():
    mirror_file("medqa")
    return load_dataset("medqa-mcq"), load_dataset("medqa-free")


# ------------------------------------------------------------------------------------------------- DDXPlus
def test_ddxplus_size_labels_and_provenance(ddx):
    assert len(ddx.cases) == ddx.total == 2611 and not ddx.sampled
    assert len(ddx.labels) == 49 and ddx.kind == "free"
    assert ddx.source_ids == ["ddxplus-test", "ddxplus-evidences"]
    assert set(ddx.sha256) == {"release_test_patients_mini_version.txt", "release_evidences.json"}
    assert len({c.id for c in ddx.cases}) == 2611 and ddx.cases[0].id == "ddxplus-0"


def test_ddxplus_known_rows_read_as_presentations(ddx):
    first = ddx.cases[0]
    assert first.label == "Pneumonia" and first.meta == {"age": 8, "sex": "M", "initial_evidence": "E_66", "row": 0}
    assert first.differential[:3] == ("Pneumonia", "Influenza", "Bronchitis")
    assert first.text.startswith("An 8-year-old boy. Chief complaint: significant shortness of breath or "
                                 "difficulty breathing.")
    for phrase in ["Pain (stabbing, sharp) in the right and left side of the chest",
                   "intensity 2/10", "Fever (either felt or measured with a thermometer).", "Chills or shivers.",
                   "Skin lesions (pink, peeling)", "\nHistory: ", "smokes cigarettes", "history of pneumonia"]:
        assert phrase in first.text
    second = ddx.cases[1]
    assert second.label == "Anaphylaxis"
    assert second.text.startswith("A 31-year-old woman. Chief complaint: diarrhea or an increase in stool "
                                  "frequency.")
    assert "History: known severe food allergy" in second.text


def test_ddxplus_presentations_have_no_codes_or_questions(ddx):
    for c in ddx.cases:
        assert not RAW_CODES.search(c.text), c.id
        assert not SECOND_PERSON.search(c.text), c.id
        assert "?" not in c.text and "nowhere" not in c.text and "  " not in c.text, c.id
        assert re.match(r"^An? (?:\d+-year-old (?:man|woman|boy|girl)|baby (?:boy|girl) under 1 year old)\. "
                        r"Chief complaint: ", c.text), c.id
        assert c.differential and c.label in ddx.labels


def test_every_evidence_has_a_clean_statement():
    table = ddxplus.read_evidences(source_path("ddxplus-evidences"))
    assert len(table) == 223
    for code, ev in table.items():
        if ev.parent:                 # follow-ups are folded into their parent's phrase (pain, skin, swelling)
            assert ev.parent in (ddxplus.PAIN, ddxplus.SKIN, ddxplus.SWELLING), code
            continue
        s = ddxplus.statement(ev)
        assert s and "?" not in s and not SECOND_PERSON.search(s), (code, s)
        assert not re.match(r"(?i)^(?:do|does|have|has|are|is|did|were|how|what|where)\b", s), (code, s)


def test_ddxplus_sample_is_stratified_and_reproducible(ddx):
    a = load_dataset("ddxplus", limit=98, seed=1)
    assert a.sampled and a.total == 2611 and len(a.cases) == 98 and len(a.labels) == 49
    assert set(Counter(c.label for c in a.cases)) == set(ddx.labels)          # every condition is there
    assert load_dataset("ddxplus", limit=98, seed=1).case_ids_sha256 == a.case_ids_sha256
    assert load_dataset("ddxplus", limit=98, seed=2).case_ids_sha256 != a.case_ids_sha256


# -------------------------------------------------------------------------------------------- Symptom2Disease
def test_symptom2disease(s2d):
    assert len(s2d.cases) == 1200 and len(s2d.labels) == 24 and s2d.kind == "free"
    assert len({c.id for c in s2d.cases}) == 1200 and s2d.cases[0].id == "s2d-0"
    assert set(Counter(c.label for c in s2d.cases).values()) == {50}
    assert list(s2d.sha256) == ["Symptom2Disease.csv"] and s2d.source_ids == ["symptom2disease"]


# -------------------------------------------------------------------------------------------------- MedQA
def test_medqa_diagnosis_subset(medqa):
    mcq, free = medqa
    assert 100 <= len(mcq.cases) <= 160 and mcq.total == len(mcq.cases)
    assert [c.id for c in mcq.cases] == [c.id for c in free.cases]
    assert mcq.kind == "mcq" and free.kind == "free"
    for m, f in zip(mcq.cases, free.cases, strict=True):
        assert MEDQA_DIAGNOSIS.match(question_sentence(m.text)), m.id
        assert "diagnos" in question_sentence(m.text).lower()
        assert set(m.options) == {"A", "B", "C", "D"} and m.label == m.options[m.answer]
        assert f.text == m.text and f.label == m.label and f.options is None and f.answer is None
        assert not re.search(r"confirm|treat|associated|next step", question_sentence(m.text), re.IGNORECASE)


def test_medqa_stems_are_kept_whole(medqa):
    mcq, _ = medqa
    case = next(c for c in mcq.cases if c.id == "medqa-35")
    assert case.text.endswith("Physical examination is notable for pitting of his nails. Which of the following "
                              "is the most likely diagnosis?")
    assert case.label == "Psoriatic arthritis" and case.answer == "A"


# ---------------------------------------------------------------------------------------- hand-written cases
def test_hand_written_cases():
    ds = load_dataset("cases")
    assert len(ds.cases) == 25 and ds.kind == "free" and set(ds.sha256) == {"clinical_cases.yaml"}
    for c in ds.cases:
        assert c.id.startswith("cases-") and c.text and c.label
        assert c.meta["gold_concepts"] and all(d.startswith("DOID:") for d in c.meta["gold_concepts"])
    flu = next(c for c in ds.cases if c.id == "cases-influenza")
    assert flu.label == "influenza" and flu.meta["gold_concepts"][0] == "DOID:8469"


# ---------------------------------------------------------------------------------------------- labels & KG
@pytest.fixture(scope="module")
def kg():
    from knowledge.kg import load_or_build

    return load_or_build()


@pytest.mark.parametrize("name", ["ddxplus", "symptom2disease"])
def test_every_label_has_kg_disease_concepts(kg, name, request):
    ds = request.getfixturevalue("ddx" if name == "ddxplus" else "s2d")
    aliases = label_aliases(name)
    assert set(aliases) == set(ds.labels)
    for label, ids in aliases.items():
        for cid in ids:
            cid = cid.removesuffix(KIND_OF)   # a class label's id: the class itself must be a disease concept
            concept = kg.concept(cid)
            assert concept is not None and concept.category == "disease", (label, cid)
            assert cid.startswith(("DOID:", "MESH:")), (label, cid)   # DO, or a disease added from MeSH
    assert {label for label, ids in aliases.items() if not ids} == UNLINKED[name]


def test_default_kg_has_no_ddxplus_conditions(kg):
    assert not ddxplus_conditions_in_kg(kg)

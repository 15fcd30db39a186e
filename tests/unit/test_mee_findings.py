"""MEE with a small injected vocabulary: vital signs and test results as entities, the words inside a measurement,
section reach (past history, family history) and which entities the ranker takes as findings."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from agents.mee import MEE
from agents.ranker import ranking_findings
from agents.types import Entity, Extraction


@dataclass
class Vocab:
    id: str
    name: str
    category: str
    synonyms: list[str] = field(default_factory=list)


VOCAB = [
    Vocab("SYMP:0000613", "fever", "symptom", ["pyrexia"]),
    Vocab("SYMP:0000529", "tachycardia", "symptom"),
    Vocab("SYMP:0000603", "tachypnea", "symptom"),
    Vocab("SYMP:0000059", "hypotension", "symptom"),
    Vocab("SYMP:0000303", "hypoxemia", "symptom"),
    Vocab("SYMP:0020063", "blood pressure", "symptom"),
    Vocab("SYMP:0000576", "chest pain", "symptom"),
    Vocab("SYMP:0000614", "cough", "symptom"),
    Vocab("SYMP:0000604", "wheezing", "symptom"),
    Vocab("HP:0033121", "Barking cough", "phenotype"),
    Vocab("SYMP:0000513", "stridor", "symptom"),
    Vocab("SYMP:0000292", "heart failure", "symptom"),
    Vocab("HP:0012251", "ST segment elevation", "phenotype"),
    Vocab("HP:0001513", "Obesity", "phenotype"),
    Vocab("DOID:9970", "obesity", "disease"),
    Vocab("DOID:2841", "asthma", "disease"),
    Vocab("DOID:7148", "rheumatoid arthritis", "disease"),
    Vocab("DOID:10763", "hypertension", "disease"),
]


@pytest.fixture(scope="module")
def mee(tmp_path_factory):
    return MEE(VOCAB, cache_dir=tmp_path_factory.mktemp("mee"), fuzzy=False)


def by_concept(ex: Extraction, cid: str) -> list[Entity]:
    return [e for e in ex.entities if e.concept_id == cid]


VIGNETTE = ("A 45-year-old woman comes to the emergency department with cough. Her temperature is 38.9°C (102°F), "
            "pulse is 120/min, respirations are 22/min, and blood pressure is 85/50 mm Hg. O2 sat 86% RA.")


def test_vital_signs_become_finding_entities(mee):
    ex = mee.extract(VIGNETTE)
    got = {e.concept_id: e for e in ex.entities if e.category == "symptom"}
    expected = {"SYMP:0000613": "temperature is 38.9°C (102°F)", "SYMP:0000529": "pulse is 120/min",
                "SYMP:0000603": "respirations are 22/min", "SYMP:0000059": "blood pressure is 85/50 mm Hg",
                "SYMP:0000303": "O2 sat 86% RA", "SYMP:0000614": "cough"}
    assert {cid: e.text for cid, e in got.items()} == expected
    for e in got.values():
        assert VIGNETTE[e.start:e.end] == e.text and e.current and e.origin == "rules"
    assert got["SYMP:0000613"].concept_name == "fever"
    # the words inside a measurement are not findings of their own ("blood pressure", "RA" = rheumatoid arthritis)
    assert not by_concept(ex, "SYMP:0020063") and not by_concept(ex, "DOID:7148")
    assert ex.age_years == 45 and ex.sex == "female"


def test_normal_vitals_give_only_the_denials_they_make(mee):
    # no positive finding, and no finding from the words inside the readings ("blood pressure", "RA"): each normal
    # value denies what it rules out, as a measured denial over the reading's span
    text = "Vitals: T 37.0 °C, pulse 80/min, RR 16, BP 120/80 mm Hg, SpO2 98% RA."
    ex = mee.extract(text)
    assert ex.entities and all(e.negated and e.measured for e in ex.entities)
    assert {text[e.start:e.end] for e in ex.entities} == {"T 37.0 °C", "pulse 80/min", "RR 16", "BP 120/80 mm Hg",
                                                          "SpO2 98% RA"}


def test_a_temperature_is_not_an_age(mee):
    ex = mee.extract("Cough; temp 101 F.")
    assert ex.age_years is None and ex.sex is None
    assert [e.concept_id for e in ex.entities] == ["SYMP:0000614", "SYMP:0000613"]


def test_measured_values_ignore_negation_cues_and_phrases_keep_them(mee):
    ex = mee.extract("He has no murmurs, and his pulse is 120/min. There is no ST elevation.")
    [tachy] = by_concept(ex, "SYMP:0000529")
    [st] = by_concept(ex, "HP:0012251")
    assert not tachy.negated and st.negated and st.text == "ST elevation"


def test_same_concept_listed_once(mee):
    ex = mee.extract("Fever for 2 days. Her temperature is 39.2°C.")
    [fever] = by_concept(ex, "SYMP:0000613")
    assert fever.text == "Fever"


def test_finding_outside_the_vocabulary_keeps_its_name(mee):
    ex = mee.extract("Blood pressure is 170/105 mm Hg.")
    [e] = ex.entities
    assert e.concept_id is None and e.concept_name == "Increased blood pressure" and e.category == "symptom"


def test_history_line_is_past_history(mee):
    text = "A 60-year-old man. Chief complaint: chest pain.\nHistory: obesity; smokes cigarettes; heart failure."
    ex = mee.extract(text)
    [hf] = by_concept(ex, "SYMP:0000292")
    [obesity] = [e for e in ex.entities if e.text == "obesity"]
    [pain] = by_concept(ex, "SYMP:0000576")
    assert hf.historical and obesity.historical and hf.section == obesity.section == "past_medical_history"
    assert pain.current and pain.section == "chief_complaint"
    pos, neg = ranking_findings(ex)
    assert [e.concept_id for e in pos] == ["SYMP:0000576"] and neg == []


@pytest.mark.parametrize("text", [
    "Past medical history: hypertension. She presents with chest pain.",
    "PMH: hypertension\nHPI: chest pain since this morning.",
    "Medical history is significant for hypertension. She now has chest pain.",
])
def test_history_reaches_no_further_than_its_line_or_sentence(mee, text):
    ex = mee.extract(text)
    [htn] = by_concept(ex, "DOID:10763")
    [pain] = by_concept(ex, "SYMP:0000576")
    assert htn.historical and not pain.historical


def test_family_history_section_reach(mee):
    ex = mee.extract("Family history: asthma. She presents with wheezing.")
    [asthma] = by_concept(ex, "DOID:2841")
    [wheeze] = by_concept(ex, "SYMP:0000604")
    assert asthma.family and not asthma.historical and wheeze.current


@pytest.mark.parametrize("text", [
    "A 24-year-old man is brought in by his mother: he hears voices and has a fever.",
    "His mother reports that he hears voices and has a fever.",
    "According to his father, he hears voices and has a fever.",
])
def test_a_relative_who_tells_the_story_is_no_family_history(text, mee):
    ex = mee.extract(text)
    found = {e.concept_name: e for e in ex.entities if e.category != "demographic"}
    assert {"Auditory hallucination", "fever"} <= set(found), sorted(found)
    assert not any(e.family for e in found.values()), [(e.text, e.family) for e in found.values()]


@pytest.mark.parametrize("text", [
    "Child of 4 with a barking cough and stridor since last night.",
    "My son has a barking cough and stridor since last night.",
    "A mother brings her 3-year-old son because of a barking cough and stridor.",
    "Parents of a 2-year-old girl report that she has a barking cough and stridor.",
    "Mother reports that her daughter has a barking cough and stridor.",
    "A 5-year-old unvaccinated child has a barking cough and stridor.",
    "A previously healthy 3-year-old boy has a barking cough and stridor.",
])
def test_the_relative_a_presentation_opens_with_is_the_patient(text, mee):
    """A parent speaking for a child, or a clinician's "Child of 4 with ...": the child is the patient, so the
    findings are theirs, not family history (a relative cue of medspaCy's default rules would make them so)."""
    ex = mee.extract(text)
    found = {e.concept_name: e for e in ex.entities if e.category != "demographic"}
    assert {"Barking cough", "stridor"} <= set(found), sorted(found)
    assert not any(e.family for e in found.values()), [(e.text, e.family) for e in found.values()]


@pytest.mark.parametrize("text,relative_disease", [
    ("My son has a barking cough. His father has asthma.", "DOID:2841"),
    ("My mother had asthma. I have wheezing and a cough.", "DOID:2841"),
])
def test_other_relatives_stay_family_history_after_a_patient_relative(text, relative_disease, mee):
    """Only the opening relative is the patient: another relative's disease, or a parent's before the writer's own
    complaints ("I have ..."), stays family history."""
    ex = mee.extract(text)
    [disease] = by_concept(ex, relative_disease)
    assert disease.family
    assert not any(e.family for e in ex.entities if e.category == "symptom")


def test_a_relatives_own_disease_stays_family_history(mee):
    ex = mee.extract("His mother has asthma and was brought by ambulance. He has wheezing.")
    [asthma] = by_concept(ex, "DOID:2841")
    [wheeze] = by_concept(ex, "SYMP:0000604")
    assert asthma.family and not wheeze.family


@pytest.mark.parametrize("text", [
    "Her boyfriend has asthma.",
    "His co-worker was recently diagnosed with asthma.",
    "A roommate who has asthma lives with her.",
])
def test_another_persons_disease_is_not_the_patients(text, mee):
    """Someone who is not a relative (medspaCy's family cues know relatives, "partner" and "spouse")."""
    [asthma] = by_concept(mee.extract(text), "DOID:2841")
    assert asthma.family and not asthma.historical


@pytest.mark.parametrize("text", [
    "His mother has asthma and he has wheezing.",
    "Her co-worker has asthma and she now has wheezing.",
    "Her co-worker has asthma. She now has wheezing.",
    "A man whose friend has asthma presents with wheezing.",
    "She went hiking with friends and has wheezing.",
    "A man whose friend has asthma has wheezing.",
    "A woman whose husband had asthma last year now has wheezing.",
    "A woman whose mother had asthma has wheezing.",
    "My friend has asthma and now I have wheezing.",
    "His roommate has asthma, and since yesterday he has wheezing.",
])
def test_the_patient_speaking_again_ends_another_persons_scope(text, mee):
    ex = mee.extract(text)
    [wheeze] = by_concept(ex, "SYMP:0000604")
    assert not wheeze.family
    assert all(e.family for e in by_concept(ex, "DOID:2841"))


@pytest.mark.parametrize("text", [
    "A man whose friend has asthma and wheezing presents.",
    "Her coworker has asthma and now has wheezing.",
])
def test_another_persons_findings_stay_theirs_within_their_clause(text, mee):
    """The other person's scope ends at the patient's own verb or pronoun, not earlier: with no pronoun after the
    joiner ("and now has"), and no main-clause verb between the cue and the finding, the finding stays theirs."""
    ex = mee.extract(text)
    assert all(e.family for e in by_concept(ex, "SYMP:0000604"))
    assert all(e.family for e in by_concept(ex, "DOID:2841"))


@pytest.mark.parametrize("text", [
    "A family of four all have wheezing since the weekend.",
    "A 30-year-old woman and her husband both have wheezing.",
    "She and her mother have wheezing after the fire.",
])
def test_a_household_sharing_the_complaint_includes_the_patient(text, mee):
    """The patient named first in a joint subject, or a family as the subject, has the complaint too."""
    assert [e.family for e in by_concept(mee.extract(text), "SYMP:0000604")] == [False]


@pytest.mark.parametrize("text", [
    "Her whole family has wheezing.",
    "His mother and his sister have wheezing.",
])
def test_relatives_as_the_subject_stay_family(text, mee):
    assert [e.family for e in by_concept(mee.extract(text), "SYMP:0000604")] == [True]


@pytest.mark.parametrize("text", [
    "Her cough has not responded to inhalers and she has wheezing at night.",
    "The cough did not improve with antibiotics and now she has wheezing.",
])
def test_a_treatment_that_did_not_work_denies_nothing_after_it(text, mee):
    assert [e.negated for e in by_concept(mee.extract(text), "SYMP:0000604")] == [False]


def test_past_and_present_mentions_of_one_concept_are_both_kept(mee):
    ex = mee.extract("History: heart failure.\nNow presents with heart failure and cough.")
    hf = by_concept(ex, "SYMP:0000292")
    assert [e.historical for e in hf] == [True, False]
    assert "SYMP:0000292" in [e.concept_id for e in ranking_findings(ex)[0]]


def test_header_words_in_prose_open_no_section(mee):
    # "allergies" (a default header without a colon) inside the history line does not end the history section
    ex = mee.extract("History: family history of allergies; asthma.\nCough; vital signs are normal; wheezing.")
    [asthma] = by_concept(ex, "DOID:2841")
    [wheeze] = by_concept(ex, "SYMP:0000604")
    assert asthma.historical and asthma.section == "past_medical_history"
    assert wheeze.current and wheeze.section is None


def test_section_headers_are_not_entities(mee):
    ex = mee.extract("Allergies: none. Cough.")
    assert [e.text for e in ex.entities] == ["Cough"]


def test_current_and_positive():
    e = Entity(text="asthma", category="disease", historical=True)
    assert e.positive and not e.current
    ex = Extraction(entities=[e, Entity(text="cough", category="symptom", concept_id="SYMP:0000614")])
    assert [x.text for x in ex.positive()] == ["asthma", "cough"] and [x.text for x in ex.current()] == ["cough"]


class _Index:
    """An empty index: no entity matches, no chunks."""

    def status(self) -> dict:
        return {"counts": {"entities": {}}}

    def entity_search_many(self, keys, **_kw) -> list[dict]:
        return [{} for _ in keys]

    def search(self, _query, **_kw) -> list:
        return []


class _RecordingRanker:
    def __init__(self) -> None:
        self.calls: list[tuple[list[Entity], list[Entity]]] = []

    def rank(self, findings, negated, **_kw) -> list:
        self.calls.append((list(findings), list(negated)))
        return []


def test_hki_ranks_only_findings_of_the_present_illness(mee):
    from agents.hki import HKI, RetrievalParams

    text = "History: heart failure; asthma.\nChief complaint: chest pain and cough. No fever."
    ex = mee.extract(text)
    ranker = _RecordingRanker()
    HKI(_Index(), kg=None, ranker=ranker).retrieve(ex, text, RetrievalParams(sources=("G",), chunk_k=0))
    [(findings, negated)] = ranker.calls
    assert [e.concept_id for e in findings] == ["SYMP:0000576", "SYMP:0000614"]
    assert [e.concept_id for e in negated] == ["SYMP:0000613"]


class _RecordingIndex(_Index):
    """An empty index that keeps the text queries it was asked."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, query, **_kw) -> list:
        self.queries.append(query)
        return []


def test_word_search_does_not_see_the_denied_findings(mee):
    """BM25 and the encoder cannot read "no rash": the denied findings are blanked out of the text queries (offsets
    kept), the affirmed ones stay; the setting off gives the presentation unchanged."""
    from agents.hki import HKI, HKIConfig, RetrievalParams

    text = "Fever and headache for 2 days. No rash, no cough."
    ex = mee.extract(text)
    assert {e.text.lower() for e in ex.negated()} >= {"rash", "cough"}
    index = _RecordingIndex()
    res = HKI(index, kg=None, ranker=_RecordingRanker()).retrieve(ex, text, RetrievalParams(sources=("B",)))
    query = res.queries[0]
    assert len(query) == len(text) and "Fever and headache" in query
    assert "rash" not in query and "cough" not in query
    assert index.queries and all(q == query for q in index.queries)
    off = HKI(_Index(), kg=None, ranker=_RecordingRanker(),
              config=HKIConfig(mask_denied_in_text=False, drop_measurements_in_text=False))
    assert off.retrieve(ex, text, RetrievalParams(sources=("B",))).queries[0] == text


def test_word_search_does_not_see_numbers_and_units(mee):
    """"ALT 1200 U/L" gives BM25 the tokens "1200", "u", "l" (L-2-hydroxyglutaric aciduria's page matches them): the
    values and their units are blanked out of the text queries, the analyte names and "type 2" stay; the names of
    the vital signs go with their values ("BP", "HR", "SpO2": every vignette has them, and "blood pressure" finds
    the hypertension pages)."""
    from agents.hki import HKI, HKIConfig, RetrievalParams

    text = "Type 2 diabetes; yellow eyes. ALT 1200 U/L, bilirubin 5.2 mg/dL, BP 110/70 mm Hg, HR 120/min, SpO2 92%."
    ex = mee.extract(text)
    query = HKI(_Index(), kg=None, ranker=_RecordingRanker()).retrieve(
        ex, text, RetrievalParams(sources=("B",))).queries[0]
    assert len(query) == len(text)
    assert "Type 2 diabetes" in query and "ALT" in query and "bilirubin" in query
    for gone in ("1200", "U/L", "5.2", "mg/dL", "110/70", "mm Hg", "120/min", "92%", "BP", "HR", "SpO2"):
        assert gone not in query, gone
    kept = HKI(_Index(), kg=None, ranker=_RecordingRanker(), config=HKIConfig(drop_measurements_in_text=False))
    assert "1200 U/L" in kept.retrieve(ex, text, RetrievalParams(sources=("B",))).queries[0]
    named = HKI(_Index(), kg=None, ranker=_RecordingRanker(), config=HKIConfig(drop_vital_names_in_text=False))
    assert "SpO2" in named.retrieve(ex, text, RetrievalParams(sources=("B",))).queries[0]
    # in a sentence: the name goes with its value; a vital sign named without one stays, and so does "room air"
    said = "Her blood pressure is 133/87 mm Hg and her pulse is irregular; oxygen saturation of 97% on room air."
    query = HKI(_Index(), kg=None, ranker=_RecordingRanker()).retrieve(
        mee.extract(said), said, RetrievalParams(sources=("B",))).queries[0]
    assert "blood pressure" not in query and "oxygen saturation" not in query
    assert "pulse is irregular" in query and "room air" in query


def test_a_typo_keeps_its_first_letters():
    from agents.mee.extractor import plausible_typo

    assert plausible_typo("vomitting", "vomiting") and plausible_typo("apetite", "appetite")
    assert plausible_typo("persistant cough", "persistent cough")
    assert not plausible_typo("pitching", "itching") and not plausible_typo("nagging", "gagging")
    assert not plausible_typo("oriented", "disoriented")
    assert not plausible_typo("trouble keeping", "trouble sleeping")
    assert not plausible_typo("", "cough")


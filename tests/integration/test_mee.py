"""MEE agent: deterministic extraction over the real knowledge-graph vocabulary, fuzzy linking through scispaCy's
candidate generator, abbreviations, ConText flags, demographics, durations, cache reuse and the LLM merge path
(against a scripted OpenAI-compatible server on 127.0.0.1 and, marked ``llm``, a real llama.cpp server)."""
from __future__ import annotations

import json
import time

import pytest

from agents.mee import MEE, find_age_sex, find_durations
from agents.types import Extraction

try:
    import support.llama_server as srv_support
except ModuleNotFoundError:  # tests/ made a package
    import tests.support.llama_server as srv_support

faulty_server = srv_support.faulty_server
llama_server = srv_support.llama_server


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("crag-home")
    mp.setenv("CLINICALRAG_HOME", str(home))
    yield home
    mp.undo()


@pytest.fixture(scope="module")
def kg(home):
    from knowledge.kg import load_or_build

    return load_or_build()


# The default run uses the graph's symptom, disease, drug and anatomy vocabulary (~half of the aliases: the
# fuzzy-linking index builds in seconds); the slow test below runs on the full vocabulary with HPO phenotypes.
FAST_CATEGORIES = ("symptom", "disease", "drug", "anatomy")


@pytest.fixture(scope="module")
def vocabulary(kg):
    return kg.vocabulary(categories=FAST_CATEGORIES)


@pytest.fixture(scope="module")
def mee(vocabulary, home):
    return MEE(vocabulary)


def by_text(ex: Extraction, text: str):
    hits = [e for e in ex.entities if e.text.lower() == text.lower()]
    assert hits, f"{text!r} not extracted: {[(e.text, e.concept_id) for e in ex.entities]}"
    return hits[0]


def test_paper_example(mee):
    text = "45-year-old woman with wheezing and shortness of breath, no fever, mother has asthma"
    ex = mee.extract(text)
    assert ex.age_years == 45 and ex.sex == "female"
    wheeze = by_text(ex, "wheezing")
    sob = by_text(ex, "shortness of breath")
    for e in (wheeze, sob):
        assert e.category == "symptom" and e.positive
        assert e.concept_id and e.concept_id.split(":")[0] in ("SYMP", "HP")
        assert text[e.start:e.end] == e.text
    assert "dyspn" in sob.concept_name.lower()
    fever = by_text(ex, "fever")
    assert fever.negated and fever.concept_id.split(":")[0] in ("SYMP", "HP")
    asthma = by_text(ex, "asthma")
    assert asthma.family and not asthma.negated and asthma.category == "disease"
    assert {e.text for e in ex.positive()} >= {"wheezing", "shortness of breath"}
    assert "fever" not in {e.text for e in ex.positive()}


def test_duration_and_positive_findings(mee):
    ex = mee.extract("3 days of fever and cough")
    assert [d.days for d in ex.durations] == [3.0]
    assert {e.text for e in ex.positive()} == {"fever", "cough"}
    assert all(not e.negated for e in ex.entities)


@pytest.mark.parametrize("text,days", [
    ("fever for 3 days", 3.0), ("cough since 2 weeks", 14.0), ("headache x2 weeks", 14.0),
    ("vomiting over the past 48 hours", 2.0), ("a 2-week history of diarrhoea", 14.0),
    ("rash for three months", 90.0), ("no duration given", None),
])
def test_durations(text, days):
    got = find_durations(text)
    assert ([d.days for d in got][:1] or [None])[0] == days


@pytest.mark.parametrize("text,age,sex", [
    ("45-year-old woman", 45, "female"), ("45 yo M with chest pain", 45, "male"),
    ("a 3-month-old boy with fever", 0.25, "male"), ("F, 62, dizziness", 62, "female"),
    ("male aged 70 with cough", 70, "male"), ("patient with fever", None, None),
    # the relative the text opens with is the patient: "child of 4", "my son, 7," and the relative's sex
    ("Child of 4 with a barking cough", 4, None), ("My son, 7, has a rash", 7, "male"),
    ("Mother reports that her son has a fever", None, "male"), ("A mother brings her 3-year-old son", 3, "male"),
    ("My wife noticed that I snore", None, None), ("mother of 4 with cough", None, "female"),
])
def test_age_and_sex(text, age, sex):
    got_age, got_sex, _ = find_age_sex(text)
    assert got_sex == sex
    assert (got_age is None and age is None) or got_age == pytest.approx(age, abs=1e-3)


def test_abbreviations(mee):
    ex = mee.extract("Pt c/o SOB and chest pain (CP) x2 weeks. CP worse on exertion. Also N/V. PMH: HTN.")
    sob = by_text(ex, "SOB")
    assert "dyspn" in (sob.concept_name or "").lower() or "breath" in (sob.concept_name or "").lower()
    chest = by_text(ex, "chest pain")
    # the defined abbreviation "CP" resolves to the same concept; it is de-duplicated to the first mention
    assert not [e for e in ex.entities if e.text == "CP" and e.concept_id != chest.concept_id]
    names = {(e.concept_name or "").lower() for e in ex.entities}
    assert "nausea" in names and "vomiting" in names
    htn = by_text(ex, "HTN")
    assert htn.category == "disease" and "hypertension" in htn.concept_name.lower()
    assert htn.historical and htn.section == "past_medical_history"
    assert [d.days for d in ex.durations] == [14.0]


def test_hiv_positive_in_one_token_names_the_infection(mee):
    """"A 35-year-old HIV-positive woman" is one token for the tokenizer: the infection is read from it, and a
    partner's status stays the partner's."""
    ex = mee.extract("A 35-year-old HIV-positive woman has had a dry cough for two weeks.")
    hiv = by_text(ex, "HIV-positive")
    assert hiv.category == "disease" and "immunodeficiency" in hiv.concept_name.lower() and not hiv.family
    other = by_text(mee.extract("Her partner is HIV-positive; she has a cough."), "HIV-positive")
    assert other.family


def test_the_virus_a_patient_is_infected_with_names_the_infection(mee):
    """"infected with the human immunodeficiency virus" is the HIV infection (a name the graph derives from the
    infection's own), not the phenotype "immunodeficiency" inside it."""
    ex = mee.extract("History: infected with the human immunodeficiency virus; she has had a cough for a month.")
    hiv = by_text(ex, "human immunodeficiency virus")
    assert hiv.concept_id == "DOID:526" and hiv.historical and not hiv.family
    assert all(e.concept_id != "HP:0002721" for e in ex.entities)


def test_the_known_conditions_of_the_opening_are_history_not_findings(mee):
    """"A 60-year-old man with hypertension and type 2 diabetes mellitus comes ... because of a cough": the two
    diseases are known ones (context), the cough is the illness. Complaints in the same place ("with fever and cough
    has ...") and a dated phrase ("with a 3-day history of dysuria") stay findings."""
    from agents.mee.extractor import known_conditions_span

    text = "A 60-year-old man with hypertension and type 2 diabetes mellitus comes to the physician because of a cough."
    ex = mee.extract(text)
    assert by_text(ex, "hypertension").historical and by_text(ex, "type 2 diabetes mellitus").historical
    assert not by_text(ex, "cough").historical
    assert known_conditions_span(text) == (text.index("hypertension"), text.index(" comes"))
    ex = mee.extract("A 30-year-old man with fever and cough has been unwell for 3 days.")
    assert not by_text(ex, "fever").historical and not by_text(ex, "cough").historical
    ex = mee.extract("A 40-year-old woman with a 3-day history of dysuria presents to the clinic.")
    assert not by_text(ex, "dysuria").historical
    assert known_conditions_span("A 40-year-old woman with 2 weeks of cough presents to the clinic.") is None
    # the opening may name no person ("a 19-year-old with type 1 diabetes has ..."); a dated phrase is still the illness
    text = "A 19-year-old with type 1 diabetes has vomiting and deep rapid breathing."
    assert known_conditions_span(text) == (text.index("type 1"), text.index(" has"))
    assert by_text(mee.extract(text), "diabetes").historical
    assert known_conditions_span("A 34-year-old with a 3-day history of fever has chest pain.") is None
    # elsewhere than the opening, ConText decides as before
    assert known_conditions_span("Fever and cough for 3 days in a man with hypertension who has asthma.") is None


def test_a_disease_under_treatment_is_known_and_a_treated_complaint_is_not(mee):
    """"On day 6 of co-amoxiclav for pneumonia ... watery diarrhoea": the pneumonia is known (context), the diarrhoea
    is the illness; "paracetamol for the fever" keeps the fever, and an admission's reason stays the illness."""
    from agents.mee.extractor import treated_conditions_spans

    text = "A 74-year-old woman on day 6 of co-amoxiclav for pneumonia has watery diarrhoea."
    assert treated_conditions_spans(text) == [(text.index("pneumonia"), text.index(" has"))]
    ex = mee.extract(text)
    assert by_text(ex, "pneumonia").historical and not by_text(ex, "diarrhoea").historical
    ex = mee.extract("A man being treated for tuberculosis develops jaundice and vomiting.")
    assert by_text(ex, "tuberculosis").historical and not by_text(ex, "jaundice").historical
    ex = mee.extract("She took paracetamol for the fever and now has a cough.")
    assert not by_text(ex, "fever").historical
    assert treated_conditions_spans("She was admitted with pneumonia and has a cough.") == []


def test_document_defined_abbreviation_wins_over_map(mee):
    # "CP" is chest pain in the clinical map, but this text defines it as cerebral palsy
    ex = mee.extract("Child with cerebral palsy (CP) and seizures. CP diagnosed at age 2.")
    cp = [e for e in ex.entities if e.text == "CP"]
    palsy = by_text(ex, "cerebral palsy")
    assert all(e.concept_id == palsy.concept_id for e in cp)
    assert "chest pain" not in {(e.concept_name or "").lower() for e in ex.entities}


def test_misspellings_linked_by_candidate_generator(mee):
    assert mee.linker is not None, mee.linker_error
    ex = mee.extract("He reports wheezng and a persistant diarhea.")
    w = by_text(ex, "wheezng")
    assert w.concept_name.lower() == "wheezing" and 0.5 < w.link_score < 1.0
    d = by_text(ex, "diarhea")
    assert d.concept_name.lower() in ("diarrhea", "diarrhoea")
    # ordinary words are not turned into findings
    assert not [e for e in ex.entities if e.text.lower() in ("reports", "persistant")]


def test_other_words_near_a_term_are_not_taken_for_misspellings(mee):
    # each word is one letter from a vocabulary term ("itching", "gagging", "disoriented") but is another word
    ex = mee.extract("He was pitching in a game, now a nagging cough; alert and oriented.")
    assert {(e.concept_name or "").lower() for e in ex.entities} == {"cough"}, ex.entities


def test_the_hospitals_verbs_are_no_findings(mee):
    # "discharged" is one letter from the finding "discharge"; here it is what the hospital did
    ex = mee.extract("He was admitted overnight and is discharged with follow-up; 4 months later he has a cough.")
    assert {(e.concept_name or "").lower() for e in ex.entities if e.concept_id} == {"cough"}, ex.entities
    ex = mee.extract("She has a foul-smelling vaginal discharge.")
    assert any("discharge" in (e.concept_name or "").lower() for e in ex.entities), ex.entities


def test_candidate_generator_direct(mee):
    cands = mee.linker.candidates(["dyspnoea", "hypertensoin"])
    assert cands[0] and mee.lexicon.concepts[cands[0][0][0]].name.lower() == "dyspnea"
    assert cands[1] and "hypertension" in mee.lexicon.concepts[cands[1][0][0]].name.lower()


def test_drug_mention(mee):
    ex = mee.extract("Asthmatic boy taking albuterol, no longer on prednisone.")
    alb = by_text(ex, "albuterol")
    assert alb.category == "drug" and alb.concept_id and alb.concept_id.startswith("DB")


def test_negation_cues(mee):
    ex = mee.extract("She denies chest pain. Negative for cough. Free of headache. Has nausea.")
    assert by_text(ex, "chest pain").negated
    assert by_text(ex, "cough").negated
    assert by_text(ex, "headache").negated
    assert not by_text(ex, "nausea").negated


def test_an_inability_denies_nothing_after_it(mee):
    """"Not able to", "unable to": a complaint, not a denial of what follows (a misspelt verb left the whole sentence
    negated); a real denial later in the sentence still counts."""
    ex = mee.extract("i am not able to brethe propelry , lying on bed due to high fever , lot of mucus gets out")
    assert by_text(ex, "high fever").positive and not by_text(ex, "lot of mucus").negated
    ex = mee.extract("He is unable to walk and has no fever.")
    assert by_text(ex, "fever").negated


def test_the_exception_to_a_denial_is_present(mee):
    """"Other than X", "apart from X": X is there, whatever the sentence denies around it."""
    ex = mee.extract("Other than the itchy rash, a review of systems is negative. She has no complaints apart from "
                     "fatigue. No fever; other than that she is well.")
    assert not by_text(ex, "rash").negated
    assert not by_text(ex, "fatigue").negated
    assert by_text(ex, "fever").negated


def test_words_that_are_no_finding_where_they_stand(mee):
    """A coma-scale stimulus, a drug's purpose and the colour of the retina are no pain and no pallor; pale
    conjunctivae are pallor."""
    ex = mee.extract("Eyes opening to pain. He takes acetaminophen for pain control. Fundoscopy shows a pale, white "
                     "retina.")
    assert not [e for e in ex.entities if e.concept_name in ("pain", "pallor")], ex.entities
    ex = mee.extract("She has pain in her knee. Her conjunctivae are pale.")
    assert {e.concept_name for e in ex.entities} >= {"knee pain", "pallor"} or \
        {e.concept_name for e in ex.entities} >= {"pain", "pallor"}, ex.entities


def test_a_movement_after_a_pain_is_not_one_of_its_sites(mee):
    """"Soreness in the neck when turning the head" is neck pain; the head is what turns, not a second site of the
    pain (a headache); a list of sites still gives each of them."""
    ex = mee.extract("She has soreness in the neck when turning the head.")
    names = {e.concept_name for e in ex.entities}
    assert "neck pain" in names and "headache" not in names, ex.entities
    ex = mee.extract("He has pain in the neck and the head.")
    assert {"neck pain", "headache"} <= {e.concept_name for e in ex.entities}, ex.entities
    ex = mee.extract("Pain (tender, cramping) in the left flank, radiating to the thoracic spine.")
    assert "backache" in {e.concept_name for e in ex.entities}, ex.entities


def test_a_nonproductive_cough_is_a_dry_cough(mee):
    """"Nonproductive" is no denied adjective: the cough it describes is a dry cough, never a wet one; a denied
    productive cough is still read as negated."""
    for text in ("She has had a nonproductive cough for two weeks.", "A non-productive cough and fever.",
                 "The cough is non-productive."):
        ex = mee.extract(text)
        names = {e.concept_name for e in ex.entities if not e.negated}
        assert "dry cough" in names and "wet cough" not in names, (text, ex.entities)
    ex = mee.extract("No productive cough.")
    assert {e.concept_name for e in ex.entities if e.negated} >= {"wet cough"}, ex.entities


def test_a_lesions_colour_is_no_pallor_and_the_mouth_no_skin(mee):
    """"Pale" in a lesion's description is its colour, not the patient's pallor; lesions on the gum and inside the
    cheek are a finding of the oral mucosa; a pale patient is still pale."""
    ex = mee.extract("Skin lesions (pale, larger than 1 cm) on the lower gum and the inside of the right cheek.")
    names = {e.concept_name for e in ex.entities}
    assert "pallor" not in names and "Abnormal oral mucosa morphology" in names, ex.entities
    ex = mee.extract("She looks pale and tired.")
    assert "pallor" in {e.concept_name for e in ex.entities}, ex.entities


def test_family_history_section_and_dedupe(mee):
    text = "Cough and fever. Cough worse at night. Family history: diabetes mellitus."
    ex = mee.extract(text)
    coughs = [e for e in ex.entities if e.text.lower() == "cough"]
    assert len(coughs) == 1 and coughs[0].start == 0
    dm = by_text(ex, "diabetes mellitus")
    assert dm.family and dm.section == "family_history" and not dm.positive


def test_positive_and_negated_mentions_kept_distinct(mee):
    ex = mee.extract("Fever yesterday. Today no fever.")
    fevers = [e for e in ex.entities if e.text.lower() == "fever"]
    assert len(fevers) == 2 and {f.negated for f in fevers} == {True, False}


def test_offsets_point_into_original_text(mee):
    text = "  62 yo F   with  headaches,\n night sweats and   dyspnoea for the past 2 weeks. "
    ex = mee.extract(text)
    assert ex.entities
    for e in ex.entities:
        assert text[e.start:e.end] == e.text
    assert ex.age_years == 62 and ex.sex == "female"
    assert {"headache", "night sweats"} <= {(e.concept_name or "").lower() for e in ex.entities}


def test_empty_and_bad_input(mee):
    assert mee.extract("") == Extraction()
    assert mee.extract("   \n ") == Extraction()
    with pytest.raises(TypeError):
        mee.extract(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        mee.extract(None)  # type: ignore[arg-type]


def test_warm_extraction_is_fast(mee):
    text = ("A 58-year-old man presents with a 3-day history of productive cough, fever and shortness of "
            "breath. He reports pleuritic chest pain and fatigue, denies hemoptysis or weight loss. He has a "
            "history of hypertension and type 2 diabetes mellitus and takes metformin. His father had "
            "myocardial infarction. On examination he is febrile with crackles at the right lung base. No "
            "leg swelling. Nausea without vomiting since yesterday, and mild headache. He was started on "
            "amoxicillin two days ago without improvement. He is a former smoker and lives with his wife. Oxygen "
            "saturation is 91% on room air and his sputum is rusty.")
    assert 80 <= len(text.split()) <= 120
    mee.extract(text)
    t0 = time.perf_counter()
    for _ in range(5):
        ex = mee.extract(text)
    per_call = (time.perf_counter() - t0) / 5
    assert len(ex.positive()) >= 5
    cough = by_text(ex, "productive cough")
    assert not cough.historical and not cough.negated          # "3-day history of" is the present illness
    assert by_text(ex, "hemoptysis").negated and by_text(ex, "myocardial infarction").family
    assert by_text(ex, "hypertension").historical
    assert by_text(ex, "amoxicillin").category == "drug"
    assert per_call < 0.1, f"warm extract took {per_call * 1000:.1f} ms"


def test_second_start_uses_cache(vocabulary, mee, home):
    assert any(mee.cache_dir.glob("lexicon-*.pkl")) and any(mee.cache_dir.glob("linker-*/nmslib_index.bin"))
    cached = {p: p.stat().st_mtime_ns for p in mee.cache_dir.glob("lexicon-*.pkl")}
    again = MEE(vocabulary)
    assert again.timings.get("linker_build", 0.0) == 0.0
    # the lexicon was read from its cache, not rebuilt (a rebuild rewrites the file); no wall-clock comparison, which
    # a busy machine turns into a coin toss
    assert {p: p.stat().st_mtime_ns for p in mee.cache_dir.glob("lexicon-*.pkl")} == cached
    text = "wheezng and fever"
    assert [e.concept_id for e in again.extract(text).entities] == [e.concept_id for e in mee.extract(text).entities]


def test_injected_vocabulary_without_linker(tmp_path):
    from knowledge.kg import VocabEntry

    vocab = [VocabEntry(id="SYMP:1", name="wheezing", synonyms=["wheeze"], category="symptom"),
             VocabEntry(id="DOID:1", name="asthma", synonyms=[], category="disease"),
             VocabEntry(id="X:1", name="all", synonyms=["ALL"], category="disease")]
    m = MEE(vocab, cache_dir=tmp_path, fuzzy=False)
    ex = m.extract("All patients: wheeze, then ALL was diagnosed, asthma ruled out? No asthma.")
    ids = [e.concept_id for e in ex.entities]
    assert "SYMP:1" in ids and "DOID:1" in ids
    # "All" (common word) is not matched; the upper-case acronym is
    assert [e.text for e in ex.entities if e.concept_id == "X:1"] == ["ALL"]


# ------------------------------------------------------------------------------------------------ LLM merge


def _client(srv, **kw):
    from agents.llm import LLMClient, LLMConfig

    cfg = dict(base_url=srv.base_url, model=srv.model, timeout=10.0, max_retries=0, max_tokens=256)
    cfg.update(kw)
    return LLMClient(LLMConfig(**cfg))


def test_llm_merge_with_scripted_server(vocabulary, faulty_server, mee):
    reply = {"entities": [
        {"text": "wheezing", "category": "symptom", "negated": False},          # also found by rules -> both
        {"text": "night-time dyspnoea", "category": "symptom", "negated": False},  # not in the text -> dropped
        {"text": "pneumonia", "category": "disease", "negated": False},         # invented -> dropped
        {"text": "feeling off", "category": "symptom", "negated": False},       # only the LLM found it
    ]}
    faulty_server.default = srv_support.ok(json.dumps(reply))
    m = MEE(vocabulary, llm=_client(faulty_server))
    text = "Toddler with wheezing, feeling off since yesterday, no fever."
    ex = m.extract(text)
    assert by_text(ex, "wheezing").origin == "both"
    off = by_text(ex, "feeling off")
    assert off.origin == "llm" and text[off.start:off.end] == "feeling off"
    assert "pneumonia" not in {e.text.lower() for e in ex.entities}
    assert by_text(ex, "fever").negated and by_text(ex, "fever").origin == "rules"
    assert any("not found in the text" in w for w in ex.warnings)
    assert faulty_server.chat_requests(), "the LLM was not called"
    # the rules-only result is a subset of the merged one
    rules = {(e.text, e.concept_id) for e in mee.extract(text).entities}
    assert rules <= {(e.text, e.concept_id) for e in ex.entities}


def test_llm_failure_degrades_to_rules(vocabulary, mee):
    from agents.llm import LLMClient, LLMConfig

    bad = LLMClient(LLMConfig(base_url=srv_support.closed_port_url(), model="none", timeout=2.0, max_retries=0))
    m = MEE(vocabulary, llm=bad)
    text = "wheezing and no fever"
    ex = m.extract(text)
    assert [e.concept_id for e in ex.entities] == [e.concept_id for e in mee.extract(text).entities]
    assert any("LLM entity extraction failed" in w for w in ex.warnings)
    # a disabled client is simply not used (no warning)
    off = MEE(vocabulary, llm=LLMClient(LLMConfig()))
    assert off.extract(text).warnings == []


@pytest.mark.llm
def test_llm_merge_with_real_llama_server(vocabulary, llama_server):
    m = MEE(vocabulary, llm=_client(llama_server, timeout=120.0, max_tokens=200))
    text = "45-year-old woman with wheezing and shortness of breath, no fever, mother has asthma"
    ex = m.extract(text)
    # whatever the small model says, nothing outside the text survives and the rule findings stay
    for e in ex.entities:
        assert text[e.start:e.end] == e.text
        assert e.origin in ("rules", "llm", "both")
    assert by_text(ex, "wheezing").positive and by_text(ex, "fever").negated


@pytest.mark.slow
def test_full_vocabulary_with_phenotypes(kg, home):
    vocab = kg.vocabulary()
    assert {v.category for v in vocab} >= {"phenotype", "symptom", "disease", "drug"}
    cold = MEE(vocab)
    text = "45-year-old woman with wheezing and shortness of breath, no fever, mother has asthma"
    ex = cold.extract(text)
    assert by_text(ex, "wheezing").positive and by_text(ex, "fever").negated and by_text(ex, "asthma").family
    ex = cold.extract("Progressive ataxia and nystagmus with hepatosplenomegaly, wheezng.")
    names = {(e.concept_name or "").lower() for e in ex.entities}
    assert {"nystagmus", "hepatosplenomegaly", "wheezing"} <= names
    assert any("ataxia" in n for n in names)
    warm = MEE(vocab)
    assert warm.timings.get("linker_build", 0.0) == 0.0
    assert warm.timings["total"] < cold.timings["total"]

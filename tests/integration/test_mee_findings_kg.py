"""Vital signs, test results and past history against the real knowledge graph: every concept id the finding
tables name exists under its name, MEE links a vignette's vital signs and test results to those concepts with exact
spans, a "History:" line is past history, and a disease named only in the history is no finding for the ranker."""
from __future__ import annotations

import pytest

from agents.mee import FINDING_CONCEPTS, MEE
from agents.mee.labs import load_phrase_table
from agents.mee.lay import load_lay_table
from agents.ranker import KGRanker, ranking_findings
from knowledge.kg import normalise

FINDING_CATEGORIES = ("symptom", "phenotype")


@pytest.fixture(scope="module")
def kg():
    from knowledge.kg import load_or_build

    return load_or_build()


@pytest.fixture(scope="module")
def mee(kg):
    # the full vocabulary (HPO phenotypes included: most laboratory findings are HPO concepts); the fuzzy linker
    # plays no part here
    return MEE(kg.vocabulary(), fuzzy=False)


@pytest.fixture(scope="module")
def ranker(kg):
    return KGRanker(kg).warm()


def test_finding_concepts_exist_under_their_names(kg):
    for key, fc in FINDING_CONCEPTS.items():
        first = kg.concept(fc.ids[0])
        assert first is not None, f"{key}: {fc.ids[0]} is not in the knowledge graph"
        assert first.category in FINDING_CATEGORIES, f"{key}: {fc.ids[0]} is a {first.category}"
        assert normalise(first.name) == normalise(fc.name), f"{key}: {fc.ids[0]} is named {first.name!r}"
        assert fc.ids[0] in [c.id for c in kg.lookup(fc.name, categories=FINDING_CATEGORIES)]
        for other in fc.ids[1:]:
            assert kg.concept(other) is not None, f"{key}: fallback {other} is not in the knowledge graph"


@pytest.mark.parametrize("table", [load_phrase_table, load_lay_table], ids=["test results", "everyday words"])
def test_phrase_table_ids_exist_under_their_names(kg, table):
    for rule in table():
        c = kg.concept(rule.concept_id)
        assert c is not None, f"{rule.concept_id} ({rule.name}) is not in the knowledge graph"
        assert c.category in FINDING_CATEGORIES
        assert normalise(c.name) == normalise(rule.name), f"{rule.concept_id} is named {c.name!r}, not {rule.name!r}"


def test_everyday_words_become_findings_with_their_context(kg, mee):
    """A patient's own words reach the ranker as findings; negation and history come from the sentence, and a cue
    inside a finding ("lacking", "can't") negates neither it nor what follows."""
    text = ("There is no blood in my pee, but it burns when I pee. I have been lacking in energy, my neck hurts "
            "and I can't fall asleep. In the past I had swollen ankles.")
    ex = mee.extract(text)
    by_name = {e.concept_name: e for e in ex.entities if e.concept_name}
    assert by_name["hematuria"].negated
    for name in ("dysuria", "fatigue", "neck pain", "insomnia"):
        assert name in by_name, f"{name} not found in {sorted(by_name)}"
        assert not by_name[name].negated and not by_name[name].historical, name
    assert by_name["Ankle swelling"].historical
    findings, negated = ranking_findings(ex)
    assert {"dysuria", "fatigue", "neck pain", "insomnia"} <= {e.concept_name for e in findings}
    assert "hematuria" in {e.concept_name for e in negated}


def test_a_complaint_that_persists_is_not_denied(mee):
    """"won't go away" holds a negation word but denies nothing: the findings after it stay positive, while a real
    denial in the same text still negates."""
    ex = mee.extract("I have back pain, a cough that won't go away, and weakness in my extremities. "
                     "I have a rash that doesn't go away. No fever.")
    by_name = {e.concept_name: e for e in ex.entities if e.concept_name}
    for name in ("backache", "cough", "limb weakness", "rash"):
        assert name in by_name, f"{name} not found in {sorted(by_name)}"
        assert not by_name[name].negated, name
    assert by_name["fever"].negated


def _assert_readings(mee, text, positive, negated):
    """The findings named in ``positive`` are read and not denied, those in ``negated`` are read and denied; returns
    the readings by lower-cased concept name."""
    ex = mee.extract(text)
    by_name = {e.concept_name.lower(): e for e in ex.entities if e.concept_name}
    for name in positive:
        assert name.lower() in by_name, f"{name} not found in {sorted(by_name)}"
        assert not by_name[name.lower()].negated, name
    for name in negated:
        assert name.lower() in by_name and by_name[name.lower()].negated, (name, sorted(by_name))
    return by_name


@pytest.mark.parametrize("text, positive, negated", [
    # a complaint that goes on, or an inability, holds a negation word and denies nothing
    ("I can't stop sneezing and my nose is really runny.", {"sneezing", "rhinorrhea"}, set()),
    ("I can't seem to shake this cough.", {"cough"}, set()),
    ("I couldn't eat much due to nausea and vomiting.", {"Nausea and vomiting"}, set()),
    # a new clause with its own subject, or a cause, ends a negation's scope; a list keeps it
    ("I'm not feeling good, and I'm sweating a lot.", {"Hyperhidrosis"}, set()),
    ("I just don't have any energy and my throat has been really itchy.", {"throat pain"}, set()),
    ("It is hard to move without becoming stiff due to my swollen joints.", {"Joint swelling"}, set()),
    ("No fever, chills, or cough.", set(), {"fever", "chills", "cough"}),
    # a finding that opens its own clause after the denial is there, unless that clause denies or ends it too
    ("I'm not in the mood to eat, and swallowing is difficult.", {"loss of appetite", "dysphagia"}, set()),
    ("No nausea, but vomiting has started.", {"vomiting"}, {"nausea"}),
    ("He denies chest pain, and dyspnea is not present.", set(), {"chest pain", "dyspnea"}),
    ("Denies fever, and cough has resolved.", set(), {"fever", "cough"}),
    ("She cannot recall any fever.", set(), {"fever"}),
    ("She cannot walk without help because of pain.", {"pain"}, set()),
    # a comma and "after" open what came before the denial; without the comma the time belongs to it
    ("Blisters on one side of the chest that do not cross the midline, after three days of burning pain there.",
     {"pain"}, set()),
    ("No pain after meals.", set(), {"pain"}),
    # the patient's own verb after "and" or "but" starts a clause of its own: the denial before it ends there, and a
    # denial after it starts anew
    ("She denies fever and has a cough.", {"cough"}, {"fever"}),
    ("He has no chest pain but is short of breath.", {"dyspnea"}, {"chest pain"}),
    ("She has not vomited and was found confused.", {"confusion"}, {"vomiting"}),
    ("No fever and has not vomited.", set(), {"fever", "vomiting"}),
])
def test_lay_negation_scope(mee, text, positive, negated):
    """How far a patient's "can't", "not" and "without" reach: what the sentence says exists stays positive and
    what it denies is negated."""
    _assert_readings(mee, text, positive, negated)


@pytest.mark.parametrize("text, positive, negated", [
    ("The examination shows no abnormalities other than a reduced range of motion and crepitus in both knees.",
     {"Limitation of joint mobility", "Joint crepitus"}, set()),
    ("No fever except for mild chills.", {"chills"}, {"fever"}),
    ("There are no palpable lymph nodes.", set(), {"lymphadenopathy"}),
    ("Spirometry shows an FEV1:FVC ratio of 62%.", {"Reduced FEV1/FVC ratio"}, set()),
    ("Spirometry shows an FEV1/FVC ratio of 0.82.", set(), set()),
    ("The diffusion capacity of the lung (DLCO) is decreased.", {"Decreased DLCO"}, set()),
    # an exam history's words for a sign (a collapsed lung is no faint)
    ("She has not had a period for eight months and has a milky discharge from both nipples.",
     {"Secondary amenorrhea", "Galactorrhea"}, set()),
    ("He keeps bumping into door frames and cannot see to the sides.", {"Visual field defect"}, set()),
    ("A 70-year-old man collapses at home; a tender pulsatile mass is felt in the abdomen.",
     {"syncope", "abdominal mass"}, set()),
    ("He has noticed blood in his stools, and his stools have become looser.", {"hematochezia", "diarrhea"}, set()),
])
def test_examination_and_report_words(mee, text, positive, negated):
    """An exception ("no abnormalities other than") ends the denial before it, a denied examination finding stays
    denied, and lung function reads from its values (the everyday-words rows have their example sentences in
    tests/cases/lay_phrase_examples.tsv)."""
    by_name = _assert_readings(mee, text, positive, negated)
    if not positive and not negated:      # a look-alike: none of the readings above
        assert "reduced fev1/fvc ratio" not in by_name, sorted(by_name)


@pytest.mark.parametrize("text, present, past", [
    ("She had pneumonia in the past and has a cough.", "cough", None),
    ("In the past he had pneumonia and a stroke.", None, "stroke"),
    ("Past medical history: asthma, eczema and migraine.", None, "migraine"),
    # the cue after the finding reaches back over a few words only
    ("She had asthma in the past.", None, "asthma"),
    ("He has chest pain and had asthma in the past.", "chest pain", "asthma"),
    ("I've had bad migraines in the past, but this headache is different.", "headache", "migraine"),
    ("I have had a cough in the past week.", "cough", None),
])
def test_a_past_history_ends_where_the_present_begins(mee, text, present, past):
    """A past history's scope ends at "and has ..." (the patient's own present), and reaches along a list; "in the
    past" after a finding makes the few words before it past history, "in the past week" is the present illness."""
    by_name = {e.concept_name.lower(): e for e in mee.extract(text).entities if e.concept_name}
    if present:
        assert present in by_name and not by_name[present].historical, sorted(by_name)
    if past:
        assert past in by_name and by_name[past].historical, sorted(by_name)


def test_a_collapsed_lung_is_no_faint(mee):
    """"Collapses" in a history is a faint; a collapsed lung is a pneumothorax and nothing else."""
    by_name = _assert_readings(mee, "He has a collapsed lung.", {"Pneumothorax"}, set())
    assert "syncope" not in by_name



def test_a_test_name_holding_a_cue_word_denies_nothing(mee):
    """"free T4" is a test, not "free of": the low TSH before it stays positive, and a liver panel reads as findings."""
    ex = mee.extract("TSH is low and free T4 is high. ALT 1200 U/L, total bilirubin 5.2 mg/dL. She is pain free.")
    by_name = {e.concept_name: e for e in ex.entities if e.concept_name}
    for name in ("Decreased thyroid-stimulating hormone level", "Increased circulating free T4 concentration",
                 "Elevated circulating alanine aminotransferase concentration", "Hyperbilirubinemia"):
        assert name in by_name and not by_name[name].negated, (name, sorted(by_name))
    assert by_name["pain"].negated


def test_a_tearing_pain_is_not_watery_eyes(mee):
    """"tearing" describes the pain (aortic dissection's classic word), not lacrimation; watery eyes still read as
    epiphora."""
    names = {e.concept_name for e in mee.extract("sudden tearing chest pain radiating to the back").entities}
    assert "chest pain" in names and "Epiphora" not in names, names
    assert "Epiphora" in {e.concept_name for e in mee.extract("her eyes are tearing up and itchy").entities}


@pytest.mark.parametrize("text, present, absent", [
    ("The lesions are non-pruritic.", set(), {"HP:0000989"}),
    ("A non-itchy rash on the trunk.", {"SYMP:0000487"}, {"HP:0000989"}),
    ("Three days of non-bloody diarrhea.", {"SYMP:0000570"}, {"SYMP:0000421"}),
    ("Non-bilious emesis after feeds.", {"SYMP:0019145"}, set()),
    ("A non-blanching rash on the legs.", {"HP:0000967"}, set()),
    ("She has non-pitting edema.", {"HP:6000507"}, set()),
])
def test_non_denies_the_word_it_is_joined_to(mee, text, present, absent):
    """ "non-" takes the adjective it is joined to off the reading; names the vocabulary writes with "non-" stay."""
    ids = {e.concept_id for e in mee.extract(text).entities if not e.negated}
    assert present <= ids and not absent & ids, ids


def test_single_high_reading_is_not_the_disease(kg):
    """The blood-pressure finding reaches the diseases annotated with hypertension (as a narrower term) without
    being the same concept as the disease hypertension."""
    cid = FINDING_CONCEPTS["elevated blood pressure"].ids[0]
    assert not any(kg.concept(x).category == "disease" for x in kg.equivalents(cid))
    assert "HP:0000822" in kg.children(cid)


VIGNETTE = ("A 67-year-old man comes to the emergency department because of cough and shortness of breath for 2 "
            "days. His temperature is 39.2°C (102.6°F), pulse is 118/min, respirations are 28/min, and blood "
            "pressure is 84/52 mm Hg. Pulse oximetry on room air shows an oxygen saturation of 86%. Laboratory "
            "studies show a leukocyte count of 18,500/mm3 and serum sodium of 128 mEq/L.")


def test_vignette_vital_signs_and_labs(kg, mee):
    ex = mee.extract(VIGNETTE)
    expected = {
        "SYMP:0000613": "temperature is 39.2°C (102.6°F)",
        "SYMP:0000529": "pulse is 118/min",
        "SYMP:0000603": "respirations are 28/min",
        "SYMP:0000059": "blood pressure is 84/52 mm Hg",
        "SYMP:0000303": "oxygen saturation of 86%",
        "SYMP:0000634": "leukocyte count of 18,500/mm3",
        "SYMP:0019146": "sodium of 128 mEq/L",
    }
    got = {e.concept_id: e for e in ex.entities}
    for cid, span in expected.items():
        assert cid in got, f"{span!r} not extracted: {[(e.text, e.concept_id) for e in ex.entities]}"
        e = got[cid]
        assert e.text == span and VIGNETTE[e.start:e.end] == span
        assert e.category == "symptom" and e.current and kg.concept(cid) is not None
    assert "SYMP:0020063" not in got                       # the bare words "blood pressure"
    pos, _ = ranking_findings(ex)
    assert set(expected) <= {e.concept_id for e in pos}


@pytest.mark.parametrize("text, cid, negated", [
    ("Troponin I is elevated.", "HP:0410173", False),
    ("Her troponin is elevated.", "HP:0500020", False),
    ("An ECG shows ST elevation in leads II, III and aVF.", "HP:0012251", False),
    ("Anti-dsDNA antibodies are positive.", "HP:0020151", False),
    ("She has a positive ANA.", "HP:0003493", False),
    ("Blood count shows eosinophilia.", "HP:0001880", False),
    ("Urinalysis shows hematuria and proteinuria.", "SYMP:0000040", False),
    ("Urinalysis shows hematuria and proteinuria.", "SYMP:0000367", False),
    ("Hemoglobin 7.2 g/dL.", "SYMP:0000208", False),
    ("Glucose 450 mg/dL.", "HP:0003074", False),
    ("Elevated lipase.", "HP:0032932", False),
    ("Elevated liver enzymes.", "HP:0002910", False),
    ("Troponin is normal.", "HP:0500020", True),
    ("There is no ST elevation.", "HP:0012251", True),
    ("His coagulation profile reveals: Prothrombin time (PT) 12 sec, Activated partial thromboplastin time (aPTT) "
     "60 sec.", "HP:0003645", False),
    ("Arterial blood gas: pH 7.21, PCO2 28 mm Hg, HCO3- 11 mEq/L.", "HP:0001941", False),
    ("Arterial blood gas: pH 7.21, PCO2 28 mm Hg, HCO3- 11 mEq/L.", "HP:0012417", False),
    ("Serum uric acid is 10.2 mg/dL.", "HP:0002149", False),
    ("A complete blood count is normal.", "SYMP:0000114", True),
    # an in-range value denies the findings it excludes
    ("Platelet count is 250,000/mm3.", "SYMP:0000114", True),
    ("Platelet count is 250,000/mm3.", "HP:0001894", True),
    ("Temperature is 36.8°C (98.2°F).", "SYMP:0000613", True),
    ("Pulse is 82/min.", "SYMP:0000529", True),
])
def test_test_results_link_to_concepts(kg, mee, text, cid, negated):
    ex = mee.extract(text)
    hits = [e for e in ex.entities if e.concept_id == cid]
    assert hits, f"{cid} not found in {[(e.text, e.concept_id) for e in ex.entities]}"
    assert hits[0].negated == negated and kg.concept(cid) is not None


def test_an_in_range_value_does_not_deny_what_the_history_states(mee):
    # today's normal temperature does not deny the week of fevers; the normal platelet count still denies
    # thrombocytopenia, the normal pulse tachycardia
    ex = mee.extract("He has had fevers for a week. Temperature is 37.1°C, pulse 84/min, platelets 250,000/mm3.")
    fever = [e for e in ex.entities if e.concept_id == "SYMP:0000613"]
    assert fever and all(e.current for e in fever), [(e.text, e.negated) for e in fever]
    _, neg = ranking_findings(ex)
    assert {"SYMP:0000114", "SYMP:0000529"} <= {e.concept_id for e in neg}
    assert "SYMP:0000613" not in {e.concept_id for e in neg}
    # a grey-zone saturation (93 %) neither is hypoxaemia nor denies it
    ex = mee.extract("Oxygen saturation is 93% on room air.")
    assert "SYMP:0000303" not in {e.concept_id for e in ex.entities}


def test_no_st_changes_is_no_finding(mee):
    assert [e for e in mee.extract("The ECG shows no ST changes.").entities if e.concept_id == "HP:0012251"] == []


def test_history_line_is_historical(mee):
    ex = mee.extract("A 58-year-old woman. Chief complaint: cough.\nHistory: obesity; heart failure.")
    hist = {e.text: e for e in ex.entities if e.text in ("obesity", "heart failure")}
    assert set(hist) == {"obesity", "heart failure"}
    assert all(e.historical and e.section == "past_medical_history" and not e.current for e in hist.values())
    [cough] = [e for e in ex.entities if e.text == "cough"]
    assert cough.current


def test_history_only_disease_is_not_named_in_the_presentation(kg, mee, ranker):
    text = "A 64-year-old man. Chief complaint: shortness of breath.\nCough.\nHistory: obesity; heart failure."
    ex = mee.extract(text)
    [hf] = [e for e in ex.entities if e.text == "heart failure"]
    assert hf.historical
    pos, neg = ranking_findings(ex)
    assert hf.concept_id not in {e.concept_id for e in pos}
    cands = ranker.rank(pos, neg, k=20, age=ex.age_years, sex=ex.sex)
    assert cands
    named_ids = {x for x in kg.equivalents(hf.concept_id) if kg.concept(x).category == "disease"}
    assert named_ids, "the historical heart failure should be equivalent to a disease (else the test proves nothing)"
    for c in cands:
        assert hf.concept_id not in c.matched
        assert "named in the presentation" not in c.explanation and "same concept" not in c.explanation
    # had the history been taken as a finding, it would have matched candidates and named the disease itself
    with_history = ranker.rank(pos + [hf], neg, k=100_000, age=ex.age_years, sex=ex.sex)
    assert any(hf.concept_id in c.matched for c in with_history[:20])
    assert any(c.concept_id in named_ids and "same concept" in c.explanation for c in with_history)


def test_the_ranker_index_cache_keeps_the_ages_of_onset(kg, ranker):
    """The derived index is cached on disk; a reload must carry every derived table (ages of onset included), and
    a cache written without one is rebuilt rather than used."""
    import pickle

    from agents.ranker import _DERIVED, _cache_path, _load_index

    built = ranker.index
    assert built.onset and "onset" in _DERIVED
    path = _cache_path(kg, ranker.config)
    assert path is not None and path.is_file()
    loaded = _load_index(kg, ranker.config)
    assert loaded is not None and loaded.onset == built.onset
    atresia = kg.lookup("biliary atresia", categories=("disease",))[0].id
    assert loaded.onset[atresia] == ("infantile",)
    state = pickle.loads(path.read_bytes())
    state.pop("onset")
    path.write_bytes(pickle.dumps(state))
    try:
        assert _load_index(kg, ranker.config) is None
    finally:
        path.write_bytes(pickle.dumps({name: getattr(built, name) for name in _DERIVED}))


def test_faint_is_syncope_as_a_complaint_not_as_an_adjective(mee):
    """The ontology's synonym "faint" is taken off syncope (knowledge/kg/synonym_errata.tsv): a faint rash or murmur
    is no fainting, while fainting and feeling about to faint still are."""
    def ids(text):
        return {e.concept_id for e in mee.extract(text).entities}

    assert "SYMP:0000407" not in ids("A 27-year-old has fever, joint pains and a faint rash on the trunk.")
    assert "SYMP:0000407" not in ids("A faint systolic murmur is heard at the apex.")
    assert "SYMP:0000407" in ids("She felt faint on standing and then fainted in the kitchen.")
    assert "SYMP:0000407" in ids("Do you feel lightheaded and dizzy or feeling about to faint?")


def test_a_denied_finding_that_is_the_disease_rules_the_candidate_out(kg, mee):
    """A normal platelet count denies the finding thrombocytopenia, which HPO equates with the disease: a candidate
    thrombocytopenia (put forward by the word searches reading "platelet count") is marked ruled out and placed after
    the open candidates; the others keep their order."""
    from agents.subtypes import demote_denied
    from agents.types import Candidate

    ex = mee.extract("A boy has easy bruising. Platelet count 250,000/mm3, aPTT 62 s.")
    cands = [Candidate(concept_id=c, name=n, score=s) for c, n, s in (
        ("DOID:0061030", "hemophilia", 0.5), ("DOID:1588", "thrombocytopenia", 0.3),
        ("DOID:12531", "von Willebrand's disease", 0.1))]
    out = demote_denied(cands, ex.entities, kg, 0.1)
    assert [c.concept_id for c in out] == ["DOID:0061030", "DOID:12531", "DOID:1588"]
    assert out[-1].demoted == "ruled out by Platelet count 250,000/mm3" and out[-1].score == pytest.approx(0.03)
    assert not out[0].demoted and not out[1].demoted

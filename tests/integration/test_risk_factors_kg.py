"""Exposures and risk factors (agents/risk_factors.py) against the real knowledge graph and the real differential.

- every disease id of the table exists in the graph under the name written beside it;
- unprotected sex raises HIV infection in the differential of an acute febrile illness with a sore throat, oral ulcers,
  a rash and neck nodes, and its reasons name the exposure; without it (``use_risk_factors=False``, the
  ``no-risk-factors`` ablation) or with the exposure denied, the reason is absent and HIV weighs less;
- an exposure does not bring in a disease that explains none of the findings.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from agents.hki import RetrievalParams
from agents.llm import LLMConfig
from agents.risk_factors import load_risk_factors
from graph.config import PipelineConfig
from graph.pipeline import Resources

pytestmark = pytest.mark.integration

HIV = "DOID:526"
CASE = ("28-year-old man with 5 days of fever, sore throat, painful ulcers on his gums and inside his cheeks, a rash "
        "on his trunk and tender lumps in his neck. He had unprotected sex with a new partner 4 weeks ago.")


@pytest.fixture(scope="module")
def resources(knowledge):
    kg, index = knowledge
    return Resources(llm_config=LLMConfig(), kg=kg, index=index)


def _rank(res, did: str) -> int:
    ids = [c.concept_id for c in res.candidates]
    return ids.index(did) + 1 if did in ids else 10 ** 6


def test_every_disease_checks_out_against_the_graph(resources):
    table = resources.risk_factors
    assert table.problems == []
    kg = resources.kg
    for spec in load_risk_factors():
        for d in spec.diseases:
            c = kg.concept(d.id)
            assert c is not None and c.category == "disease", (spec.id, d.id)


def test_unprotected_sex_raises_hiv_and_says_why(resources):
    params = RetrievalParams.from_config(PipelineConfig())
    ex = resources.mee.extract(CASE)
    on = resources.hki.retrieve(ex, CASE, params)
    hiv = next((c for c in on.candidates if c.concept_id == HIV), None)
    assert hiv is not None, [c.name for c in on.candidates]
    assert "makes it likelier" in hiv.explanation and "unprotected sex" in hiv.explanation

    off = resources.hki.retrieve(ex, CASE, replace(params, use_risk_factors=False))
    assert all("makes it likelier" not in c.explanation for c in off.candidates)
    # HIV ranks no lower, and its share of the differential's probability rises (it may lead either way once the
    # mouth ulcers and the neck nodes are read)
    off_hiv = next((c for c in off.candidates if c.concept_id == HIV), None)
    assert _rank(on, HIV) <= _rank(off, HIV), (_rank(on, HIV), _rank(off, HIV))
    assert off_hiv is None or hiv.score > off_hiv.score, (hiv.score, off_hiv.score)

    denied = CASE.replace("He had unprotected sex with a new partner 4 weeks ago.",
                          "He denies unprotected sex or drug use.")
    res = resources.hki.retrieve(resources.mee.extract(denied), denied, params)
    assert all("makes it likelier" not in c.explanation for c in res.candidates)


def test_an_exposure_alone_brings_in_no_disease(resources):
    text = "A 40-year-old man sprained his right ankle playing football. He smokes two packs a day."
    params = RetrievalParams.from_config(PipelineConfig())
    res = resources.hki.retrieve(resources.mee.extract(text), text, params)
    names = [c.name for c in res.candidates]
    assert "lung cancer" not in names[:10], names


ASTHMA, T2DM, CHICKENPOX = "DOID:2841", "DOID:9352", "DOID:8659"


@pytest.mark.parametrize("text, raised, not_raised", [
    ("His mother has asthma.", {ASTHMA}, set()),
    ("Family history: type 2 diabetes mellitus in her father.", {T2DM}, set()),
    ("There is a family history of diabetes mellitus.", {T2DM}, set()),          # a subtype shares the class's
    ("Her son had chickenpox two weeks ago.", {CHICKENPOX}, set()),
    ("His roommate had chickenpox last week.", {CHICKENPOX}, set()),               # a contact's infection
    ("His coworker has asthma.", set(), {ASTHMA}),                                 # neither a relative nor contagious
    ("There is no family history of asthma.", set(), {ASTHMA}),                    # denied
    ("She has asthma.", set(), {ASTHMA}),                                          # the patient's own
    ("She has no fever, and her mother has asthma.", {ASTHMA}, set()),             # another clause's denial
    ("Family history:\nasthma", {ASTHMA}, set()),                                  # the section says whose
])
def test_another_persons_disease_raises_the_same_disease(resources, text, raised, not_raised):
    found = resources.risk_factors.of_others(resources.mee.extract(text).entities, text)
    assert raised <= set(found) and not (not_raised & set(found)), sorted(found)[:20]
    for did in raised:
        [m] = found[did][:1]
        assert m.spec.id in ("relative-with-the-disease", "contact-with-the-infection")
        assert text[m.start:m.end] == m.text and m.text.split()[-1].strip(".") in text


def test_a_family_history_raises_asthma_and_says_why(resources):
    text = "A 12-year-old boy has wheezing, a cough and shortness of breath at night. His mother has asthma."
    params = RetrievalParams.from_config(PipelineConfig())
    ex = resources.mee.extract(text)
    on = resources.hki.retrieve(ex, text, params)
    asthma = next((c for c in on.candidates if c.concept_id == ASTHMA), None)
    assert asthma is not None and "mother has asthma" in asthma.explanation, [c.name for c in on.candidates]
    off = resources.hki.retrieve(ex, text, replace(params, others_as_exposures=False))
    assert "mother has asthma" not in next(c for c in off.candidates if c.concept_id == ASTHMA).explanation
    assert _rank(on, ASTHMA) <= _rank(off, ASTHMA)


CO_POISONING, TBI = "MESH:D002249", "DOID:0081292"
HEADACHE = "A 45-year-old woman has had a headache, dizziness, nausea and confusion since this morning."
HEATER = (" Her husband and children have had the same headaches since they started using a kerosene heater "
          "indoors.")


def _share(res, did: str) -> float:
    return next(c.score for c in res.candidates if c.concept_id == did) / res.candidates[0].score


def test_a_disease_that_needs_an_exposure_is_moved_down_without_it_and_kept(resources):
    params = RetrievalParams.from_config(PipelineConfig())
    bare = resources.hki.retrieve(resources.mee.extract(HEADACHE), HEADACHE, params)
    co = next((c for c in bare.candidates if c.concept_id == CO_POISONING), None)
    assert co is not None, [c.name for c in bare.candidates]          # kept in view ...
    assert "seldom without a source of carbon monoxide" in co.demoted  # ... and says why it is lower
    tbi = next((c for c in bare.candidates if c.concept_id == TBI), None)
    assert tbi is None or "seldom without a blow to the head" in tbi.demoted
    text = HEADACHE + HEATER
    exposed = resources.hki.retrieve(resources.mee.extract(text), text, params)
    assert _rank(exposed, CO_POISONING) <= 2, [c.name for c in exposed.candidates]
    # its score beside the first candidate's: the exposure raises it, its absence lowered it
    assert _share(exposed, CO_POISONING) > _share(bare, CO_POISONING)
    assert all("seldom without" not in c.demoted for c in exposed.candidates if c.concept_id == CO_POISONING)
    # marked only (factor 1): it keeps the place its findings give it, higher than when moved down
    marked = resources.hki.retrieve(resources.mee.extract(HEADACHE), HEADACHE, replace(params, unexposed_factor=1.0))
    co = next(c for c in marked.candidates if c.concept_id == CO_POISONING)
    assert "seldom without" in co.demoted and _share(marked, CO_POISONING) > _share(bare, CO_POISONING)
    # no raise (boost 1) still leaves the demotion, and a stated source still spares the disease
    flat = replace(params, risk_factor_boost=1.0)
    unraised = resources.hki.retrieve(resources.mee.extract(HEADACHE), HEADACHE, flat)
    assert "seldom without" in next(c for c in unraised.candidates if c.concept_id == CO_POISONING).demoted
    spared = resources.hki.retrieve(resources.mee.extract(text), text, flat)
    assert all("seldom without" not in c.demoted for c in spared.candidates if c.concept_id == CO_POISONING)
    assert all("makes it likelier" not in c.explanation for c in spared.candidates if c.concept_id == CO_POISONING)


EBOLA = "DOID:4325"
FEVER_BLEEDING = ("A 34-year-old man has had 6 days of high fever, severe headache, muscle pain, vomiting, diarrhoea and "
                  "bleeding gums.")


def test_a_place_where_the_disease_is_acquired_is_its_exposure(resources):
    """A viral haemorrhagic fever needs an outbreak's contact or its region (the case definitions' epidemiological
    criterion): without either Ebola virus disease is marked and lower; back from Sierra Leone it is not."""
    params = RetrievalParams.from_config(PipelineConfig())
    bare = resources.hki.retrieve(resources.mee.extract(FEVER_BLEEDING), FEVER_BLEEDING, params)
    unexposed = next((c for c in bare.candidates if c.concept_id == EBOLA), None)
    assert unexposed is not None and "seldom without contact with someone ill" in unexposed.demoted
    text = FEVER_BLEEDING + " He returned from Sierra Leone 9 days ago."
    back = resources.hki.retrieve(resources.mee.extract(text), text, params)
    ebola = next(c for c in back.candidates if c.concept_id == EBOLA)
    assert ebola.demoted == "" and ebola.score > unexposed.score
    assert resources.risk_factors.unexposed(EBOLA, {}, ("asia",)) is not None     # Thailand is no Ebola country


SCHISTOSOMIASIS, POLIO = "DOID:1395", "DOID:4953"
FEVER_ITCH = "A 30-year-old man has had a week of fever, chills, an itchy rash, a dry cough and abdominal pain."


def test_schistosomiasis_needs_fresh_water_or_a_place_where_it_is_acquired(resources):
    """Without fresh water or a stay where the snails live, schistosomiasis is marked and lower; a swim in Lake
    Malawi, or a stay in Africa, spares it."""
    params = RetrievalParams.from_config(PipelineConfig())
    bare = resources.hki.retrieve(resources.mee.extract(FEVER_ITCH), FEVER_ITCH, params)
    unexposed = next((c for c in bare.candidates if c.concept_id == SCHISTOSOMIASIS), None)
    assert unexposed is None or "seldom without swimming, wading or bathing in fresh water" in unexposed.demoted
    text = FEVER_ITCH + " He swam in Lake Malawi six weeks ago."
    swam = resources.hki.retrieve(resources.mee.extract(text), text, params)
    exposed = next(c for c in swam.candidates if c.concept_id == SCHISTOSOMIASIS)
    assert exposed.demoted == "", exposed.demoted
    assert unexposed is None or exposed.score > unexposed.score
    assert resources.risk_factors.unexposed(SCHISTOSOMIASIS, {}, ("africa",)) is None


def test_poliomyelitis_needs_a_missed_vaccination_or_a_place_where_it_still_occurs(resources):
    table = resources.risk_factors
    assert table.unexposed(POLIO, {}, ()) is not None
    assert table.unexposed(POLIO, {}, ("europe",)) is not None
    assert table.unexposed(POLIO, {}, ("asia",)) is None
    assert table.unexposed(POLIO, table.diseases("The boy is unvaccinated."), ()) is None

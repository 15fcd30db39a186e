"""Reference-page titles read as diseases (knowledge/focus.py), against the knowledge graph built from the data
mirror: brackets, collection prefixes, inverted headings, multi-topic consumer pages, what must stay unresolved, and
the commonness prior's consumer-page fact that reads them."""
from __future__ import annotations

import pytest

from knowledge.focus import parts, readings, resolve_focus
from knowledge.prior import PriorFeatures

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kg(knowledge):
    return knowledge[0]


def names(kg, title, org=None):
    return [c.name.lower() for c in resolve_focus(kg, title, org)]


def test_a_title_as_written_still_wins(kg):
    assert names(kg, "Asthma", "MPlusHealthTopics") == ["asthma"]
    assert names(kg, "High Blood Pressure", "NHLBI") == ["hypertension"]


@pytest.mark.parametrize("title,org,expected", [
    ("Omsk Hemorrhagic Fever (OHF)", "CDC", "omsk hemorrhagic fever"),
    ("Parasites - Schistosomiasis", "CDC", "schistosomiasis"),
    ("Parasites - Trichuriasis (also known as Whipworm Infection)", "CDC", "trichuriasis"),
    ("Gum (Periodontal) Disease", "NIHSeniorHealth", "periodontal disease"),
    ("Hypertrichosis lanuginosa, acquired", "GARD", "acquired hypertrichosis lanuginosa"),
])
def test_one_disease_under_another_title(kg, title, org, expected):
    assert names(kg, title, org) == [expected]


@pytest.mark.parametrize("title,expected", [
    ("Ear Infections", "otitis media"), ("Yeast Infections", "candidiasis"), ("Tinea Infections", "dermatophytosis"),
    ("Diabetes Type 1", "type 1 diabetes mellitus"), ("Collapsed Lung", "pneumothorax"),
    ("Tooth Decay", "dental caries"),
])
def test_a_consumer_page_under_an_everyday_name_is_about_its_disease(kg, title, expected):
    """MedlinePlus titles a page with the everyday name (the graph's clinical names table holds it): the page, its
    prior fact and its mined edges belong to the disease, as a clinician saying "ear infection" means otitis media."""
    assert names(kg, title, "MPlusHealthTopics") == [expected]
    assert [c.name for c in kg.lookup(title, categories=("disease",))][:1] == [expected]


def test_a_consumer_page_about_two_diseases_belongs_to_both(kg):
    assert "diverticulitis" in names(kg, "Diverticulosis and Diverticulitis", "MPlusHealthTopics")
    assert names(kg, "Meningitis and Encephalitis", "NINDS") == ["meningitis", "encephalitis"]
    assert names(kg, "Pleurisy and Other Pleural Disorders", "NHLBI")[0] == "pleurisy"


def test_what_stays_unresolved(kg):
    # a rare-disease title joined by "and" or " - " is one syndrome, not its features
    assert names(kg, "Aortic arch anomaly - peculiar facies - intellectual disability", "GARD") == []
    assert names(kg, "Cerebellar ataxia and hypogonadotropic hypogonadism", "GARD") == []
    # a page about vaccines or medicines; a part named only by an abbreviation ("Cold" is no COLD)
    assert names(kg, "Tetanus, Diphtheria, and Pertussis Vaccines", "MPlusHealthTopics") == []
    assert names(kg, "Cold and Cough Medicines", "MPlusHealthTopics") == []
    assert names(kg, "Farm Health and Safety", "MPlusHealthTopics") == []


def test_readings_and_parts():
    assert readings("Liver (Hepatocellular) Cancer")[:3] == ["Liver (Hepatocellular) Cancer", "Liver Cancer",
                                                            "Hepatocellular Cancer"]
    assert "OHF" not in readings("Omsk Hemorrhagic Fever (OHF)")           # a bare abbreviation is no alias
    assert "Sleeping Sickness" in readings("Parasites - African Trypanosomiasis (also known as Sleeping Sickness)")
    assert readings("Intellectual disability - athetosis - microphthalmia", "GARD") == [
        "Intellectual disability - athetosis - microphthalmia"]
    assert parts("Diabetes, Heart Disease, and Stroke") == ["Diabetes", "Heart Disease", "Stroke"]
    assert parts("Asthma") == []
    assert parts("Pleurisy and Other Pleural Disorders") == ["Pleurisy"]


def test_the_prior_counts_a_consumer_page_under_a_two_disease_title(knowledge):
    """MedlinePlus "Diverticulosis and Diverticulitis" is a consumer page about diverticulitis; the disease pages
    keep titles as written (the title reader is for the prior's page fact only)."""
    kg, _ = knowledge                           # the test index holds MedlinePlus, NHLBI, CDC and NIDDK pages
    diverticulitis = kg.lookup("diverticulitis", categories=["disease"])[0].id
    assert "MPlusHealthTopics" in PriorFeatures.for_kg(kg).facts(diverticulitis)["pages"]

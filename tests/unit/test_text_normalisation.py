"""knowledge.text: the three tokenizer families and the MEE plural fold keep their exact behaviour."""
from __future__ import annotations

import pytest

from knowledge.text import (
    CLAIM_STOP,
    INDEX_STOP,
    TERM_STOP,
    bm25_tokens,
    claim_stem,
    claim_words,
    fold,
    fold_synonyms,
    index_stem,
    term_stem,
    terms,
)


def test_bm25_tokens_drop_stop_words_and_stem_plurals():
    assert bm25_tokens("What are the Symptoms of asthma?") == ["symptom", "asthma"]
    # negations and repeats stay: BM25 counts them
    assert bm25_tokens("no fever, no cough") == ["no", "fever", "no", "cough"]


@pytest.mark.parametrize("word,stem", [
    ("symptoms", "symptom"), ("allergies", "allergy"), ("wheezing", "wheez"), ("caused", "caus"),
    ("diseases", "disease"), ("glasses", "glass"), ("virus", "virus"), ("arthritis", "arthritis"),
    ("flu", "flu"), ("2020s", "2020"), ("1990", "1990"),
])
def test_index_stem(word, stem):
    assert index_stem(word) == stem


@pytest.mark.parametrize("word,stem", [
    ("coughing", "cough"), ("allergies", "allergy"), ("wheezes", "wheez"), ("started", "start"),
    ("lungs", "lung"), ("gas", "gas"), ("sing", "sing"),
])
def test_term_stem(word, stem):
    assert term_stem(word) == stem


def test_terms_are_a_set_without_generic_clinical_words():
    assert terms("Patients with asthma often have recurring coughing and wheezes.") == \
        {"asthma", "recurr", "cough", "wheez"}
    assert terms("The symptoms of the disease") == set()


@pytest.mark.parametrize("word,stem", [
    ("causes", "caus"), ("caused", "caus"), ("causing", "caus"), ("inflammation", "inflam"),
    ("treatments", "treat"), ("tightness", "tight"), ("allergies", "allergy"), ("usually", "usual"),
    ("bronchitis", "bronchitis"), ("stress", "stres"), ("running", "run"),
])
def test_claim_stem(word, stem):
    assert claim_stem(word) == stem


def test_claim_words_fold_lay_phrases_and_keep_hyphenated_words():
    assert fold_synonyms("Shortness of breath and high blood pressure") == "dyspnea and hypertension"
    assert fold_synonyms("Haemoglobin, oedema, anaemia") == "hemoglobin, edema, anemia"
    assert claim_words("It doesn\u2019t cause X-ray changes; pyrexia") == \
        ["it", "doesn't", "cause", "x-ray", "changes", "fever"]


@pytest.mark.parametrize("word,folded", [
    ("Headaches", "headache"), ("allergies", "allergy"), ("diabetes", "diabete"), ("sepsis", "sepsis"),
    ("virus", "virus"), ("rashes", "rashe"), ("legs", "legs"), ("COVID-19s", "covid-19s"),
    ("kidneys", "kidney"), ("airways", "airway"), ("polys", "polys"),
])
def test_fold_is_a_conservative_plural_fold(word, folded):
    assert fold(word) == folded


@pytest.mark.parametrize("word,folded", [
    ("rhinorrhoea", "rhinorrhea"), ("Amenorrhoea", "amenorrhea"), ("dyspnoea", "dyspnea"), ("apnoea", "apnea"),
    ("haematuria", "hematuria"), ("anaemia", "anemia"), ("ischaemic", "ischemic"), ("hypoxaemia", "hypoxemia"),
    ("leukaemia", "leukemia"), ("oedema", "edema"), ("myxoedema", "myxedema"), ("oesophagitis", "esophagitis"),
    ("oestrogen", "estrogen"), ("paraesthesia", "paresthesia"), ("anaesthesia", "anesthesia"),
    ("paediatric", "pediatric"), ("faecal", "fecal"), ("foetal", "fetal"), ("coeliac", "celiac"),
    ("tumours", "tumor"),
    # words that only look British stay as they are
    ("aerobic", "aerobic"), ("shoe", "shoe"), ("does", "does"), ("poem", "poem"), ("four", "four"),
    ("hour", "hour"), ("canoe", "canoe"), ("caeruloplasmin", "caeruloplasmin"),
])
def test_fold_spells_british_medical_words_the_us_way(word, folded):
    assert fold(word) == folded


def test_stop_lists_differ_on_purpose():
    # the index keeps negations and generic words; term overlap drops them; the claim list keeps negators
    # out of the stop list because the verifier handles them as negation cues
    assert "no" not in INDEX_STOP and "no" in TERM_STOP and "no" not in CLAIM_STOP
    assert "symptom" in TERM_STOP and "symptom" not in INDEX_STOP and "symptom" not in CLAIM_STOP


def test_loose_variants_of_a_diagnosis_name():
    from knowledge.kg.graph import _loose_variants

    v = _loose_variants("acute brief psychotic disorder")
    assert v[0] == "acute brief psychotic disorder"
    assert "brief psychotic disorder" in v and "brief psychotic syndrome" in v and "brief psychotic" in v
    assert v.index("acute brief psychotic syndrome") < v.index("brief psychotic disorder")  # closest first
    assert "heat stroke" in _loose_variants("exertional heat stroke")
    assert "temporomandibular joint dysfunction syndrome" in _loose_variants("temporomandibular joint dysfunction")
    assert _loose_variants("acute") == ["acute"]
    # an organism's adjective as its name, after every other spelling; short "-al" words ("viral") untouched
    v = _loose_variants("trichomonal vaginitis")
    assert "trichomonas vaginitis" in v and "candida vulvovaginitis" in _loose_variants("candidal vulvovaginitis")
    assert v.index("trichomonas vaginitis") > v.index("trichomonal vaginitis disease")
    assert not any("virus" in x or "viras" in x for x in _loose_variants("viral meningitis"))
    assert all(x for x in _loose_variants("pneumonia"))

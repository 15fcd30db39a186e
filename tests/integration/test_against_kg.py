"""Findings that argue against a diagnosis (agents/against.py) against the real knowledge graph and the real
differential.

- every finding and disease of the table exists in the graph under the name written beside it;
- the extractor's fever (a word, or a measured temperature) fires the fever rules, "no fever" does not;
- a kind of a listed disease is argued against too (panic disorder under anxiety disorder), an unrelated one is not;
- a fever argues against paroxysmal hemicrania, SUNCT syndrome and cluster headache (the trigeminal autonomic
  cephalalgias), not against an unrelated disease;
- in the differential of sneezing, a runny nose, itchy eyes and a fever, allergic rhinitis says why it fell and ranks
  no higher than without the table (``use_against=False``, the ``no-against`` ablation), where nothing says "against".
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from agents.against import load_against
from agents.hki import RetrievalParams
from agents.llm import LLMConfig
from graph.config import PipelineConfig
from graph.pipeline import Resources

pytestmark = pytest.mark.integration

ALLERGIC_RHINITIS = "DOID:4481"
CASE = "A 25-year-old man with sneezing, a runny nose and itchy eyes for two days, and a fever of 38.9 C."


@pytest.fixture(scope="module")
def resources(knowledge):
    kg, index = knowledge
    return Resources(llm_config=LLMConfig(), kg=kg, index=index)


def test_every_concept_checks_out_against_the_graph(resources):
    table = resources.against
    assert table.problems == []
    kg = resources.kg
    for spec in load_against():
        for d in spec.diseases:
            c = kg.concept(d.id)
            assert c is not None and c.category == "disease", (spec.id, d.id)
        for f in spec.findings:
            c = kg.concept(f.id)
            assert c is not None and c.category in ("symptom", "phenotype"), (spec.id, f.id)


@pytest.mark.parametrize(("text", "fires"), [
    ("Sneezing and a runny nose with a fever.", True),
    ("Temperature 38.9 C, sneezing and a runny nose.", True),
    ("Sneezing and a runny nose; no fever.", False),
    ("Sneezing and a runny nose; she denies fever or chills.", False),
])
def test_the_extractors_fever_fires_the_fever_rules(resources, text, fires):
    hits = {h.spec.id for h in resources.against.fired(resources.mee.extract(text), text)}
    assert ("fever-allergic-rhinitis" in hits) is fires, hits


def test_a_kind_of_a_listed_disease_is_argued_against(resources):
    text = "Palpitations, trembling and a fever of 39 C."
    table = resources.against
    hits = table.fired(resources.mee.extract(text), text)
    assert [h.spec.id for h in table.against("DOID:594", hits)] == ["fever-mental-disorder"]   # panic disorder
    assert table.against("DOID:8469", hits) == []                                            # influenza


def test_a_fever_argues_against_the_trigeminal_autonomic_cephalalgias(resources):
    text = "A throbbing headache on one side with a watery eye, and a temperature of 39.2 C."
    table = resources.against
    hits = table.fired(resources.mee.extract(text), text)
    for name in ("paroxysmal hemicrania", "SUNCT syndrome", "cluster headache"):
        disease = next(c for c in resources.kg.lookup(name) if c.category == "disease")
        assert [h.spec.id for h in table.against(disease.id, hits)] == ["fever-primary-headache"], name
    assert table.against("DOID:11476", hits) == []   # osteoporosis: not a headache


def test_fever_moves_allergic_rhinitis_down_and_says_why(resources):
    params = RetrievalParams.from_config(PipelineConfig())
    ex = resources.mee.extract(CASE)
    on = resources.hki.retrieve(ex, CASE, params)
    off = resources.hki.retrieve(ex, CASE, replace(params, use_against=False))
    ids_on = [c.concept_id for c in on.candidates]
    ids_off = [c.concept_id for c in off.candidates]
    assert ALLERGIC_RHINITIS in ids_off, [c.name for c in off.candidates]
    assert ALLERGIC_RHINITIS in ids_on                     # never dropped
    rhinitis = on.candidates[ids_on.index(ALLERGIC_RHINITIS)]
    assert "against: a fever" in rhinitis.demoted and "does not cause a fever" in rhinitis.demoted
    assert ids_on.index(ALLERGIC_RHINITIS) >= ids_off.index(ALLERGIC_RHINITIS)
    assert all("against:" not in (c.demoted or "") for c in off.candidates)


def test_a_rule_without_kinds_spares_the_kinds(resources):
    text = "Crampy abdominal pain and constipation for four days, with a fever."
    table = resources.against
    hits = table.fired(resources.mee.extract(text), text)
    assert "constipation-gastroenteritis" in {h.spec.id for h in hits}
    assert [h.spec.id for h in table.against("DOID:2326", hits)] == ["constipation-gastroenteritis"]
    assert table.against("DOID:8778", hits) == []   # Crohn's disease: not listed
    campylobacteriosis = next(c for c in resources.kg.lookup("campylobacteriosis") if c.category == "disease")
    assert "DOID:2326" in resources.kg.ancestors(campylobacteriosis.id, max_depth=4)   # a kind of gastroenteritis ...
    assert table.against(campylobacteriosis.id, hits) == []                          # ... that the rule spares


def test_a_cancer_without_warning_features_is_argued_against_at_any_depth(resources):
    """NICE NG12's warning features: none stated, any cancer (a lung non-small cell carcinoma six is_a steps below
    "cancer") is argued against and a pneumonia is not; the extractor's weight loss, or a stated lump, stops it."""
    table = resources.against
    text = "A 30-year-old man with a cough and a sore throat for three days."
    hits = table.fired(resources.mee.extract(text), text)
    nsclc = next(c for c in resources.kg.lookup("lung non-small cell carcinoma") if c.category == "disease")
    assert [h.spec.id for h in table.against(nsclc.id, hits)] == ["cancer-without-warning-features"]
    assert table.against("DOID:552", hits) == []                                              # pneumonia
    for stated in ("A 30-year-old man with a cough and a sore throat; he has lost 6 kg in weight.",
                   "A 30-year-old man with a cough and a hard lump in the neck."):
        hits = table.fired(resources.mee.extract(stated), stated)
        assert "cancer-without-warning-features" not in {h.spec.id for h in hits}, stated

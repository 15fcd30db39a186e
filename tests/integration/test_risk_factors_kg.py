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

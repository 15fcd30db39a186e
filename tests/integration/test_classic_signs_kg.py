"""Classic signs (agents/signs.py) against the real knowledge graph and the real differential.

- every diagnosis id of the table exists in the graph under the name written beside it;
- Koplik spots bring measles into the differential through the sign ranking, with the sign named in its
  explanation; without it (``use_signs=False``, the ``no-signs`` ablation) measles has no sign rank;
- a denied sign adds nothing.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from agents.hki import RetrievalParams
from agents.llm import LLMConfig
from agents.signs import load_signs
from graph.config import PipelineConfig
from graph.pipeline import Resources

pytestmark = pytest.mark.integration

MEASLES = "DOID:8622"
CASE = ("A 4-year-old unvaccinated boy has 3 days of fever, cough, runny nose and red eyes. Examination shows "
        "small white spots on the buccal mucosa (Koplik spots).")


@pytest.fixture(scope="module")
def resources(knowledge):
    kg, index = knowledge
    return Resources(llm_config=LLMConfig(), kg=kg, index=index)


def test_every_diagnosis_checks_out_against_the_graph(resources):
    signs = resources.signs
    assert signs.problems == []
    kg = resources.kg
    for spec in load_signs():
        for d in spec.diagnoses:
            c = kg.concept(d.id)
            assert c is not None and c.category == "disease", (spec.id, d.id)


def test_koplik_spots_bring_measles_in_through_the_sign(resources):
    ex = resources.mee.extract(CASE)
    params = RetrievalParams.from_config(PipelineConfig())
    res = resources.hki.retrieve(ex, CASE, params)
    found = {c.concept_id: c for c in res.candidates}
    assert MEASLES in found, [c.name for c in res.candidates]
    m = found[MEASLES]
    assert m.ranks.get("sign") == 1 and "sign" in m.origins
    assert "Koplik spots" in m.explanation and "classic sign" in m.explanation
    assert [c.concept_id for c in res.candidates].index(MEASLES) < 5, [c.name for c in res.candidates]

    # the sign is cited: its evidence item, from the curated table with the table's source
    ev = {e.id: e for e in res.evidence}
    sid = f"G:{MEASLES}|has_classic_sign|koplik-spots"
    assert sid in ev and f"{MEASLES}|has_classic_sign|koplik-spots" == m.supporting[0]
    assert ev[sid].text == "A classic sign of measles: Koplik spots." and "Pink Book" in ev[sid].source

    off = resources.hki.retrieve(ex, CASE, replace(params, use_signs=False))
    assert all("sign" not in c.ranks for c in off.candidates)


def test_a_denied_sign_adds_nothing(resources):
    text = CASE.replace("Examination shows small white spots on the buccal mucosa (Koplik spots).",
                        "There are no Koplik spots.")
    ex = resources.mee.extract(text)
    res = resources.hki.retrieve(ex, text, RetrievalParams.from_config(PipelineConfig()))
    # the denied spots name nothing (the runny nose and cough, the cold's everyday symptoms, still name the cold)
    assert all("sign" not in c.ranks for c in res.candidates if c.concept_id == MEASLES)
    assert not any("koplik" in s for c in res.candidates for s in c.supporting)

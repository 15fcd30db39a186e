"""The endemic-regions table against the built knowledge graph, and place in the differential: every entry names a
disease of the graph under its name and lands on its node; where a traveller has been moves a geographically
restricted disease, through the whole offline pipeline."""
from __future__ import annotations

import pytest

from agents.llm import LLMConfig
from graph.pipeline import ClinicalRAG, Resources
from knowledge.kg import endemic
from knowledge.kg.normalize import normalise

pytestmark = pytest.mark.integration

EBOLA = "DOID:4325"
TRAVELLER = ("A 25-year-old man back from {place} 5 days ago with high fever, severe headache, muscle pains, "
             "vomiting, diarrhoea and a rash; platelets 80,000.")


@pytest.fixture(scope="module")
def kg(knowledge):
    return knowledge[0]


def test_every_entry_lands_on_its_disease(kg):
    problems = []
    for e in endemic.read():
        c = kg.concept(e.disease_id)
        if c is None or c.category != "disease" or normalise(c.name) != normalise(e.disease_name):
            problems.append((e.disease_id, e.disease_name, c and c.name))
        elif tuple(kg.graph.nodes[e.disease_id].get("endemic_regions") or ()) != e.regions:
            problems.append((e.disease_id, "regions not on the node"))
    assert problems == []
    assert (kg.report or {}).get("endemic_diseases") == len(endemic.read())


def test_where_the_traveller_has_been_moves_ebola(knowledge):
    kg, index = knowledge
    app = ClinicalRAG(Resources(llm_config=LLMConfig(), kg=kg, index=index))

    def ebola_score(place: str) -> tuple[float, list[str]]:
        r = app.ask(TRAVELLER.format(place=place))
        assert [p["text"] for p in r["extraction"]["places"]] == [place]
        scores = {c["concept_id"]: c["score"] for c in r["candidates"]}
        return scores.get(EBOLA, 0.0), r["extraction"]["places"][0]["regions"]

    asia, where = ebola_score("Thailand")
    assert where == ["asia"]
    africa, where = ebola_score("Sierra Leone")
    assert where == ["africa"]
    assert africa > 0 and asia < africa

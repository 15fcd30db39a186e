"""The ranker's coverage term counts a finding as explained by how strongly the disease is linked to it
(``RankerConfig.coverage_ref``): a faint link to a second complaint no longer counts as much as a cardinal one. On a
small hand-made graph; no data mirror."""
from __future__ import annotations

import pytest

from agents.ranker import KGRanker, RankerConfig
from agents.types import Entity
from knowledge.kg import build
from knowledge.kg.builder import Builder
from knowledge.kg.graph import KnowledgeGraph

STRONG, FAINT = "DOID:1", "DOID:2"             # both explain neck pain; the second complaint strongly / faintly
NECK, WEAK = "SYMP:0000829", "SYMP:0000222"


def small_kg() -> KnowledgeGraph:
    b = Builder()
    b.step = lambda msg: None
    b.node(STRONG, "disease", "do-humando", name="spondylosis")
    b.node(FAINT, "disease", "do-humando", name="some spondylitis")
    b.node(NECK, "symptom", "do-symp", name="neck pain")
    b.node(WEAK, "symptom", "do-symp", name="limb weakness")
    for d in (STRONG, FAINT):
        b.edge(d, "has_symptom", NECK, "do-disease-symptom")
    b.edge(STRONG, "has_symptom", WEAK, "do-disease-symptom")          # a curated edge: do_strength 0.9
    b.edge(FAINT, "has_phenotype", WEAK, "hpo", frequency=0.2)         # an occasional phenotype: 0.2
    return KnowledgeGraph(build.assemble(b.nodes.items(), b.edge_list()), "0123456789abcdef", {})


FINDINGS = [Entity(text="neck pain", category="symptom", concept_id=NECK),
            Entity(text="weak limbs", category="symptom", concept_id=WEAK)]


def test_a_faint_link_explains_a_finding_in_proportion():
    kg = small_kg()
    plain = KGRanker(kg, coverage_ref=0.0).scores(FINDINGS)
    graded = KGRanker(kg, coverage_ref=0.5).scores(FINDINGS)
    # a link at 0.9 explains in full either way: the strong candidate's score does not move
    assert graded[STRONG] == pytest.approx(plain[STRONG])
    # the faint one (0.2 of the 0.5 needed) explains 0.4 of the weakness: coverage (1 + 0.4) / 2 instead of 2 / 2
    assert graded[FAINT] == pytest.approx(plain[FAINT] * 0.7)


def test_the_default_grades_coverage():
    assert RankerConfig().coverage_ref > 0

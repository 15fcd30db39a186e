"""The commonness prior's facts (knowledge.prior.PriorFeatures) on a small hand-made graph: the names and sources the
project's curated clinical-names table adds are no mark of a common disease."""
from __future__ import annotations

from knowledge.kg import build
from knowledge.kg.builder import Builder
from knowledge.kg.graph import KnowledgeGraph
from knowledge.prior import PriorFeatures


def test_curated_clinical_names_count_neither_as_names_nor_as_sources():
    b = Builder()
    gastro = b.node("DOID:2326", "disease", "do-humando", name="gastroenteritis")
    b.add_synonym(gastro, "stomach flu", "NARROW", "kg-clinical-names")
    b.add_synonym(gastro, "gastro-enteritis", "EXACT", "do-obo-2016")
    gastro["sources"].append("kg-clinical-names")
    orpha = b.node("ORPHA:95409", "disease", "hpo", name="Acute adrenal insufficiency")
    b.add_synonym(orpha, "adrenal crisis", "MAPPED", "kg-clinical-names")
    orpha["sources"].append("kg-clinical-names")
    kg = KnowledgeGraph(build.assemble(b.nodes.items(), []), "test")
    facts = PriorFeatures.build(kg).records
    assert facts["DOID:2326"]["names"] == 2 and facts["DOID:2326"]["sources"] == 1
    assert facts["ORPHA:95409"]["names"] == 1 and facts["ORPHA:95409"]["hpo_only"]

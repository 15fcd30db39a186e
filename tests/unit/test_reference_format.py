"""How a reference reads in the answer's list: each fact once."""
from __future__ import annotations

from agents.types import Reference


def test_the_organisation_is_not_repeated_after_a_source_that_names_it():
    ncit = Reference(n=1, evidence_ids=["G:DOID:1#NCIT:C1"], source="NCI Thesaurus", title="croup (definition)",
                     organisation="NCI Thesaurus", url="https://ncit.nci.nih.gov/x", license="CC-BY-4.0")
    assert ncit.format() == "[1] croup (definition). NCI Thesaurus. https://ncit.nci.nih.gov/x. license: CC-BY-4.0."
    page = Reference(n=2, evidence_ids=["B:x#0"], source="MedQuAD/GARD", title="Croup", organisation="GARD",
                     span=(0, 10))
    assert page.format() == "[2] Croup. MedQuAD/GARD. chars 0-10."
    other = Reference(n=3, evidence_ids=["G:x"], source="Disease Ontology", title="croup", organisation="NIH")
    assert other.format() == "[3] croup. Disease Ontology. NIH."

"""Which concept a surface form names when several share it (agents.mee.lexicon.build_lexicon): a symptom, then a
disease, then a phenotype — and a disease the graph took from MeSH under a finding's name (cluster headache,
anaphylaxis) after the phenotype, so that a presentation's findings stay findings."""
from __future__ import annotations

from dataclasses import dataclass, field

from agents.mee.lexicon import build_lexicon


@dataclass
class Entry:
    id: str
    name: str
    category: str
    synonyms: list[str] = field(default_factory=list)


def first(entries: list[Entry], phrase: str) -> str:
    lex = build_lexicon(entries, lambda t: t.split())
    return lex.phrases[phrase][0]


def test_a_mesh_disease_named_like_a_phenotype_is_read_as_the_phenotype():
    entries = [Entry("MESH:D003027", "Cluster Headache", "disease"), Entry("HP:0012199", "Cluster headache",
                                                                          "phenotype")]
    assert first(entries, "cluster headache") == "HP:0012199"
    assert first(list(reversed(entries)), "cluster headache") == "HP:0012199"


def test_a_do_disease_still_comes_before_a_phenotype_and_a_symptom_before_both():
    entries = [Entry("HP:0012819", "Myocarditis", "phenotype"), Entry("DOID:820", "myocarditis", "disease")]
    assert first(entries, "myocarditis") == "DOID:820"
    entries.append(Entry("SYMP:0000095", "myocarditis", "symptom"))
    assert first(entries, "myocarditis") == "SYMP:0000095"


def test_a_mesh_disease_alone_is_still_found():
    assert first([Entry("MESH:D006560", "Herpes Labialis", "disease", ["cold sore"])], "cold sore") == "MESH:D006560"

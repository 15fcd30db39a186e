"""Disease knowledge graph (source G): Disease Ontology, Symptom Ontology, HPO, HSDN and
PharmacotherapyDB assembled into one NetworkX multigraph with provenance on every edge; the names of the NCI
Thesaurus, MeSH, ICD-10-CM, Mondo and a curated abbreviation table merged into the DO concepts."""
from .build import BUILDER_VERSION, CATEGORIES, DEFAULT_SOURCES, RELATIONS, BuildError
from .graph import Concept, KnowledgeGraph, Triple, VocabEntry, artefact_path, first_match, load_or_build
from .normalize import normalise

__all__ = ["BUILDER_VERSION", "CATEGORIES", "DEFAULT_SOURCES", "RELATIONS", "BuildError", "Concept",
           "KnowledgeGraph", "Triple", "VocabEntry", "artefact_path", "first_match", "load_or_build", "normalise"]

"""Disease knowledge graph (source G): Disease Ontology, Symptom Ontology, HPO, HSDN and
PharmacotherapyDB assembled into one NetworkX multigraph with provenance on every edge."""
from .build import BUILDER_VERSION, CATEGORIES, DEFAULT_SOURCES, RELATIONS, BuildError
from .graph import Concept, KnowledgeGraph, Triple, VocabEntry, artefact_path, load_or_build
from .normalize import normalise

__all__ = ["BUILDER_VERSION", "CATEGORIES", "DEFAULT_SOURCES", "RELATIONS", "BuildError", "Concept",
           "KnowledgeGraph", "Triple", "VocabEntry", "artefact_path", "load_or_build", "normalise"]

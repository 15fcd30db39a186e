"""A small real knowledge index shared by the index and retrieval-quality tests (built once per session).

Real MedQuAD documents (the first 80 of NHLBI = source B and of CDC = source O), the real knowledge graph
restricted to a few hundred concepts around the test's diseases, the real MiniLM embedder. Built in a
temporary folder; vectors go through the embedding cache of $CLINICALRAG_HOME.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

ORGS = ("NHLBI", "CDC")
PER_ORG = 80
ANCHORS = ("myocardial infarction", "asthma", "heart failure", "sleep apnea", "anemia", "influenza")


@lru_cache(maxsize=1)
def kg():
    from knowledge.kg import load_or_build

    return load_or_build()


def g_concepts(graph) -> tuple[str, ...]:
    """Concepts around the anchor diseases (the anchors, their findings and drugs) plus the first 150
    disease and 50 symptom concepts of the vocabulary, to give the entity index some distractors."""
    ids: list[str] = []
    for name in ANCHORS:
        for c in graph.lookup(name)[:2]:
            ids.append(c.id)
            ids.extend(t.object for t in graph.neighbors(c.id, direction="out")[:20])
    vocab = graph.vocabulary(categories=["disease"])[:150] + graph.vocabulary(categories=["symptom"])[:50]
    ids.extend(e.id for e in vocab)
    return tuple(dict.fromkeys(ids))


def config():
    from knowledge.index import IndexConfig

    return IndexConfig(organisations=ORGS, per_organisation_limit=PER_ORG, g_concepts=g_concepts(kg()))


@lru_cache(maxsize=1)
def workdir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="crag-index-test-"))
    atexit.register(shutil.rmtree, d, True)
    return d


def new_index(root: Path | None = None):
    from knowledge.embeddings import EmbeddingCache
    from knowledge.index import KnowledgeIndex

    # the embedding cache of the session's $CLINICALRAG_HOME: shared with other fixtures that embed the same texts
    return KnowledgeIndex(root=root or workdir() / "index", config=config(), kg=kg(), cache=EmbeddingCache())


@lru_cache(maxsize=1)
def built():
    """(index, first build stats)."""
    ix = new_index()
    stats = ix.build(progress=False)
    return ix.open(), stats

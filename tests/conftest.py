"""Shared test set-up (for tests/unit and tests/integration).

tests/unit: no data, seconds (``pytest tests/unit``). tests/integration: the knowledge graph and index built from
the data mirror, real LLM servers; every test there is marked ``integration``.

The suite runs against real data read from the mirror (``../shared/data/mirror`` or $CLINICALRAG_DATA_MIRROR)
and real servers on 127.0.0.1. Heavy artefacts (knowledge graph, small index) are built once per session in one
temporary $CLINICALRAG_HOME unless $CLINICALRAG_TEST_HOME names a folder to reuse between runs.
"""
from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# No LLM unless a test starts one: a developer's CLINICALRAG_LLM_* must not leak into the offline tests.
for _k in [k for k in os.environ if k.startswith("CLINICALRAG_LLM_") or k in ("OPENAI_BASE_URL", "OPENAI_MODEL")]:
    os.environ.pop(_k)
_OWN_HOME = not os.environ.get("CLINICALRAG_TEST_HOME")
if _OWN_HOME:
    os.environ["CLINICALRAG_TEST_HOME"] = tempfile.mkdtemp(prefix="clinicalrag-test-")
os.environ["CLINICALRAG_HOME"] = os.environ["CLINICALRAG_TEST_HOME"]

from support.llama_server import faulty_server, llama_server  # noqa: E402,F401

import pytest  # noqa: E402

# MedQuAD subset for the shared test index: consumer pages and fact sheets on common conditions.
TEST_ORGANISATIONS = ("MPlusHealthTopics", "NHLBI", "CDC", "NIDDK")


@pytest.fixture(scope="session")
def knowledge():
    """(KnowledgeGraph, KnowledgeIndex) over the full KG and a MedQuAD subset, built once per session from
    the mirrored data (rebuilt only when the inputs change, thanks to versioned artefacts)."""
    from knowledge.index import IndexConfig, KnowledgeIndex
    from knowledge.kg import load_or_build

    kg = load_or_build()
    index = KnowledgeIndex(kg=kg, config=IndexConfig(organisations=TEST_ORGANISATIONS,
                                                     g_concepts=tuple(sorted(g_test_subset(kg)))))
    index.build(progress=False)
    index.open()
    return kg, index


def g_test_subset(kg) -> set[str]:
    """The KG part of the test index: every symptom and drug, the diseases with curated symptom profiles
    (Disease Ontology, HSDN) or drug indications, and the phenotypes equivalent to symptoms. The full KG
    (all 38k concepts) is still what the ranker and the extractor use; only the entity-keyed vectors are
    limited, to keep the cold test build short."""
    g = kg.graph
    keep: set[str] = set()
    for n, d in g.nodes(data=True):
        cat = d.get("category")
        if cat in ("symptom", "drug"):
            keep.add(n)
    for u, v, k, d in g.edges(keys=True, data=True):
        if k == "treated_by" or (k == "has_symptom" and d.get("source") in ("do-disease-symptom", "hsdn")):
            keep.add(u)
        elif k == "xref" and g.nodes[u].get("category") == "symptom":
            keep.add(v)
    return keep


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.integration)


def pytest_sessionfinish(session, exitstatus):
    """Remove the session's own temporary home (a home named by $CLINICALRAG_TEST_HOME is kept for reuse)."""
    if _OWN_HOME:
        import shutil

        shutil.rmtree(os.environ["CLINICALRAG_TEST_HOME"], ignore_errors=True)

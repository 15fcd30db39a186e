"""The knowledge index on a small real subset: search, filters, entity search, persistence, atomic and
incremental builds, CLI."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _index_subset as subset  # noqa: E402

from knowledge.index import IndexNotBuilt, KnowledgeIndex, bm25_tokens  # noqa: E402
from knowledge.stores import open_store  # noqa: E402
from knowledge.stores.embedded import EmbeddedStore  # noqa: E402


@pytest.fixture(scope="module")
def index():
    return subset.built()[0]


def _focus(hit) -> str:
    return (hit.metadata.get("focus") or "").lower()


def test_first_build_counts(index):
    ix, stats = subset.built()
    assert not stats["skipped"]
    c = ix.status()["counts"]
    assert c["chunks_by_role"]["B"] > 100 and c["chunks_by_role"]["O"] > 50 and c["chunks_by_role"]["G"] > 10
    assert set(c["entities"]) == {"G", "B", "O"}
    assert ix.status()["size_bytes"] > 0 and ix.status()["model"].startswith("onnx:")


def test_asthma_symptoms_top3(index):
    hits = index.search("what are the signs and symptoms of asthma", k=3)
    assert any("asthma" in _focus(h) for h in hits), [(h.chunk_id, _focus(h)) for h in hits]
    assert hits[0].ranks and hits == sorted(hits, key=lambda h: -h.score)


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_modes_find_asthma_treatment(index, mode):
    hits = index.search("how is asthma treated", k=5, mode=mode)
    assert hits and "asthma" in _focus(hits[0]), [(h.chunk_id, _focus(h)) for h in hits]
    assert any(h.metadata.get("section") == "treatment" and "asthma" in _focus(h) for h in hits)
    if mode == "bm25":
        assert all(h.bm25_score > 0 for h in hits)
    if mode == "dense":
        assert all(-1.0 <= h.dense_score <= 1.0 for h in hits)


def test_alpha_fusion(index):
    hits = index.search("asthma attack triggers", k=5, fusion="alpha", alpha=0.5)
    assert hits and all(0.0 <= h.score <= 1.0 for h in hits)
    assert "asthma" in _focus(hits[0])


def test_role_and_metadata_filters(index):
    o = index.search("how is the flu spread", k=10, sources=["O"])
    assert o and all(h.role == "O" and h.metadata["organisation"] == "CDC" for h in o)
    g = index.search("heart attack chest pain", k=5, sources=["G"])
    assert g and all(h.role == "G" and (h.chunk_id.endswith("#card") or h.metadata["section"] == "definition")
                     for h in g)
    b = index.search("heart", k=10, filters={"organisation": ["NHLBI"], "section": "symptoms"})
    assert b and all(h.metadata["organisation"] == "NHLBI" and h.metadata["section"] == "symptoms" for h in b)
    assert index.search("heart", k=5, filters={"organisation": "no such site"}) == []
    high = index.search("asthma", k=10, mode="dense", min_score=0.5)
    assert all(h.dense_score >= 0.5 for h in high)


def test_bad_arguments(index):
    with pytest.raises(ValueError):
        index.search("asthma", mode="magic")
    with pytest.raises(ValueError):
        index.search("asthma", fusion="magic")
    assert index.search("   ") == []


def test_entity_search_heart_attack(index):
    mi = subset.kg().lookup("myocardial infarction")[0].id
    res = index.entity_search("heart attack", k=3)
    g = res["G"]
    assert mi in [h.concept_id for h in g], [(h.key, h.concept_id) for h in g]
    hit = next(h for h in g if h.concept_id == mi)
    assert hit.knowledge and all(t.subject == mi for t in hit.knowledge)
    assert res["O"] and all(h.source == "O" for h in res["O"])
    b = index.entity_search("asthma attack", k=3, sources=("B",))["B"][0]
    assert b.key.lower() == "asthma" and b.focus == b.key and b.score > 0.6
    assert b.knowledge and all(c["metadata"]["doc_id"] in b.ids for c in b.knowledge)
    assert {c["metadata"]["focus"] for c in b.knowledge} == {b.key}


def test_entity_search_many_matches_single(index):
    many = index.entity_search_many(["heart attack", "shortness of breath"], k=3, sources=("G",),
                                    with_knowledge=False)
    single = index.entity_search("shortness of breath", k=3, sources=("G",), with_knowledge=False)
    assert [h.key for h in many[1]["G"]] == [h.key for h in single["G"]]
    assert abs(many[1]["G"][0].score - single["G"][0].score) < 1e-5
    assert index.entity_search("asthma", min_score=0.99, sources=("B",))["B"][0].key.lower() == "asthma"


def test_chunk_and_document_accessors(index):
    hit = index.search("asthma symptoms", k=1, sources=["B"])[0]
    ch = index.chunk(hit.chunk_id)
    doc = index.document(ch["metadata"]["doc_id"])
    assert doc["text"][ch["metadata"]["start"]:ch["metadata"]["end"]] == ch["text"]
    assert index.chunk("nope#0") is None and index.document("nope") is None
    card = index.search("myocardial infarction", k=1, sources=["G"], filters={"section": "concept card"})[0]
    assert index.document(card.metadata["concept_id"])["text"] == card.text


def test_nci_thesaurus_definitions_are_citable_reference_text(index):
    """The NCIt definitions the graph keeps for its diseases are chunks of their own: the definition's NCIt id as
    the document, the disease as the concept, the NCIt page as the URL, so an answer can quote and cite them."""
    kg = subset.kg()
    hits = index.search("heart attack chest pain", k=50, sources=["G"], filters={"section": "definition"})
    assert hits and all(h.metadata["organisation"] == "NCI Thesaurus" for h in hits)
    h = hits[0]
    doc = index.document(h.metadata["doc_id"])
    assert h.metadata["doc_id"].startswith("NCIT:C") and doc["text"] == h.text
    assert h.metadata["url"].endswith("code=" + h.metadata["doc_id"].split(":")[1])
    concept = kg.concept(h.metadata["concept_id"])
    assert concept.category == "disease"
    assert h.text in [d["text"].strip() for d in concept.definitions]


def test_bm25_tokens():
    assert bm25_tokens("What are the Symptoms of asthma?") == ["symptom", "asthma"]


def test_warm_build_skips_and_rebuild_embeds_nothing(index):
    ix = subset.new_index()
    warm = ix.build(progress=False)
    assert warm["skipped"] and warm["embedded"] == 0
    again = ix.build(progress=False, rebuild=True)
    assert not again["skipped"] and again["embedded"] == 0 and again["cached"] > 0
    assert again["version"] == warm["version"]
    assert ix.open().search("asthma", k=1)


def test_failed_build_leaves_old_index(index):
    ix = subset.new_index()
    version = ix.manifest()["version"]

    def boom(stage):
        if stage == "bm25":
            raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        ix.build(progress=False, rebuild=True, _hook=boom)
    assert ix.manifest()["version"] == version
    fresh = subset.new_index().open()
    assert fresh.search("asthma symptoms", k=3)
    leftovers = [p.name for p in ix.root.parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]
    assert leftovers == []


def test_open_missing_index(tmp_path):
    with pytest.raises(IndexNotBuilt):
        KnowledgeIndex(root=tmp_path / "none").open()
    assert KnowledgeIndex(root=tmp_path / "none").status() == {"built": False, "path": str(tmp_path / "none")}


# ------------------------------------------------------------------------------------------ the store
def test_store_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(50, 16)).astype(np.float32)
    meta = [{"role": "B" if i % 2 else "O", "n": i, "tags": ["x", "y"] if i < 10 else ["z"]} for i in range(50)]
    st = open_store("embedded", path=tmp_path / "s")
    assert isinstance(st, EmbeddedStore)
    st.upsert("c", [f"id{i}" for i in range(50)], vecs, meta)
    hits = st.search("c", vecs[7], k=3)
    assert hits[0].id == "id7" and abs(hits[0].score - 1.0) < 1e-5
    assert all(h.metadata["role"] == "B" for h in st.search("c", vecs[8], k=5, filters={"role": "B"}))
    assert {h.metadata["n"] for h in st.search("c", vecs[0], k=50, filters={"tags": ["x"]})} == set(range(10))
    assert all(h.score >= 0.5 for h in st.search("c", vecs[3], k=50, min_score=0.5))
    st.upsert("c", ["id7", "new"], np.stack([vecs[8], vecs[9]]), [{"role": "O"}, {"role": "O"}])
    st.delete("c", ["id1", "id2", "missing"])
    re = EmbeddedStore(tmp_path / "s")
    assert re.count("c") == 49 and "id1" not in re.ids("c") and "new" in re.ids("c")
    assert re.get("c", ["id7"])[0].metadata == {"role": "O"}
    assert re.search("c", vecs[8], k=2)[0].id in {"id7", "id8"}
    assert re.collections() == ["c"]
    assert not [p for p in (tmp_path / "s").iterdir() if p.name.startswith(".")]
    with pytest.raises(ValueError):
        re.upsert("c", ["a"], np.zeros((1, 8), dtype=np.float32), [{}])
    with pytest.raises(ValueError):
        re.upsert("../evil", ["a"], np.ones((1, 16), dtype=np.float32), [{}])


def test_store_without_autoflush_persists_on_flush(tmp_path):
    st = EmbeddedStore(tmp_path / "s", autoflush=False)
    st.upsert("c", ["a", "b"], np.eye(2, 4, dtype=np.float32), [{}, {}])
    assert EmbeddedStore(tmp_path / "s").count("c") == 0
    st.flush()
    assert EmbeddedStore(tmp_path / "s").count("c") == 2


# --------------------------------------------------------------------------------------------- CLI
def test_cli_search_and_status(index, tmp_path, monkeypatch, capsys):
    from clinicalrag.cli import main

    home = tmp_path / "home"
    monkeypatch.setenv("CLINICALRAG_HOME", str(home))
    assert main(["search", "asthma"]) == 2
    assert "index not built" in capsys.readouterr().err
    shutil.copytree(index.root, home / "build" / "index")
    assert main(["search", "what are the symptoms of asthma", "--k", "3"]) == 0
    out = capsys.readouterr().out
    assert "Asthma" in out and "#" in out and " 1. " in out
    assert main(["search", "flu", "--source", "O", "--json", "--k", "2"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 and all(r["role"] == "O" for r in rows)
    assert main(["search", "heart attack", "--entities", "--k", "2", "--source", "G"]) == 0
    assert "myocardial infarction" in capsys.readouterr().out.lower()
    assert main(["index", "status", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["built"] and st["counts"]["chunks"] == index.status()["counts"]["chunks"]
    assert main(["search", "x", "--k", "0"]) == 2


# ------------------------------------------------------------------------------------------ embeddings
def test_embedder_specs_and_cache(tmp_path):
    from knowledge.embeddings import EmbeddingCache, embed_cached, get_embedder

    with pytest.raises(ValueError):
        get_embedder("nope:model")
    with pytest.raises(ValueError):
        get_embedder("openai:")
    emb = get_embedder("st:")
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    stats: dict = {}
    v = embed_cached(emb, ["heart attack", "myocardial infarction", "heart attack"], cache=cache, stats=stats)
    assert v.shape == (3, emb.dim) and stats == {"embedded": 2, "cached": 1}
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5) and np.allclose(v[0], v[2])
    assert float(v[0] @ v[1]) > 0.5           # synonyms are close in MiniLM space
    stats = {}
    v2 = embed_cached(emb, ["myocardial infarction"], cache=cache, stats=stats)
    assert stats == {"embedded": 0, "cached": 1} and np.allclose(v2[0], v[1])
    assert cache.count(emb.name) == 2
    assert np.allclose(emb.embed_query("myocardial infarction"), v[1], atol=1e-5)


def test_killed_build_keeps_previous_index_and_resumes(index, tmp_path):
    """kill -9 in the middle of a rebuild: the previous index still opens and answers; the next build resumes
    from the vectors the killed one had already embedded and cleans up its leftovers."""
    import subprocess
    import textwrap

    from knowledge.embeddings import EmbeddingCache

    root = tmp_path / "index"
    shutil.copytree(index.root, root)
    before = KnowledgeIndex(root=root, config=subset.config(), kg=subset.kg()).manifest()["version"]
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        import _index_subset as subset
        from knowledge.embeddings import EmbeddingCache
        from knowledge.index import KnowledgeIndex
        cfg = subset.config()
        cfg.dense_max_tokens = 40          # a new index version, whose lead vectors nothing has cached yet
        def hook(stage):
            print(stage, flush=True)
            if stage == "embedded":
                time.sleep(120)
        KnowledgeIndex(root={str(root)!r}, config=cfg, kg=subset.kg(), cache=EmbeddingCache()).build(
            progress=False, rebuild=True, _hook=hook)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    stages = []
    for line in proc.stdout:
        stages.append(line.strip())
        if stages[-1] == "embedded":
            break
    proc.kill()
    proc.wait()
    assert stages[-1] == "embedded", stages
    assert [p for p in root.parent.iterdir() if ".tmp-" in p.name], "the killed build left its work folder"
    old = KnowledgeIndex(root=root, config=subset.config(), kg=subset.kg()).open()
    assert old.manifest()["version"] == before
    assert any("asthma" in _focus(h) for h in old.search("asthma symptoms", k=3))

    cfg = subset.config()
    cfg.dense_max_tokens = 40
    resumed = KnowledgeIndex(root=root, config=cfg, kg=subset.kg(), cache=EmbeddingCache())
    res = resumed.build(progress=False)
    assert not res["skipped"] and res["embedded"] == 0 and res["cached"] > 0
    assert resumed.manifest()["version"] != before
    assert not [p for p in root.parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]
    assert resumed.open().search("asthma symptoms", k=3)


def test_stale_index_is_reported_when_the_graph_changed(index, tmp_path):
    """An index built over an earlier version of the graph (before new edges were mined, say) says so when opened
    with the current graph, and how to fix it; with the graph it was built over it is not stale."""
    assert index.stale() is None
    root = tmp_path / "index"
    shutil.copytree(index.root, root)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["versions"]["kg"] = "0000000000000000+mearlier"        # as written by a build over an older graph
    (root / "manifest.json").write_text(json.dumps(manifest))
    old = KnowledgeIndex(root=root, config=subset.config(), kg=subset.kg())
    reason = old.stale()
    assert reason and "0000000000000000+mearlier" in reason and str(subset.kg().version) in reason
    assert "clinicalrag index build" in reason
    assert old.open().search("asthma", k=1)                            # still usable, only reported


def test_a_text_gets_the_same_vector_whatever_it_is_embedded_with(index):
    """Documents are embedded one per run: in a batch, int8 activation scales would make a text's vector depend on
    its neighbours (and an incremental build would disagree with a fresh one)."""
    emb = index.embedder
    texts = ["Asthma causes wheezing and shortness of breath.",
             "A heart attack happens when blood flow to the heart is blocked for a long time, and part of the heart "
             "muscle is damaged or starts to die.", "Fever.", "Influenza is a contagious respiratory illness."]
    together = emb.embed(texts, max_tokens=48)
    # (one or two threads may run a text, which can move the last float bit; batching moved components by 0.02)
    for i, t in enumerate(texts):
        assert np.allclose(emb.embed([t], max_tokens=48)[0], together[i], atol=1e-5)
    assert np.allclose(emb.embed(texts[::-1], max_tokens=48)[::-1], together, atol=1e-5)
    assert emb.name.endswith("-solo")

"""Corpora B and O from the real MedQuAD tarball (found through the data mirror)."""
from __future__ import annotations

import hashlib
import time
from collections import Counter
from pathlib import Path

import pytest

from knowledge import corpus, paths, sources
from knowledge.tokens import count_tokens, token_offsets


@pytest.fixture(scope="module")
def medquad() -> Path:
    m = paths.default_mirror()
    if m is None:
        pytest.skip("no data mirror configured (set CLINICALRAG_DATA_MIRROR to a folder of <host>/<path> files)")
    p = m / sources.get("medquad").host_path
    if not p.is_file():
        pytest.skip(f"mirror {m} lacks the MedQuAD tarball")
    return p


@pytest.fixture(scope="module")
def all_docs(medquad) -> list[corpus.Document]:
    t0 = time.perf_counter()
    docs = corpus.load_documents(medquad)
    assert time.perf_counter() - t0 < 60      # typically ~2 s; generous for a loaded machine
    return docs


@pytest.fixture(scope="module")
def subset(all_docs) -> list[corpus.Document]:
    # CancerGov and NHLBI answers are long: plenty of multi-chunk documents (interleaved)
    cg = [d for d in all_docs if d.organisation == "CancerGov"][:80]
    nh = [d for d in all_docs if d.organisation == "NHLBI"][:80]
    return [d for pair in zip(cg, nh) for d in pair]


# ------------------------------------------------------------------------------------------ documents
def test_counts_per_role_and_organisation(all_docs):
    roles = Counter(d.role for d in all_docs)
    orgs = Counter(d.organisation for d in all_docs)
    # pinned release: 16,407 <Answer> elements with text + 16 in four old-format NINDS files
    assert len(all_docs) == 16423
    assert roles == {"B": 14403, "O": 2020}
    assert set(orgs) == {"CancerGov", "GARD", "GHR", "NIDDK", "NINDS", "NHLBI", "MPlusHealthTopics", "CDC",
                         "NIHSeniorHealth"}
    assert orgs["GARD"] == 5389 and orgs["CDC"] == 270
    # collections whose answers were removed upstream contribute nothing
    assert not {"ADAM", "MPlusDrugs", "MPlusHerbsSupplements"} & set(orgs)
    assert len({d.doc_id for d in all_docs}) == len(all_docs)


def test_document_fields(all_docs):
    for d in all_docs:
        assert d.text and d.text == d.text.strip()
        assert "  " not in d.text and "\n\n\n" not in d.text and "\t" not in d.text
        assert d.role in ("B", "O") and d.license == "CC-BY-4.0"
        assert d.evidence_type == ("reference fact sheet" if d.role == "B" else "consumer web page")
        assert d.url.startswith("http") and d.question and d.question_type
        assert d.doc_id.startswith(d.organisation + "_")
        assert d.title.startswith(d.focus) and d.question in d.title
    # a few CDC pages have an empty <Focus> upstream: kept, titled by their question
    no_focus = [d for d in all_docs if not d.focus]
    assert len(no_focus) < 20 and {d.organisation for d in no_focus} <= {"CDC"}
    assert all(d.title == d.question for d in no_focus)
    with_cui = sum(1 for d in all_docs if d.focus_cui)
    assert with_cui / len(all_docs) > 0.9


def test_known_documents(all_docs):
    by_id = {d.doc_id: d for d in all_docs}
    aat = by_id["NHLBI_0000001-1"]
    assert aat.focus == "Alpha-1 Antitrypsin Deficiency" and aat.focus_cui == "C0221757"
    assert aat.semantic_types == ("T047",) and aat.semantic_group == "Disorders"
    assert aat.question_type == "information" and "nhlbi.nih.gov" in aat.url
    assert aat.text.startswith("Alpha-1 antitrypsin (an-tee-TRIP-sin) deficiency")
    assert "it's passed from parents" in aat.text            # XML entities decoded
    assert "\n\n" in aat.text                                  # paragraphs kept

    asthma = [d for d in all_docs if d.organisation == "NHLBI" and d.focus.lower() == "asthma"]
    assert asthma, "NHLBI asthma fact sheet not found"
    assert {"information", "symptoms", "treatment"} <= {d.question_type for d in asthma}
    info = next(d for d in asthma if d.question_type == "information")
    assert "airways" in info.text.lower() and info.role == "B"

    # the old lower-case layout (<doc><pair>) of a few NINDS files is parsed too
    holmes = by_id["NINDS_0000007-1"]
    assert holmes.focus == "Holmes-Adie" and "pupil" in holmes.text

    # CancerGov file ids keep their sub-numbering
    assert "CancerGov_0000001_1-1" in by_id


def test_filters_limit_and_default_path(medquad, tmp_path, monkeypatch):
    cdc = corpus.load_documents(medquad, organisations=["CDC"])
    assert len(cdc) == 270 and {d.role for d in cdc} == {"O"}
    only_o = corpus.load_documents(medquad, roles=("O",), limit=50)
    assert len(only_o) == 50 and {d.role for d in only_o} == {"O"}
    # default path: sources.ensure("medquad") fetches from the mirror into a fresh home
    mirror = paths.default_mirror()
    monkeypatch.setenv("CLINICALRAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLINICALRAG_DATA_MIRROR", str(mirror))
    docs = corpus.load_documents(limit=10, organisations=["NHLBI"])
    assert len(docs) == 10 and all(d.organisation == "NHLBI" for d in docs)
    assert sources.local_path("medquad").is_file()


def test_bad_input(medquad, tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"this is not a tarball")
    with pytest.raises(ValueError, match="not a readable MedQuAD tarball"):
        corpus.load_documents(junk)
    with pytest.raises(ValueError, match="unknown role"):
        corpus.load_documents(medquad, roles=("X",))
    with pytest.raises(ValueError, match="unknown organisation"):
        corpus.load_documents(medquad, organisations=["Wikipedia"])


def test_normalise_whitespace():
    raw = "  First line\t of  text.\n        \n   Second  para:    - item one    - item two\r\n\n\n\nEnd.  "
    assert corpus.normalise_whitespace(raw) == (
        "First line of text.\n\nSecond para:\n- item one\n- item two\n\nEnd.")
    assert corpus.normalise_whitespace(" \n\t ") == ""


# ------------------------------------------------------------------------------------------ chunks
def _check_chunks(doc: corpus.Document, chunks: list[corpus.Chunk], max_tokens: int, overlap: float):
    assert chunks, doc.doc_id
    assert [c.chunk_id for c in chunks] == [f"{doc.doc_id}#{i}" for i in range(len(chunks))]
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text and c.text.strip() == c.text and c.text
        assert c.n_tokens == count_tokens(c.text) <= max_tokens
        assert c.content_hash == hashlib.sha256(c.text.encode()).hexdigest()
    # coverage: every token of the answer lies inside some chunk
    spans = [(c.start, c.end) for c in chunks]
    for a, b in token_offsets(doc.text):
        assert any(s <= a and b <= e for s, e in spans), (doc.doc_id, doc.text[a:b])
    # ordered; consecutive chunks overlap when overlap > 0, and never overlap when it is 0
    for prev, nxt in zip(chunks, chunks[1:]):
        assert prev.start < nxt.start and prev.end < nxt.end
        if overlap > 0:
            assert nxt.start < prev.end
        else:
            assert nxt.start >= prev.end


@pytest.mark.parametrize("max_tokens,overlap", [(256, 0.25), (64, 0.25), (100, 0.0)])
def test_chunk_spans_limits_and_coverage(subset, max_tokens, overlap):
    docs = subset[:120] if max_tokens == 256 else subset[:40]
    n_multi = 0
    for doc in docs:
        chunks = corpus.chunk_document(doc, max_tokens=max_tokens, overlap=overlap)
        _check_chunks(doc, chunks, max_tokens, overlap)
        n_multi += len(chunks) > 1
        if count_tokens(doc.text) <= max_tokens:
            assert len(chunks) == 1 and chunks[0].text == doc.text
    assert n_multi >= 10


def test_overlap_is_about_a_quarter(subset):
    ratios = []
    for doc in subset[:80]:
        chunks = corpus.chunk_document(doc)
        for prev, nxt in zip(chunks, chunks[1:]):
            ratios.append(count_tokens(doc.text[nxt.start:prev.end]) / 256)
    assert ratios
    mean = sum(ratios) / len(ratios)
    assert 0.1 <= mean <= 0.4, mean


def test_cuts_prefer_sentence_boundaries(subset):
    ends = []
    for doc in subset:
        for c in corpus.chunk_document(doc)[:-1]:
            ends.append(c.text[-1] in ".!?:" or doc.text[c.end:c.end + 1] == "\n")
    assert len(ends) >= 20
    assert sum(ends) / len(ends) >= 0.8


def test_batch_chunking_matches_single(subset):
    docs = subset[:60]
    batch = corpus.chunk_documents(docs, batch_size=16)
    single = [c for d in docs for c in corpus.chunk_document(d)]
    assert [(c.chunk_id, c.start, c.end, c.n_tokens) for c in batch] == \
           [(c.chunk_id, c.start, c.end, c.n_tokens) for c in single]


def test_chunk_metadata(subset):
    doc = next(d for d in subset if d.organisation == "NHLBI")
    c = corpus.chunk_document(doc)[0]
    meta = c.to_metadata()
    for key in ("chunk_id", "doc_id", "text", "start", "end", "role", "focus", "focus_cui", "section", "question",
                "url", "organisation", "license", "evidence_type", "title", "content_hash", "n_tokens",
                "publisher", "chunk_index", "n_chunks"):
        assert key in meta, key
    assert meta["role"] == "B" and meta["section"] == doc.question_type and meta["license"] == "CC-BY-4.0"
    assert all(isinstance(v, (str, int, float, bool)) for v in meta.values())
    assert "text" not in c.to_metadata(include_text=False)
    with pytest.raises(ValueError):
        corpus.chunk_document(doc, max_tokens=4)


def test_corpus_stats(subset):
    chunks = corpus.chunk_documents(subset[:100])
    st = corpus.corpus_stats(subset[:100], chunks)
    assert st["documents"] == 100 and st["chunks"] == len(chunks) > 100
    assert sum(st["chunks_per_organisation"].values()) == len(chunks)
    assert st["tokens_per_chunk"]["max"] <= 256 and st["documents_split"] > 0
    assert st["documents_per_role"] == {"B": 100}


def test_load_chunks_cache(medquad, tmp_path, monkeypatch):
    monkeypatch.setenv("CLINICALRAG_HOME", str(tmp_path / "home"))
    first = corpus.load_chunks(medquad, organisations=["CDC"])
    files = list((tmp_path / "home" / "build" / "corpus").glob("medquad-chunks-*.jsonl.gz"))
    assert len(files) == 1
    second = corpus.load_chunks(medquad, organisations=["CDC"])
    assert second == first and {c.organisation for c in first} == {"CDC"}
    # different parameters: a different cache entry
    small = corpus.load_chunks(medquad, organisations=["CDC"], max_tokens=128)
    assert len(small) > len(first) and max(c.n_tokens for c in small) <= 128
    assert len(list(files[0].parent.glob("medquad-chunks-*.jsonl.gz"))) == 2
    # a corrupt cache file is ignored and rebuilt
    files[0].write_bytes(b"garbage")
    assert corpus.load_chunks(medquad, organisations=["CDC"]) == first

"""Disease vocabularies on the real mirrored files: the readers (NCIt OBO-graph JSON, Mondo SSSOM tables, MeSH R
data, ICD-10-CM tabular XML, the curated abbreviations) and their merge into DO concepts on a builder holding only
the Disease Ontology (no full knowledge-graph build)."""
from __future__ import annotations

import time

import pytest
from support.data import mirror_file

from knowledge import sources
from knowledge.kg import build, parsers, vocab
from knowledge.kg.builder import Builder

MI, FROZEN_SHOULDER, NEPHROLITHIASIS = "DOID:5844", "DOID:14188", "DOID:585"
SSSOM_FILES = {"mondo-doid": 11966, "mondo-mesh": 8181, "mondo-icd10cm": 2038, "mondo-ncit": 7304,
               "mondo-umls": 21660, "mondo-orphanet": 9785, "mondo-icd11": 4633, "mondo-gard": 15947}


def _timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"\n{label}: {time.perf_counter() - t0:.2f}s")
    return out


def _icd_xml():
    try:
        folder = sources.local_path("icd10cm")
    except ImportError:
        pytest.skip("simple-icd-10-cm is not installed")
    (xml,) = build._files_of("icd10cm", folder)
    return xml


@pytest.fixture(scope="module")
def ncit():
    return _timed("NCIt reader", lambda: parsers.read_obograph(mirror_file("ncit")))


@pytest.fixture(scope="module")
def mondo():
    return {sid: parsers.read_sssom(mirror_file(sid)) for sid in SSSOM_FILES}


@pytest.fixture(scope="module")
def mesh():
    return _timed("MeSH reader", lambda: parsers.read_mesh(mirror_file("mesh-thesaurus"), mirror_file("mesh-trees")))


@pytest.fixture(scope="module")
def icd():
    xml = _icd_xml()
    return _timed("ICD-10-CM reader", lambda: list(parsers.read_icd10cm_tabular(xml)))


@pytest.fixture(scope="module")
def do_builder():
    """A builder holding the Disease Ontology only (terms, 2016 synonyms, cross-references): seconds."""
    b = Builder()
    b.step = lambda msg: None
    build.ingest_disease_ontology(b, mirror_file("do-humando"), mirror_file("do-obo-2016"))
    build.ingest_do_xrefs(b, mirror_file("do-xrefs"))
    return b


@pytest.fixture(scope="module")
def merged(do_builder, ncit, mondo, mesh, icd):
    """The DO builder after the vocabulary step, fed with the files read above."""
    b = do_builder
    merge = vocab.VocabularyMerge(b)
    merge.bridge.add_mondo_doid(mondo["mondo-doid"])
    for prefix, sid in (("MESH", "mondo-mesh"), ("ICD10CM", "mondo-icd10cm"), ("NCI", "mondo-ncit")):
        merge.bridge.add_mondo_matches(prefix, mondo[sid])
    merge.add_abbreviations(parsers.read_abbreviations(build.LOCAL_SOURCES["kg-abbreviations"][0]),
                            "kg-abbreviations")
    merge.add_ncit(ncit, "ncit")
    merge.add_mondo_labels("mondo-doid")
    merge.add_mesh(mesh, "mesh-thesaurus")
    merge.add_icd10cm(icd, "icd10cm")
    added = _timed("merge", merge.apply)
    print("synonyms added per source:", added)
    return b, merge


def _syns(b, doid: str) -> dict[str, tuple[str, str]]:
    a = b.nodes[doid]
    return {s: (sc, src) for s, sc, src in zip(a["synonyms"], a["synonym_scopes"], a["synonym_sources"])}


# ---------------------------------------------------------------- readers
def test_ncit_reader(ncit):
    # the file's 20,385 nodes are 20,324 classes and 61 relation properties (which also carry a definition)
    assert len(ncit) == 20324
    assert sum(1 for t in ncit.values() if t.definition) == 17180
    mi = ncit["NCIT:C27996"]
    assert mi.name == "Myocardial Infarction" and mi.definition.startswith("Gross necrosis of the myocardium")
    assert ("Heart attack", "EXACT") in mi.synonyms or any(s.lower() == "heart attack" for s, _ in mi.synonyms)
    assert all(s == "EXACT" for t in ncit.values() for _, s in t.synonyms)
    assert sum(len(t.parents) for t in ncit.values()) > 20000


def test_mondo_sssom_tables(mondo):
    for sid, n in SSSOM_FILES.items():
        rows = mondo[sid]
        assert len(rows) == n, sid
        assert all(r.subject_id.startswith("MONDO:") and r.subject_label for r in rows[:200]), sid
        pred = "oboInOwl:hasDbXref" if sid == "mondo-gard" else "skos:exactMatch"
        assert {r.predicate_id for r in rows} == {pred}, sid
    assert {r.object_id.split(":")[0] for r in mondo["mondo-mesh"]} == {"mesh"}
    assert any(r.subject_id == "MONDO:0000337" and r.object_id == "ICD10CM:B08.2" for r in mondo["mondo-icd10cm"])
    assert len({r.subject_id for sid in SSSOM_FILES for r in mondo[sid]}) > 24000


def test_sssom_reader_requires_its_columns(tmp_path):
    bad = tmp_path / "bad.sssom.tsv"
    bad.write_text("# curie_map:\nfoo\tbar\n1\t2\n")
    with pytest.raises(ValueError, match="not an SSSOM table"):
        parsers.read_sssom(bad)


def test_mesh_reader(mesh):
    assert len(mesh) == 5131                      # descriptors in the trees C (diseases) and F03 (mental disorders)
    mi = mesh["D009203"]
    assert mi.name == "Myocardial Infarction"
    terms = {t.text: t for t in mi.terms}
    assert terms["Heart Attack"].preferred_concept and not terms["Heart Attack"].permuted
    assert all(any(n.startswith(("C", "F03")) for n in d.tree_numbers) for d in mesh.values())
    bursitis = {t.text: t for t in mesh["D002062"].terms}
    assert not bursitis["Pes Anserine Bursitis"].preferred_concept


def test_mesh_reader_whole_thesaurus():
    everything = parsers.read_mesh(mirror_file("mesh-thesaurus"), mirror_file("mesh-trees"), tree_prefixes=None)
    assert len(everything) == 30764
    assert sum(len(d.terms) for d in everything.values()) == 263936


def test_icd10cm_reader(icd):
    assert len(icd) == 46881
    by_code = {c.code: c for c in icd}
    assert by_code["M75.0"].title == "Adhesive capsulitis of shoulder"
    assert by_code["M75.0"].inclusion_terms == ["Frozen shoulder", "Periarthritis of shoulder"]
    assert by_code["B08.2"].title == "Exanthema subitum [sixth disease]"
    assert by_code["I21"].title == "Acute myocardial infarction"


def test_abbreviation_table_names_do_concepts(do_builder):
    rows = parsers.read_abbreviations(build.LOCAL_SOURCES["kg-abbreviations"][0])
    assert len(rows) >= 100
    assert len({r.abbreviation.casefold() for r in rows}) == len(rows)
    for r in rows:
        if r.concept.startswith("MESH:"):          # a disease added from MeSH: checked on the built graph
            continue
        doid = do_builder.do_id(r.concept)
        assert doid == r.concept, f"{r.abbreviation}: {r.concept} is not a current DO disease"
        assert r.comment, r.abbreviation
    assert {r.abbreviation for r in rows} >= {"MI", "COPD", "PE", "CHF", "GERD", "UTI", "TIA", "SLE", "RA", "AF",
                                               "DKA", "AKI", "CKD", "TB", "HIV", "MS", "OSA", "PCOS"}


def test_mesh_findings_table_names_real_descriptors_mondo_calls_diseases(mesh, mondo):
    """Each row of the curated findings-in-disguise table is a MeSH disease descriptor (its heading as written) that
    Mondo exactly matches — a row the Mondo rule would not reach is dead weight and fails here."""
    from knowledge.kg import mesh_nodes

    kept = mesh_nodes.read_findings()
    assert len(kept) >= 20 and {"D007022", "D015875", "D045602"} <= set(kept)   # hypotension, anisocoria, steatorrhea
    in_mondo = {m.object_id.split(":", 1)[1].upper() for m in mondo["mondo-mesh"] if ":" in m.object_id}
    for ui, name in kept.items():
        assert ui in mesh and mesh[ui].name == name, (ui, name)
        assert ui in in_mondo, (ui, name)


def test_mesh_diagnoses_table_names_real_disease_descriptors_no_ontology_holds(mesh, mondo):
    """Each row of the curated diagnoses-named-like-findings table is a MeSH descriptor in the disease trees (its
    heading as written) that Mondo does not exactly match — a row the Mondo rule already reaches is dead weight —
    unless the heading rule keeps it out."""
    from knowledge.kg import mesh_nodes, parsers

    named = mesh_nodes.read_diagnoses()
    assert {"D020246", "D013617"} <= set(named)          # deep vein thrombosis, supraventricular tachycardia
    in_mondo = {m.object_id.split(":", 1)[1].upper() for m in mondo["mondo-mesh"] if ":" in m.object_id}
    headings = {r[0]: r[1] for r in parsers.read_reasoned_table(mesh_nodes.DIAGNOSES_PATH,
                                                                 ("mesh", "heading", "name", "reason"))}
    # Cushing syndrome: Mondo holds it, but two of its narrower descriptors are DO concepts, so the rule for grouping
    # headings would leave it out
    headed = {"D003480"}
    for ui in named:
        assert ui in mesh and mesh[ui].name == headings[ui], (ui, headings[ui])
        assert any(parsers.under_trees(t, parsers.MESH_DISEASE_TREES) for t in mesh[ui].tree_numbers), ui
        assert ui not in in_mondo or ui in headed, ui


# ---------------------------------------------------------------- merged into DO
def test_mesh_entry_terms_reach_myocardial_infarction(merged):
    b, merge = merged
    assert merge.bridge.resolve("MESH", "D009203")[0] == MI
    syns = _syns(b, MI)
    assert syns["heart attack"][0] == "EXACT"                          # DO's own synonym, kept as it was
    assert syns["Myocardial infarct"] == ("EXACT", "do-obo-2016")
    assert syns["Cardiovascular Stroke"] == ("MAPPED", "mesh-thesaurus")
    assert syns["Heart Attacks"] == ("MAPPED", "mesh-thesaurus")      # a permuted variant in natural order
    assert syns["MI"] == ("ABBREVIATION", "kg-abbreviations")


def test_icd10cm_inclusion_term_reaches_frozen_shoulder(merged):
    b, merge = merged
    assert merge.bridge.resolve("ICD10CM", "M75.0")[0] == FROZEN_SHOULDER
    syns = _syns(b, FROZEN_SHOULDER)
    assert b.nodes[FROZEN_SHOULDER]["name"] == "frozen shoulder"
    assert syns["Adhesive capsulitis of shoulder"] == ("EXACT", "do-obo-2016")      # DO knew the title
    assert syns["Periarthritis of shoulder"] == ("NARROW", "icd10cm")              # the other inclusion term


def test_ncit_synonym_reaches_do_through_mondo(merged):
    b, merge = merged
    direct, via_mondo = merge.bridge.targets("NCI", "C114667")      # NCIt "Nephrolithiasis"
    assert not direct and via_mondo == {NEPHROLITHIASIS}
    assert _syns(b, NEPHROLITHIASIS)["Kidney Stone"] == ("MAPPED", "ncit")
    defs = b.nodes[NEPHROLITHIASIS]["definitions"]
    assert any(d["source"] == "ncit" and d["id"] == "NCIT:C114667" for d in defs)


def test_merge_totals(merged):
    b, _ = merged
    rep = b.report
    assert rep["vocab_synonyms_added_mesh-thesaurus"] > 10000
    assert rep["vocab_synonyms_added_ncit"] > 8000
    assert rep["vocab_synonyms_added_icd10cm"] > 1000
    assert rep["vocab_definitions_added"] > 4000
    for nid, a in b.nodes.items():
        assert len(a["synonyms"]) == len(a["synonym_scopes"]) == len(a["synonym_sources"]), nid
    assert not any(s.lower().startswith("obsolete ") for a in b.nodes.values() for s in a["synonyms"])

"""MeSH diseases the Disease Ontology lacks become concepts of their own (knowledge.kg.mesh_nodes), on a small
hand-made builder: which descriptors get a node, their names, parents and Mondo facts. No data mirror."""
from __future__ import annotations

import pytest

from knowledge.kg import mesh_nodes, vocab
from knowledge.kg.builder import Builder
from knowledge.kg.parsers import Mapping, MeshDescriptor, MeshTerm, Term

HERPES, LIP, PNEUMONIA = "DOID:8566", "DOID:9297", "DOID:552"
BOTULISM, TETANUS = "DOID:11100", "DOID:11338"


def exact(subject: str, obj: str) -> Mapping:
    return Mapping(subject, "", "skos:exactMatch", obj, "", "semapv:ManualMappingCuration")


def desc(ui: str, name: str, trees: list[str], terms: list[tuple[str, bool]] = ()) -> MeshDescriptor:
    """A descriptor; ``terms``: (text, of the preferred concept) besides its own name."""
    return MeshDescriptor(ui, name, trees, [MeshTerm(name, "NON", False, True),
                                            *(MeshTerm(t, "NON", False, pref) for t, pref in terms)])


@pytest.fixture
def b() -> Builder:
    """Five DO diseases (four mapped to MeSH), a Symptom Ontology symptom and an HPO phenotype."""
    b = Builder()
    b.step = lambda msg: None
    for doid, name, mesh in [(HERPES, "herpes simplex", "D006561"), (LIP, "lip disease", "D008047"),
                             (PNEUMONIA, "pneumonia", None), (BOTULISM, "botulism", "D001906"),
                             (TETANUS, "tetanus", "D013742")]:
        a = b.node(doid, "disease", "do-humando", name=name)
        if mesh:
            b.add_xref(a, "MESH", mesh)
    b.node("SYMP:0000634", "symptom", "do-symp", name="leukocytosis")
    b.node("HP:0004936", "phenotype", "hpo", name="Venous thrombosis")
    b.node("MESH:D014008", "symptom", "hsdn", name="Tinea Pedis")
    return b


DESCRIPTORS = {d.id: d for d in [
    desc("D006561", "Herpes Simplex", ["C01.925.256.466.382"]),
    desc("D008047", "Lip Diseases", ["C07.465.409"]),
    desc("D006560", "Herpes Labialis", ["C01.925.256.466.382.316", "C07.465.409.466"],
         [("Cold Sore", True), ("Fever Blister", True), ("Herpes Simplex", False), ("Labial Herpes", False)]),
    desc("D007964", "Leukocytosis", ["C15.378.553.475", "C23.550.526"]),        # a finding by name
    desc("D005334", "Fever", ["C23.888.119.344"]),                               # C23 only
    desc("D020246", "Venous Thrombosis", ["C14.907.355.830.925"]),              # an HPO phenotype's name
    desc("D014008", "Tinea Pedis", ["C01.150.703.302.720.760"]),                # an HSDN symptom node already
    desc("D004216", "Distemper", ["C01.925.782.580.600.500.250", "C22.795.250"]),   # an animal disease
    desc("D004630", "Emergencies", ["C23.550.291.781", "N06.230.100.083"]),   # C23 and a health-care tree only
    desc("D000100", "Respiratory System Abnormalities", ["C08.695"]),          # a grouping heading
    desc("D011014", "Pneumonia", ["C08.381.677"]),                              # named like a DO disease
    desc("D001924", "Brain Concussion", ["C10.228.140.199.444.250"]),          # no ancestor in the graph
    desc("D003015", "Clostridium Infections", ["C01.150.252.410.222"]),        # a genus heading over two ...
    desc("D001906", "Botulism", ["C01.150.252.410.222.151"]),                  # ... diseases DO holds
    desc("D013742", "Tetanus", ["C01.150.252.410.222.864"]),
]}


def run(b: Builder, mondo=None, ncit=None) -> list[str]:
    merge = vocab.VocabularyMerge(b)
    new = mesh_nodes.add_mesh_diseases(b, merge, DESCRIPTORS, mondo, ncit)
    merge.apply()
    return new


def test_only_diagnoses_missing_from_the_graph_get_a_node(b):
    new = run(b)
    assert sorted(new) == ["MESH:D001924", "MESH:D006560"]
    assert b.nodes["MESH:D006560"]["category"] == "disease"
    assert b.nodes["MESH:D014008"]["category"] == "symptom"           # the HSDN symptom is left as it is
    rep = b.report
    assert rep["mesh_nodes_skipped_finding"] == 3                      # leukocytosis, venous thrombosis, tinea pedis
    assert rep["mesh_nodes_skipped_not_a_diagnosis"] == 3              # fever (C23), distemper (C22), emergencies
    assert rep["mesh_nodes_skipped_category"] == 2                     # a grouping heading; Clostridium Infections
    assert rep["mesh_nodes_skipped_named_disease"] == 1                # pneumonia: DO has it by name


def test_names_parents_and_natural_order(b):
    run(b)
    a = b.nodes["MESH:D006560"]
    assert a["name"] == "Herpes Labialis"
    scopes = dict(zip(a["synonyms"], a["synonym_scopes"]))
    assert scopes["Cold Sore"] == vocab.MAPPED and scopes["Labial Herpes"] == vocab.NARROW
    assert "Herpes Simplex" not in scopes                              # another concept's name is not taken
    parents = sorted(v for (u, rel, v) in b.edges if u == "MESH:D006560" and rel == "is_a")
    assert parents == [HERPES, LIP]                                    # the nearest mapped ancestor of each tree
    assert b.edges[("MESH:D006560", "is_a", HERPES)]["source"] == mesh_nodes.TREE_SOURCE
    assert not [1 for (u, rel, _v) in b.edges if u == "MESH:D001924" and rel == "is_a"]
    assert mesh_nodes.display_name("Diverticulosis, Colonic") == "Colonic Diverticulosis"


def test_mondo_gives_identifiers_and_the_ncit_definition(b):
    mondo = {"mondo-mesh": [exact("MONDO:0043653", "MESH:D006560")],
             "mondo-umls": [exact("MONDO:0043653", "UMLS:C0019345")],
             "mondo-ncit": [exact("MONDO:0043653", "NCIT:C34695")],
             "mondo-icd10cm": [exact("MONDO:0043653", "ICD10CM:B00.1")]}
    ncit = {"NCIT:C34695": Term("NCIT:C34695", "Herpes Labialis", definition="A lesion caused by herpes simplex "
                                                                              "virus, involving the lips.")}
    run(b, mondo, ncit)
    a = b.nodes["MESH:D006560"]
    assert a["xrefs"]["MONDO"] == ["0043653"] and a["xrefs"]["UMLS_CUI"] == ["C0019345"]
    assert a["xrefs"]["ICD10CM"] == ["B00.1"]                          # a mark of the commonness prior
    assert a["definitions"][0]["source"] == "ncit" and "lips" in a["definitions"][0]["text"]


def test_mesh_diseases_do_not_make_a_do_concept_a_category():
    assert mesh_nodes.is_mesh_disease("MESH:D006560", "disease")
    assert not mesh_nodes.is_mesh_disease("MESH:D014008", "symptom")
    assert not mesh_nodes.is_mesh_disease("DOID:8566", "disease")


def test_a_finding_name_that_mondo_holds_as_a_disease_gets_a_node(b):
    """Venous thrombosis is an HPO phenotype's name; with a Mondo exact match (a disease ontology holds it as a
    disease) the descriptor becomes a disease node all the same — without Mondo it stays a finding (above)."""
    new = run(b, {"mondo-mesh": [exact("MONDO:0005", "MESH:D020246")]})
    assert "MESH:D020246" in new and b.nodes["MESH:D020246"]["category"] == "disease"
    assert b.nodes["MESH:D020246"]["name"] == "Venous Thrombosis"
    assert b.nodes["HP:0004936"]["category"] == "phenotype"          # the phenotype stays as it is
    assert b.report["mesh_nodes_finding_named_diagnoses"] == 1
    assert b.report["mesh_nodes_skipped_finding"] == 2                 # leukocytosis, tinea pedis (no Mondo match)


def test_a_curated_finding_stays_a_finding_whatever_mondo_says(b, tmp_path):
    table = tmp_path / "findings.tsv"
    table.write_text("# comment\nmesh\tname\treason\nD020246\tVenous Thrombosis\ta sign, for this test\n")
    kept = mesh_nodes.read_findings(table)
    assert kept == {"D020246": "Venous Thrombosis"}
    merge = vocab.VocabularyMerge(b)
    new = mesh_nodes.add_mesh_diseases(b, merge, DESCRIPTORS, {"mondo-mesh": [exact("MONDO:0005", "MESH:D020246")]},
                                       None, kept)
    assert "MESH:D020246" not in new and b.report["mesh_nodes_skipped_finding"] == 3


def test_the_findings_table_format_is_checked(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("ui\tname\treason\n")
    with pytest.raises(ValueError, match="header"):
        mesh_nodes.read_findings(bad)
    bad.write_text("mesh\tname\treason\nD020246\tVenous Thrombosis\t\n")
    with pytest.raises(ValueError, match="reason"):
        mesh_nodes.read_findings(bad)
    assert len(mesh_nodes.read_findings()) >= 20                       # the shipped table reads


def test_a_curated_diagnosis_named_like_a_finding_gets_a_node_under_its_clinical_name(b, tmp_path):
    """Without Mondo, Venous Thrombosis stays a finding (above); the curated table of diagnoses gives it a node
    under the name clinicians use, and the phenotype of the same name stays a finding."""
    table = tmp_path / "diagnoses.tsv"
    table.write_text("# comment\nmesh\theading\tname\treason\n"
                     "D020246\tVenous Thrombosis\tdeep vein thrombosis\ta diagnosis, for this test\n")
    named = mesh_nodes.read_diagnoses(table)
    assert named == {"D020246": "deep vein thrombosis"}
    merge = vocab.VocabularyMerge(b)
    new = mesh_nodes.add_mesh_diseases(b, merge, DESCRIPTORS, None, None, (), named)
    merge.apply()
    assert "MESH:D020246" in new and b.nodes["MESH:D020246"]["category"] == "disease"
    assert b.nodes["MESH:D020246"]["name"] == "deep vein thrombosis"
    assert b.nodes["HP:0004936"]["category"] == "phenotype"
    assert b.report["mesh_nodes_curated_diagnoses"] == 1
    assert b.report["mesh_nodes_skipped_finding"] == 2                 # leukocytosis, tinea pedis
    # a row the curated findings table also keeps stays a finding: the two tables never fight silently
    b2 = Builder()
    b2.step = lambda msg: None
    b2.node("HP:0004936", "phenotype", "hpo", name="Venous thrombosis")
    new2 = mesh_nodes.add_mesh_diseases(b2, vocab.VocabularyMerge(b2), DESCRIPTORS, None, None, {"D020246"}, named)
    assert "MESH:D020246" not in new2


"""Disease vocabularies merged into DO concepts (knowledge.kg.vocab), on a small hand-made builder; the R data
reader (knowledge.kg.rds) on a hand-written file. No data mirror, no knowledge graph build."""
from __future__ import annotations

import gzip
import struct

import pytest

from knowledge.kg import build, mesh_nodes, rds, vocab
from knowledge.kg.builder import Builder
from knowledge.kg.graph import KnowledgeGraph
from knowledge.kg.parsers import Abbreviation, IcdCode, Mapping, MeshDescriptor, MeshTerm, Term

MI, ACUTE_MI, ASTHMA, SHOULDER, BURSITIS, STONE = ("DOID:5844", "DOID:9408", "DOID:2841", "DOID:14188",
                                                  "DOID:2965", "DOID:585")


def exact(subject: str, obj: str, label: str = "", obj_label: str = "") -> Mapping:
    return Mapping(subject, label, "skos:exactMatch", obj, obj_label, "semapv:ManualMappingCuration")


@pytest.fixture
def b() -> Builder:
    """Six DO concepts with a few DO synonyms and cross-references, as the DO steps of the build leave them."""
    b = Builder()
    b.step = lambda msg: None
    for doid, name, xrefs, syns in [
        (MI, "myocardial infarction", {"MESH": ["D009203"], "ICD10CM": ["I21"]}, ["heart attack"]),
        (ACUTE_MI, "acute myocardial infarction", {"ICD10CM": ["I21.9"]}, []),
        (ASTHMA, "asthma", {"MESH": ["D001249"], "ICD10CM": ["J45"]}, []),
        (SHOULDER, "frozen shoulder", {"ICD10CM": ["M75.0"]}, []),
        (BURSITIS, "bursitis", {"MESH": ["D002062"], "ICD10CM": ["M71.9"]}, []),
        (STONE, "nephrolithiasis", {}, []),
        (build.DO_ROOT, "disease", {}, []),
    ]:
        a = b.node(doid, "disease", "do-humando", name=name, definition=f"DO definition of {name}")
        for prefix, locals_ in xrefs.items():
            for local in locals_:
                b.add_xref(a, prefix, local)
        for s in syns:
            b.add_synonym(a, s, "EXACT", "do-obo-2016")
    return b


def synonyms(b: Builder, doid: str) -> dict[str, tuple[str, str]]:
    """synonym -> (scope, source) of one concept."""
    a = b.nodes[doid]
    assert len(a["synonyms"]) == len(a["synonym_scopes"]) == len(a["synonym_sources"])
    return {s: (sc, src) for s, sc, src in zip(a["synonyms"], a["synonym_scopes"], a["synonym_sources"])}


def mesh(ui: str, name: str, terms: list[tuple[str, str, bool, bool]]) -> MeshDescriptor:
    return MeshDescriptor(ui, name, ["C00"], [MeshTerm(t, tag, perm, pref) for t, tag, perm, pref in terms])


# ---------------------------------------------------------------- name clean-up
@pytest.mark.parametrize("text,expected", [
    ("Acute myocardial infarction, unspecified", [("Acute myocardial infarction", "MAPPED")]),
    ("Exanthema subitum [sixth disease]", [("Exanthema subitum", "MAPPED"), ("sixth disease", "MAPPED")]),
    ("Herpesviral [herpes simplex] infections", [("herpes simplex infections", "MAPPED")]),
    ("Immune reconstitution inflammatory syndrome [IRIS]",
     [("Immune reconstitution inflammatory syndrome", "MAPPED"), ("IRIS", "ABBREVIATION")]),
    ("Nonrheumatic mitral (valve) regurgitation NOS", [("Nonrheumatic mitral regurgitation", "MAPPED")]),
    ("Infective (teno)synovitis", [("Infective synovitis", "MAPPED"), ("Infective tenosynovitis", "MAPPED")]),
    ("Bronchitis, not specified as acute or chronic", [("Bronchitis", "MAPPED")]),
    ("Diarrhea NOS", [("Diarrhea", "MAPPED")]),
    ("Other specified disorders of bursa", []),
    ("Poisoning by insulin, not elsewhere classified", []),
    ("Bacterial infection NEC", []),
    ("Adhesive capsulitis of unspecified shoulder", []),
])
def test_icd_names(text, expected):
    assert vocab.icd_names(text) == expected


def test_icd_inclusion_terms_take_the_given_scope():
    assert vocab.icd_names("Frozen shoulder", vocab.NARROW) == [("Frozen shoulder", "NARROW")]
    assert vocab.icd_names("Syndrome [ABC]", vocab.NARROW) == [("Syndrome", "NARROW"), ("ABC", "NARROW")]


def test_mesh_names():
    assert mesh_nodes.mesh_names(MeshTerm("Asthma, Bronchial", "NON", False, True)) == [
        ("Asthma, Bronchial", "MAPPED"), ("Bronchial Asthma", "MAPPED")]
    assert mesh_nodes.mesh_names(MeshTerm("Infarction, Myocardial", "NON", True, True)) == []   # permuted, inverted
    assert mesh_nodes.mesh_names(MeshTerm("Heart Attacks", "NON", True, True)) == [("Heart Attacks", "MAPPED")]
    assert mesh_nodes.mesh_names(MeshTerm("NIDDM", "ABB", False, True)) == [("NIDDM", "ABBREVIATION")]
    assert mesh_nodes.mesh_names(MeshTerm("Pes Anserine Bursitis", "NON", False, False)) == [
        ("Pes Anserine Bursitis", "NARROW")]


@pytest.mark.parametrize("text,expected", [("COPD", True), ("AFib", True), ("DFNB49", True), ("MI", True),
                                           ("Asthma", False), ("heart attack", False), ("A", False)])
def test_looks_like_abbreviation(text, expected):
    assert vocab.looks_like_abbreviation(text) is expected


# ---------------------------------------------------------------- mapping
def test_bridge_direct_mondo_and_ambiguity(b):
    merge = vocab.VocabularyMerge(b)
    br = merge.bridge
    br.add_mondo_doid([exact("MONDO:1", STONE, "nephrolithiasis"), exact("MONDO:2", MI, "myocardial infarction"),
                       exact("MONDO:3", ACUTE_MI, "acute myocardial infarction"),
                       exact("MONDO:9", "DOID:999999", "unknown to DO"),
                       exact("MONDO:8", ASTHMA, "obsolete asthma")])
    br.add_mondo_matches("NCI", [exact("MONDO:1", "NCIT:C114667"), exact("MONDO:2", "NCIT:C27996"),
                                 exact("MONDO:3", "NCIT:C27996")])
    assert br.resolve("MESH", "D009203") == (MI, "unique")                   # DO's own cross-reference
    assert br.resolve("NCI", "C114667") == (STONE, "unique")                 # through Mondo
    assert br.resolve("NCI", "C27996") == (None, "ambiguous")                # two DO concepts
    assert br.resolve("NCI", "C27996", ["Acute Myocardial Infarction"]) == (ACUTE_MI, "by name")
    assert br.resolve("ICD10CM", "Z99") == (None, "unmapped")
    assert "MONDO:8" not in br.mondo_do                                      # obsolete Mondo classes are ignored
    assert b.report["vocab_mondo_do_unknown_doid"] == 1


# ---------------------------------------------------------------- merging
def test_mesh_entry_terms_become_synonyms(b):
    merge = vocab.VocabularyMerge(b)
    merge.add_mesh({"D009203": mesh("D009203", "Myocardial Infarction", [
        ("Myocardial Infarction", "NON", False, True), ("Infarction, Myocardial", "NON", True, True),
        ("Heart Attack", "NON", False, True), ("Heart Attacks", "NON", True, True),
        ("Myocardial Infarct", "NON", False, True)])}, "mesh-thesaurus")
    added = merge.apply()
    syns = synonyms(b, MI)
    assert syns["Heart Attacks"] == ("MAPPED", "mesh-thesaurus")
    assert syns["Myocardial Infarct"] == ("MAPPED", "mesh-thesaurus")
    assert "Heart Attack" not in syns and "Myocardial Infarction" not in syns     # same name as one it has
    assert syns["heart attack"] == ("EXACT", "do-obo-2016")
    assert added == {"mesh-thesaurus": 2} and "mesh-thesaurus" in b.nodes[MI]["sources"]
    assert b.report["vocab_mesh_descriptors_unique"] == 1


def test_names_of_other_concepts_and_ambiguous_names_are_not_added(b):
    merge = vocab.VocabularyMerge(b)
    merge.add_mesh({
        # "Frozen Shoulder" is DO's name of another concept; "Adhesive Capsulitis" only MeSH knows (narrower)
        "D002062": mesh("D002062", "Bursitis", [("Bursitis", "NON", False, True),
                                                ("Frozen Shoulder", "NON", False, False),
                                                ("Adhesive Capsulitis", "NON", False, False),
                                                ("Subacromial Bursitis", "NON", False, False)]),
        "D001249": mesh("D001249", "Asthma", [("Asthma", "NON", False, True), ("Wheezy Thing", "NON", False, True)]),
    }, "mesh-thesaurus")
    # an NCIt-like proposal of the same name for another concept makes it ambiguous
    merge.propose(MI, [("Wheezy Thing", "MAPPED")], "ncit")
    # a narrower name gives way to a synonym proposed for another concept
    merge.propose(SHOULDER, [("Adhesive Capsulitis", "MAPPED")], "icd10cm")
    merge.apply()
    assert "Frozen Shoulder" not in synonyms(b, BURSITIS)
    assert "Subacromial Bursitis" in synonyms(b, BURSITIS)
    assert "Adhesive Capsulitis" not in synonyms(b, BURSITIS)
    assert synonyms(b, SHOULDER)["Adhesive Capsulitis"] == ("MAPPED", "icd10cm")
    assert "Wheezy Thing" not in synonyms(b, ASTHMA) and "Wheezy Thing" not in synonyms(b, MI)
    assert b.report["vocab_synonyms_skipped_naming_other_concept"] == 1
    assert b.report["vocab_synonyms_skipped_ambiguous"] == 3


def test_ncit_through_mondo_with_definition(b):
    merge = vocab.VocabularyMerge(b)
    merge.bridge.add_mondo_doid([exact("MONDO:1", STONE, "nephrolithiasis")])
    merge.bridge.add_mondo_matches("NCI", [exact("MONDO:1", "NCIT:C114667")])
    term = Term(id="NCIT:C114667", name="Nephrolithiasis", definition="Stones in the kidney.",
                synonyms=[("Kidney Stone", "EXACT"), ("Renal Calculi", "EXACT"), ("Stone", "RELATED")])
    unmapped = Term(id="NCIT:C1", name="Something Else", synonyms=[("Other Name", "EXACT")])
    merge.add_ncit({t.id: t for t in (term, unmapped)}, "ncit")
    merge.add_mondo_labels("mondo-doid")
    merge.add_mondo_ids("mondo-doid")
    merge.apply()
    syns = synonyms(b, STONE)
    assert syns["Kidney Stone"] == ("MAPPED", "ncit") and "Renal Calculi" in syns and "Stone" not in syns
    a = b.nodes[STONE]
    assert a["definition"] == "DO definition of nephrolithiasis"           # DO's own definition stays
    assert a["definitions"] == [{"text": "Stones in the kidney.", "source": "ncit", "id": "NCIT:C114667"}]
    assert a["xrefs"]["MONDO"] == ["1"] and {"ncit", "mondo-doid"} <= set(a["sources"])
    assert b.report["vocab_ncit_classes_unmapped"] == 1
    assert all("Other Name" not in x["synonyms"] for x in b.nodes.values())


def test_icd_codes_mapping_to_exactly_one_concept(b):
    b.add_xref(b.nodes[ACUTE_MI], "ICD10CM", "I21")          # I21 now names two DO concepts: not used
    merge = vocab.VocabularyMerge(b)
    merge.add_icd10cm([
        IcdCode("M75.0", "Adhesive capsulitis of shoulder", ["Frozen shoulder", "Periarthritis of shoulder"]),
        IcdCode("I21", "Acute myocardial infarction", ["Cardiac infarction"]),
        IcdCode("J45", "Asthma", []),
        IcdCode("J45.909", "Unspecified asthma, uncomplicated", []),
    ], "icd10cm")
    merge.apply()
    syns = synonyms(b, SHOULDER)
    assert syns["Adhesive capsulitis of shoulder"] == ("MAPPED", "icd10cm")
    assert syns["Periarthritis of shoulder"] == ("NARROW", "icd10cm")
    assert "Frozen shoulder" not in syns                                     # the concept's own name
    assert "Cardiac infarction" not in synonyms(b, MI) and "Cardiac infarction" not in synonyms(b, ACUTE_MI)
    assert synonyms(b, ASTHMA) == {}
    assert b.report["vocab_icd10cm_codes_ambiguous"] == 1 and b.report["vocab_icd10cm_codes_mapped"] == 2


def test_do_diseases_without_a_code_take_one_by_name_or_from_mondo(b):
    """A DO disease no cross-reference gives an ICD-10-CM code takes the one Mondo matches exactly to it, else the
    one whose cleaned title is its own name or exact synonym -- never a code another concept holds or a name two
    concepts share."""
    b.add_synonym(b.nodes[STONE], "kidney stone", "EXACT", "do-obo-2016")
    hay = b.node("DOID:4481", "disease", "do-humando", name="allergic rhinitis")
    b.add_synonym(hay, "hay fever", "EXACT", "do-obo-2016")
    b.node("DOID:9", "disease", "do-humando", name="rhinitis")
    b.node("DOID:10", "disease", "do-humando", name="rhinitis, unspecified")     # a name two codes could meet
    merge = vocab.VocabularyMerge(b)
    merge.bridge.add_mondo_doid([exact("MONDO:1", "DOID:9", "rhinitis")])
    merge.add_mondo_xrefs("ICD10CM", [exact("MONDO:1", "ICD10CM:J31.0", "rhinitis")], "mondo-icd10cm")
    unmapped = merge.add_icd10cm([
        IcdCode("N20.0", "Calculus of kidney", ["Kidney stone", "Nephrolithiasis NOS"]),
        IcdCode("J30.9", "Allergic rhinitis, unspecified", []),
        IcdCode("J30.1", "Allergic rhinitis due to pollen", ["Hay fever"]),
        IcdCode("J45.20", "Mild intermittent asthma, uncomplicated", ["Asthma"]),
    ], "icd10cm")
    assert merge.add_icd10cm_by_name(unmapped, "icd10cm") == 2
    merge.apply()
    icd = lambda doid: b.nodes[doid]["xrefs"].get("ICD10CM", [])     # noqa: E731
    assert sorted(icd(STONE)) == ["N20.0"] and "icd10cm" in b.nodes[STONE]["sources"]
    assert sorted(icd("DOID:4481")) == ["J30.1", "J30.9"]
    assert icd("DOID:9") == ["J31.0"]                      # from Mondo
    assert icd(ASTHMA) == ["J45"]                         # its own code: no second one by name
    assert b.report["vocab_icd10cm_codes_by_name"] == 2


def test_curated_abbreviations_claim_their_names(b):
    merge = vocab.VocabularyMerge(b)
    merge.add_abbreviations([Abbreviation("MI", MI, "myocardial infarction", "common clinical usage"),
                             Abbreviation("XYZ", "DOID:424242", "unknown", "")], "kg-abbreviations")
    merge.propose(ACUTE_MI, [("MI", "ABBREVIATION")], "ncit")
    merge.apply()
    assert synonyms(b, MI)["MI"] == ("ABBREVIATION", "kg-abbreviations")
    assert "MI" not in synonyms(b, ACUTE_MI)
    assert b.report["vocab_abbreviations_unknown_doid"] == 1


def test_curated_clinical_names_claim_their_names_with_their_scope(b):
    """A clinical name joins its concept with the scope of its kind, before a vocabulary that gives the same name to
    another concept; a DO id the graph lacks and a finding are counted and left out; the extractor's vocabulary does
    not read the names."""
    b.node("HP:0100806", "phenotype", "hpo", name="Sepsis")
    merge = vocab.VocabularyMerge(b)
    merge.add_clinical_names([("kidney stone attack", STONE, "NARROW"), ("heart attack, acute", ACUTE_MI, "MAPPED"),
                              ("ghost disease", "DOID:424242", "MAPPED"), ("sepsis", "HP:0100806", "MAPPED")],
                             "kg-clinical-names")
    merge.propose(MI, [("heart attack, acute", "MAPPED")], "ncit")
    merge.apply()
    assert synonyms(b, STONE)["kidney stone attack"] == ("NARROW", "kg-clinical-names")
    assert synonyms(b, ACUTE_MI)["heart attack, acute"] == ("MAPPED", "kg-clinical-names")
    assert "heart attack, acute" not in synonyms(b, MI)
    assert b.nodes["HP:0100806"]["synonyms"] == []
    assert b.report["vocab_clinical_names_unknown_concept"] == 2
    kg = KnowledgeGraph(build.assemble(b.nodes.items(), []), "test")
    assert [c.id for c in kg.lookup("kidney stone attack")] == [STONE]
    assert next(e for e in kg.vocabulary() if e.id == STONE).synonyms == []


def test_xref_errata_take_a_cross_reference_off_before_the_vocabularies_map_through_it(b, tmp_path):
    """A cross-reference the errata list is removed (the prefix too when it was the last), so the MeSH descriptor no
    longer maps to that concept; a row the graph does not carry is counted."""
    table = tmp_path / "xref_errata.tsv"
    table.write_text("concept\txref\treason\n"
                     f"{ASTHMA}\tMESH:D001249\twrong descriptor\n"
                     f"{ASTHMA}\tICD10CM:J99\tnot carried\n")
    build.remove_xref_errata(b, table)
    assert "MESH" not in b.nodes[ASTHMA]["xrefs"] and b.nodes[ASTHMA]["xrefs"]["ICD10CM"] == ["J45"]
    assert b.report["xref_errata_removed"] == 1 and b.report["xref_errata_unmatched"] == 1
    assert vocab.VocabularyMerge(b).bridge.resolve("MESH", "D001249")[0] is None


def test_root_and_taken_xrefs_are_left_alone(b):
    b.add_xref(b.nodes[ASTHMA], "UMLS_CUI", "C0004096")
    merge = vocab.VocabularyMerge(b)
    merge.bridge.add_mondo_doid([exact("MONDO:0000001", build.DO_ROOT, "disease"), exact("MONDO:5", MI, "MI")])
    merge.add_mondo_labels("mondo-doid")
    merge.add_mondo_xrefs("UMLS_CUI", [exact("MONDO:5", "UMLS:C0004096"), exact("MONDO:5", "UMLS:C0027051")],
                          "mondo-umls")
    merge.apply()
    assert b.nodes[build.DO_ROOT]["synonyms"] == []
    assert b.nodes[MI]["xrefs"]["UMLS_CUI"] == ["C0027051"]
    assert b.report["vocab_xrefs_skipped_taken"] == 1


def test_lookup_ranks_merged_names_after_exact_synonyms(b):
    b.node("DOID:1", "disease", "do-humando", name="cardiac thing")
    b.add_synonym(b.nodes["DOID:1"], "heart attack variant", "RELATED", "do-obo-2016")
    b.add_synonym(b.nodes[MI], "heart attack variant", "MAPPED", "mesh-thesaurus")
    b.add_synonym(b.nodes[ACUTE_MI], "heart attack", "MAPPED", "ncit")
    b.add_synonym(b.nodes[ACUTE_MI], "AMI", "ABBREVIATION", "kg-abbreviations")
    kg = KnowledgeGraph(build.assemble(b.nodes.items(), []), "test")
    assert [c.id for c in kg.lookup("heart attack")] == [MI, ACUTE_MI]             # EXACT before MAPPED
    assert [c.id for c in kg.lookup("heart attack variant")] == [MI, "DOID:1"]     # MAPPED before RELATED
    assert [c.id for c in kg.lookup("ami")] == [ACUTE_MI]
    vocab_entry = next(e for e in kg.vocabulary() if e.id == ACUTE_MI)
    assert vocab_entry.synonyms == []                                               # extractor: DO's own names
    wide = next(e for e in kg.vocabulary(scopes=("EXACT", "MAPPED", "ABBREVIATION")) if e.id == ACUTE_MI)
    assert wide.synonyms == ["heart attack", "AMI"]


def test_default_sources_switch_individually():
    ids = build.resolve_sources(None, False)
    assert set(vocab.VOCAB_SOURCES) <= set(ids)
    without = build.resolve_sources([s for s in ids if s != "ncit"], False)
    assert "ncit" not in without and "mesh-thesaurus" in without
    assert build.locate(["kg-abbreviations"])["kg-abbreviations"].name == "abbreviations.tsv"


# ---------------------------------------------------------------- R data reader
def _xdr_data_frame(columns: dict[str, list]) -> bytes:
    """A gzipped .rds of a data frame, written the way R's serialize() writes version 3 (XDR)."""
    out = bytearray(b"X\n")

    def i(v: int) -> None:
        out.extend(struct.pack(">i", v))

    def charsxp(s: str | None) -> None:
        if s is None:
            i(9)
            i(-1)
            return
        raw = s.encode("utf-8")
        i(9 | (1 << 3) << 12)          # CHARSXP, UTF-8
        i(len(raw))
        out.extend(raw)

    def strsxp(values: list) -> None:
        i(16)
        i(len(values))
        for v in values:
            charsxp(v)

    def symbol(name: str) -> None:
        i(1)
        charsxp(name)

    for v in (3, 0x040300, 0x030500):
        i(v)
    i(5)
    out.extend(b"UTF-8")
    i(19 | 1 << 8 | 1 << 9)            # VECSXP, object, with attributes
    i(len(columns))
    for values in columns.values():
        if isinstance(values, range):  # R >= 3.5 writes 1:n compactly ("ALTREP" compact_intseq)
            i(238)
            for sym in ("compact_intseq", "base"):
                i(2)
                symbol(sym)
            i(2)
            i(13)
            i(1)
            i(13)
            i(254)
            i(14)
            i(3)
            out.extend(struct.pack(">3d", len(values), values.start, values.step))
            i(254)
        elif all(isinstance(v, int) or v is None for v in values):
            i(13)
            i(len(values))
            for v in values:
                i(rds.NA_INTEGER if v is None else v)
        else:
            strsxp(values)
    # attributes: names, class, row.names (compact form c(NA, -n))
    n = len(next(iter(columns.values())))
    i(2 | 1 << 10)
    symbol("names")
    strsxp(list(columns))
    i(2 | 1 << 10)
    symbol("class")
    strsxp(["data.frame"])
    i(2 | 1 << 10)
    symbol("row.names")
    i(13)
    i(2)
    i(rds.NA_INTEGER)
    i(-n)
    i(254)
    return gzip.compress(bytes(out))


def test_rds_data_frame(tmp_path):
    path = tmp_path / "frame.rds"
    path.write_bytes(_xdr_data_frame({"ui": ["D1", "D2", None], "name": ["Asthma", "Café", "x"],
                                      "count": [1, None, 3], "seq": range(1, 4)}))
    assert rds.read_data_frame(path) == {"ui": ["D1", "D2", None], "name": ["Asthma", "Café", "x"],
                                         "count": [1, None, 3], "seq": [1, 2, 3]}
    assert rds.read_data_frame(path, ["name"]) == {"name": ["Asthma", "Café", "x"]}
    with pytest.raises(rds.RdsError, match="no column"):
        rds.read_data_frame(path, ["nope"])
    obj = rds.read_rds(path)
    assert obj.attr("class").value == ["data.frame"]


def test_rds_rejects_other_formats(tmp_path):
    path = tmp_path / "ascii.rds"
    path.write_bytes(gzip.compress(b"A\n3\n"))
    with pytest.raises(rds.RdsError, match="XDR"):
        rds.read_rds(path)


def test_a_viral_infection_is_also_named_by_its_virus(b):
    """"infected with the human immunodeficiency virus": the virus names its infection (a related name, which the
    entity extractor reads); a virus two concepts are named after names neither."""
    hiv = b.node("DOID:526", "disease", "do-humando", name="human immunodeficiency virus infectious disease")
    hcv = b.node("DOID:1883", "disease", "do-humando", name="hepatitis C")
    b.add_synonym(hcv, "Hepatitis C virus infection", "EXACT", "do-humando")
    for doid, name in (("DOID:9001", "xyz virus infection"), ("DOID:9002", "xyz virus infectious disease")):
        b.node(doid, "disease", "do-humando", name=name)
    merge = vocab.VocabularyMerge(b)
    merge.add_virus_names(vocab.VIRUS_NAMES_SOURCE)
    merge.apply()
    assert synonyms(b, "DOID:526")["human immunodeficiency virus"][0] == "RELATED"
    assert "Hepatitis C virus" in hcv["synonyms"]
    assert "xyz virus" not in b.nodes["DOID:9001"]["synonyms"] + b.nodes["DOID:9002"]["synonyms"]
    assert not any("virus" in s for s in b.nodes[ASTHMA]["synonyms"])


def test_synonym_errata_take_the_equivalence_they_drew_with_them(tmp_path):
    """A name-made equivalence that rested on the withdrawn synonym alone goes (both ways); one the two concepts'
    remaining names still support stays, and so does one drawn by a shared code."""
    b = Builder()
    b.step = lambda msg: None
    symp = b.node("SYMP:1", "symptom", "do-symp", name="diarrhea")
    b.add_synonym(symp, "fecal incontinence", "EXACT", "do-symp")
    b.node("HP:1", "phenotype", "hpo", name="Bowel incontinence")
    b.add_synonym(b.nodes["HP:1"], "Fecal incontinence", "EXACT", "hpo")
    b.node("HP:2", "phenotype", "hpo", name="Diarrhea")
    b.node("HP:3", "phenotype", "hpo", name="Watery stools")
    for h, method in (("HP:1", "name"), ("HP:2", "name"), ("HP:3", "UMLS_CUI")):
        b.edge("SYMP:1", "xref", h, "do-symp", method=method)
        b.edge(h, "xref", "SYMP:1", "do-symp", method=method)
    table = tmp_path / "synonym_errata.tsv"
    table.write_text("concept\tsynonym\treason\nSYMP:1\tfecal incontinence\tnot diarrhoea\n")
    build.remove_synonym_errata(b, table)
    xrefs = {(u, v) for (u, rel, v) in b.edges if rel == "xref"}
    assert ("SYMP:1", "HP:1") not in xrefs and ("HP:1", "SYMP:1") not in xrefs
    assert {("SYMP:1", "HP:2"), ("HP:2", "SYMP:1"), ("SYMP:1", "HP:3"), ("HP:3", "SYMP:1")} <= xrefs
    assert b.report["synonym_errata_removed"] == 1 and b.report["xref_errata_unlinked"] == 2



def test_xref_errata_of_a_phenotype_wait_for_hpo(b, tmp_path):
    """The disease pass leaves an HPO row alone (HPO is not read yet) and counts nothing for it; the phenotype pass,
    run once HPO is read, takes the code off the phenotype."""
    table = tmp_path / "xref_errata.tsv"
    table.write_text("concept\txref\treason\n"
                     f"{ASTHMA}\tMESH:D001249\twrong descriptor\n"
                     "HP:0010783\tUMLS_CUI:C0016382\tflushing's concept\n")
    build.remove_xref_errata(b, table)
    assert b.report["xref_errata_removed"] == 1 and not b.report.get("xref_errata_unmatched")
    hp = b.node("HP:0010783", "phenotype", "hpo", name="Erythema")
    b.add_xref(hp, "UMLS_CUI", "C0016382")
    b.add_xref(hp, "UMLS_CUI", "C0041834")
    build.remove_xref_errata(b, table, phenotypes=True)
    assert b.nodes["HP:0010783"]["xrefs"]["UMLS_CUI"] == ["C0041834"]
    assert b.report["xref_errata_removed"] == 2 and not b.report.get("xref_errata_unmatched")

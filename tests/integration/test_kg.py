"""Knowledge graph (source G) on the real sources: built once per test session in a temporary home."""
from __future__ import annotations

import json
import shutil
import time

import pytest

from knowledge import sources
from knowledge.kg import (CATEGORIES, RELATIONS, BuildError, KnowledgeGraph, Triple, artefact_path,
                          load_or_build, normalise)
from knowledge.kg import build as kg_build
from knowledge.kg import mesh_nodes, parsers, vocab

ASTHMA = "DOID:2841"
MI = "DOID:5844"
MARFAN = "DOID:14323"
SYMP_FEVER = "SYMP:0000613"
HP_FEVER = "HP:0001945"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("crag-home")
        mp.setenv("CLINICALRAG_HOME", str(path))
        yield path


@pytest.fixture(scope="module")
def kg(home) -> KnowledgeGraph:
    t0 = time.perf_counter()
    graph = load_or_build()
    print(f"\nKG build: {time.perf_counter() - t0:.1f}s, {graph.graph.number_of_nodes()} nodes, "
          f"{graph.graph.number_of_edges()} edges")
    return graph


def _ids(concepts):
    return [c.id for c in concepts]


# ---------------------------------------------------------------- pure helpers
@pytest.mark.parametrize("a,b", [("Asthma", "asthma"), ("asthma.", "asthma"), ("  Asthma  ", "asthma"),
                                 ("type-2 diabetes", "type 2 diabetes"), ("Type II diabetes", "type 2 diabetes"),
                                 ("Alzheimer's disease", "alzheimer disease"), ("Café-au-lait", "cafe au lait")])
def test_normalise(a, b):
    assert normalise(a) == b


def test_normalise_keeps_distinct_names_distinct():
    assert normalise("hepatitis A") != normalise("hepatitis B")
    assert normalise("fragile X syndrome") == "fragile x syndrome"


@pytest.mark.parametrize("raw,expected", [("HP:0040281", 0.895), ("HP:0040280", 1.0), ("3/4", 0.75),
                                          ("50%", 0.5), ("", None), ("0/0", None)])
def test_hpo_frequency(raw, expected):
    assert parsers.parse_frequency(raw) == expected


def test_most_specific_anatomy_inferred_from_closures():
    closures = {"d1": {"organ", "lung", "bronchus"}, "d2": {"organ", "lung"}, "d3": {"organ", "heart"}}
    assert parsers.most_specific(closures) == {"d1": {"bronchus"}, "d2": {"lung"}, "d3": {"heart"}}


def test_split_xref():
    assert parsers.split_xref('"MIM:154700"') == ("OMIM", "154700")
    assert parsers.split_xref("ORDO:558") == ("ORPHA", "558")
    assert parsers.split_xref("SNOMEDCT_US_2025_09_01:19346006") == ("SNOMEDCT", "19346006")
    assert parsers.split_xref("url:http://example.org") is None


# ---------------------------------------------------------------- graph content
def test_asthma_symptoms_and_drugs(kg):
    symptoms = {t.object_name.lower() for t in kg.neighbors(ASTHMA, "has_symptom")}
    assert {"wheezing", "cough", "dyspnea"} <= symptoms
    drugs = {t.object_name.lower() for t in kg.neighbors(ASTHMA, "treated_by")}
    assert {"salbutamol", "budesonide"} <= drugs
    for t in kg.neighbors(ASTHMA, "treated_by"):
        assert t.object.startswith("DB") and t.extra["category"] in ("DM", "SYM")
        assert kg.concept(t.object).category == "drug"


def test_hsdn_edges_have_tfidf_weight(kg):
    hsdn = [t for t in kg.neighbors(ASTHMA, "has_symptom") if t.source == "hsdn"
            or "hsdn" in t.extra.get("also_sources", ())]
    assert len(hsdn) > 20
    assert all(isinstance(t.weight, float) and t.weight > 0 for t in hsdn)
    # MeSH ids name HSDN symptoms without a SYMP/HP equivalent, and the diseases added from MeSH (mesh_nodes)
    mesh = [n for n in kg.graph if n.startswith("MESH:")]
    symptoms = [n for n in mesh if kg.graph.nodes[n]["category"] == "symptom"]
    assert symptoms and all(kg.graph.nodes[n]["sources"][0] == "hsdn" for n in symptoms)
    assert all(kg.graph.nodes[n]["category"] in ("symptom", "disease") for n in mesh)


def test_hpo_disease_merged_into_do(kg):
    marfan = kg.concept(MARFAN)
    assert "154700" in marfan.xrefs["OMIM"]
    assert "hpo" in marfan.sources
    assert "OMIM:154700" not in kg.graph            # merged, not duplicated
    phen = kg.neighbors(MARFAN, "has_phenotype")
    assert len(phen) > 20
    names = {t.object_name for t in phen}
    assert "Arachnodactyly" in names
    assert all(t.object.startswith("HP:") and t.source == "hpo" for t in phen)
    freqs = [t.frequency for t in phen if t.frequency is not None]
    assert freqs and all(0.0 < f <= 1.0 for f in freqs)
    assert _ids(kg.lookup("OMIM:154700"))[0] == MARFAN



def test_an_orphanet_disease_do_does_not_cross_reference_merges_through_mondo(kg):
    """DO lists no Orphanet id for myasthenia gravis; Mondo matches Orphanet 589 and DOID:437 exactly, so the HPO
    annotations land on the DO concept and no second "Myasthenia gravis" node competes with it."""
    assert "ORPHA:589" not in kg.graph
    mg = kg.concept("DOID:437")
    assert "589" in mg.xrefs["ORPHA"] and "hpo" in mg.sources
    names = {t.object_name for t in kg.neighbors("DOID:437", "has_phenotype")}
    assert {"Ptosis", "Diplopia"} <= names
    assert [c.id for c in kg.lookup("myasthenia gravis", categories=("disease",))][:1] == ["DOID:437"]
    assert (kg.report or {}).get("hpo_diseases_merged_via_mondo", 0) > 500

def test_hpo_ages_of_onset_are_node_attributes(kg):
    """phenotype.hpoa's aspect-C onset terms become each disease's ``onset`` labels (merged into DO terms too)."""
    with_onset = [a["onset"] for _, a in kg.graph.nodes(data=True) if a.get("onset")]
    assert len(with_onset) > 1000
    assert {x for o in with_onset for x in o} <= {"antenatal", "congenital", "neonatal", "infantile", "pediatric",
                                                   "childhood", "juvenile", "adult"}
    [atresia] = kg.lookup("biliary atresia", categories=("disease",))[:1]
    assert atresia.id.startswith("DOID:") and kg.graph.nodes[atresia.id]["onset"] == ["infantile"]


def test_unmapped_hpo_diseases_are_own_nodes(kg):
    own = [n for n, a in kg.graph.nodes(data=True) if n.startswith(("OMIM:", "ORPHA:"))]
    assert len(own) > 1000
    n = own[0]
    assert kg.concept(n).category == "disease" and kg.concept(n).name != n
    with_phen = [x for x in own[:200] if kg.neighbors(x, "has_phenotype")]
    assert with_phen


def test_negated_hpo_annotations_are_not_edges(kg):
    """``NOT`` annotations (phenotype explicitly absent) must not become has_phenotype edges."""
    hpoa = sources.ensure("hpo") / "phenotype.hpoa"
    positive, negated = set(), set()
    with open(hpoa, encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(parts) < 11 or parts[10] != "P":
                continue
            (negated if parts[2] == "NOT" else positive).add((parts[0], parts[3]))
    # diseases that kept their own node: the edge could only come from this very annotation
    checked = [(d, p) for d, p in negated - positive if d in kg.graph and p in kg.graph]
    assert len(checked) > 20
    assert not any(kg.graph.has_edge(d, p, key="has_phenotype") for d, p in checked)
    assert any(kg.graph.has_edge(d, p, key="has_phenotype") for d, p in list(positive)[:50] if d in kg.graph)


def test_synonyms_and_variants_resolve(kg):
    for text in ["heart attack", "Heart Attack", "myocardial infarction", "Myocardial   infarction."]:
        assert _ids(kg.lookup(text))[0] == MI, text
    for text in ["asthma", "Asthma.", " ASTHMA ", "doid:2841", "DOID:2841", "ICD10CM:J45"]:
        assert _ids(kg.lookup(text))[0] == ASTHMA, text
    assert "DOID:9352" in _ids(kg.lookup("type 2 diabetes mellitus"))
    assert "DOID:9352" in _ids(kg.lookup("Type-II diabetes mellitus", categories=["disease"]))
    assert kg.lookup("no such disease at all xyz") == []
    assert all(c.category == "phenotype" for c in kg.lookup("asthma", categories=["phenotype"]))


def test_resolve_finds_the_names_clinicians_write_and_only_when_lookup_does_not(kg):
    """A whole diagnosis name the vocabularies spell differently resolves: written together, another head noun, a
    leading qualifier; exact names keep their exact concept; nonsense and a lone qualifier resolve to nothing."""
    for text, want in [("Takotsubo cardiomyopathy", "tako tsubo cardiomyopathy"),
                       ("Advanced sleep phase disorder", "advanced sleep phase syndrome"),
                       ("Temporomandibular joint dysfunction", "temporomandibular joint dysfunction syndrome"),
                       ("Exertional heat stroke", "heat stroke"),
                       ("Acute hepatitis B", "hepatitis b"),
                       ("Trichomonal vaginitis", "trichomonas vaginalis trichomoniasis")]:
        assert kg.lookup(text, categories=["disease"]) == [], text      # the exact lookup does not know it
        hits = kg.resolve(text, categories=["disease"])
        assert hits and normalise(hits[0].name) == want, (text, hits[:1])
    assert _ids(kg.resolve("asthma", categories=["disease"]))[0] == ASTHMA
    assert _ids(kg.resolve("heart attack"))[0] == MI
    assert kg.resolve("acute", categories=["disease"]) == []
    assert kg.resolve("no such disease at all xyz") == []


def test_synonym_scopes_kept(kg):
    a = kg.graph.nodes[ASTHMA]
    assert len(a["synonyms"]) == len(a["synonym_scopes"]) == len(a["synonym_sources"])
    assert set(a["synonym_scopes"]) <= {"EXACT", "RELATED", "NARROW", "BROAD", "MAPPED", "ABBREVIATION"}
    scopes = {sc for _, x in kg.graph.nodes(data=True) for sc in x["synonym_scopes"]}
    assert {"EXACT", "RELATED", "MAPPED", "ABBREVIATION"} <= scopes


def test_vocabularies_merged_into_do(kg):
    """NCIt, MeSH, ICD-10-CM, Mondo and the curated abbreviations add names to DO concepts; the only nodes they add
    are the MeSH diseases DO lacks (knowledge.kg.mesh_nodes)."""
    added = [n for n, a in kg.graph.nodes(data=True) if a["sources"][0] in vocab.VOCAB_SOURCES]
    assert added and all(mesh_nodes.is_mesh_disease(n, kg.graph.nodes[n]["category"])
                         and kg.graph.nodes[n]["sources"][0] == mesh_nodes.SOURCE for n in added)
    assert len(added) == kg.report["mesh_nodes_added"]
    herpes = kg.lookup("cold sore", categories=["disease"])[0]
    assert herpes.id == "MESH:D006560" and herpes.name == "Herpes Labialis"
    assert "DOID:8566" in kg.parents("MESH:D006560")        # is_a herpes simplex (nearest mapped MeSH ancestor)
    assert not kg.lookup("leukocytosis", categories=["disease"])    # a finding stays a finding
    # a genus heading over diseases DO holds is a category, not a diagnosis (botulism, tetanus ... stay DO's)
    assert "MESH:D003015" not in kg.graph and not kg.lookup("Clostridium Infections", categories=["disease"])
    assert "MESH:D002690" not in kg.graph and _ids(kg.lookup("chlamydia", categories=["disease"]))[0] == "DOID:11263"
    assert any(i.startswith("DOID:") for i in _ids(kg.lookup("botulism", categories=["disease"])))
    for text, doid in [("MI", MI), ("Cardiovascular Stroke", MI), ("MONDO:0005068", MI), ("COPD", "DOID:3083"),
                       ("Kidney Stone", "DOID:585"), ("sixth disease", "DOID:0050495"), ("T2DM", "DOID:9352"),
                       ("SAH", "MESH:D013345"), ("ACS", "MESH:D054058"), ("Cluster Headache", "MESH:D003027")]:
        assert _ids(kg.lookup(text, categories=["disease"]))[0] == doid, text
    assert _ids(kg.lookup("heart attack"))[0] == MI
    stone = kg.concept("DOID:585")
    assert stone.definition and any(d["source"] == "ncit" for d in stone.definitions)
    for row in parsers.read_abbreviations(kg_build.LOCAL_SOURCES["kg-abbreviations"][0]):
        c = kg.concept(row.concept)
        assert c is not None and c.category == "disease", row
    assert kg.report["vocab_synonyms_added_mesh-thesaurus"] > 10000 and kg.report["vocab_synonyms_added_ncit"] > 8000


def test_mesh_diseases_take_icd10cm_codes_by_name(kg):
    """A disease added from MeSH that Mondo gives no ICD-10-CM code takes the code whose title or inclusion term is
    its own name (the commonness prior's ICD mark); a narrower notion's name gives none."""
    xrefs = lambda n: set(kg.graph.nodes[n]["xrefs"].get("ICD10CM", ()))     # noqa: E731
    assert "G44.00" in xrefs("MESH:D003027")           # "Cluster headache syndrome, unspecified"
    assert "T78.2" in xrefs("MESH:D000707")            # "Anaphylaxis", an inclusion term of T78.2
    assert "I48.92" in xrefs("MESH:D001282")           # "Unspecified atrial flutter"
    assert not xrefs("MESH:D011885")                   # Radius Fractures: "Galeazzi's fracture" is narrower
    assert kg.report["mesh_nodes_icd10cm_by_name"] > 100


def test_do_diseases_take_icd10cm_codes_from_mondo_or_by_name(kg):
    """DO's own cross-references leave many common diseases without an ICD-10-CM code (the commonness prior read
    them as rare): Mondo's exact matches give pneumonia J18.9 and urticaria L50, the code titled with its own name
    gives allergic rhinitis J30.9."""
    xrefs = lambda n: set(kg.graph.nodes[n]["xrefs"].get("ICD10CM", ()))     # noqa: E731
    assert "J18.9" in xrefs("DOID:552")                # pneumonia (Mondo)
    assert "L50" in xrefs("DOID:1555")                 # urticaria (Mondo)
    assert "J30.9" in xrefs("DOID:4481")               # allergic rhinitis: "Allergic rhinitis, unspecified"
    assert kg.report["vocab_icd10cm_codes_by_name"] > 100


def test_synonym_errata_remove_a_wrong_ontology_synonym(kg):
    """The curated errata take "fecal incontinence" off SYMP's diarrhoea; HPO's bowel incontinence keeps it, and
    every row of the table applied."""
    diarrhea = kg.graph.nodes["SYMP:0000570"]
    assert "fecal incontinence" not in {s.lower() for s in diarrhea["synonyms"]}
    assert "loose bowels" in diarrhea["synonyms"]
    assert len(diarrhea["synonym_scopes"]) == len(diarrhea["synonyms"]) == len(diarrhea["synonym_sources"])
    assert _ids(kg.lookup("fecal incontinence"))[0] == "HP:0002607"
    rows = kg_build.read_synonym_errata(kg_build.LOCAL_SOURCES["kg-synonym-errata"][0])
    assert kg.report["synonym_errata_removed"] == len(rows) and not kg.report.get("synonym_errata_unmatched")


def test_an_equivalence_drawn_through_a_withdrawn_synonym_goes_with_it(kg):
    """Diarrhoea is no bowel incontinence, a rash no flushing, tachypnoea no hyperventilation, stupor no coma once the
    errata take the synonyms that joined them off; the equivalences that rest on a name both keep stay."""
    apart = [("SYMP:0000570", "HP:0002607"), ("SYMP:0000487", "SYMP:0000511"), ("SYMP:0000487", "HP:0010783"),
             ("HP:0010783", "SYMP:0000511"), ("HP:0010783", "HP:0031284"),
             ("SYMP:0000603", "HP:0002883"), ("SYMP:0000389", "HP:0001259"), ("SYMP:0020018", "HP:0001513")]
    for a, b in apart:
        assert b not in kg.equivalents(a), (a, b)
    together = [("SYMP:0000570", "HP:0002014"), ("SYMP:0000487", "HP:0000988"), ("SYMP:0000603", "HP:0002789"),
                ("SYMP:0000605", "HP:0001259"), ("SYMP:0000511", "HP:0031284")]
    for a, b in together:
        assert b in kg.equivalents(a), (a, b)
    assert kg.report["xref_errata_unlinked"] >= 2 * 5


def test_every_curated_diagnosis_named_like_a_finding_is_a_disease_concept(kg):
    """Each row of knowledge/kg/mesh_diagnoses.tsv became a disease node under its clinical name (a row whose
    descriptor the graph already maps to a DO concept would silently do nothing); "septic shock" no longer names
    toxic shock syndrome, and "DVT" is deep vein thrombosis."""
    from knowledge.kg import mesh_nodes

    named = mesh_nodes.read_diagnoses()
    assert kg.report["mesh_nodes_curated_diagnoses"] == len(named)
    for ui, name in named.items():
        node = kg.graph.nodes[f"MESH:{ui}"]
        assert node["category"] == "disease" and node["name"] == name, ui
    assert "DOID:14115" not in _ids(kg.lookup("septic shock"))
    assert "MESH:D020246" in _ids(kg.lookup("DVT"))


def test_clinical_names_and_xref_errata_reach_their_diseases(kg):
    """Every curated clinical name looks up its disease concept first among the diseases ("sepsis" is bacterial
    sepsis, "strep throat" pharyngitis); Cushing syndrome is a disease of its own, no longer primary
    hyperaldosteronism, which lost its ICD-10-CM code E24 with it; every row of both tables applied."""
    from knowledge.kg import vocab

    for name, concept, _ in vocab.read_clinical_names():
        hits = _ids(kg.lookup(name, categories=["disease"]))
        assert hits and hits[0] == concept, (name, hits[:3])
    assert not kg.report.get("vocab_clinical_names_unknown_concept")
    cushing = _ids(kg.lookup("Cushing syndrome", categories=["disease"]))
    assert cushing[0] == "MESH:D003480" and "DOID:446" not in cushing
    assert "E24" not in kg.graph.nodes["DOID:446"]["xrefs"].get("ICD10CM", ())
    assert _ids(kg.lookup("hyperaldosteronism", categories=["disease"]))[0] == "DOID:446"
    rows = kg_build.read_xref_errata(kg_build.LOCAL_SOURCES["kg-xref-errata"][0])
    assert kg.report["xref_errata_removed"] == len(rows) and not kg.report.get("xref_errata_unmatched")


def test_is_a_hierarchy(kg):
    parents = kg.parents(ASTHMA)
    assert [kg.concept(p).name for p in parents] == ["bronchial disease"]
    anc = kg.ancestors(ASTHMA)
    assert anc[0] == parents[0] and "DOID:4" in anc
    assert MI in [p for c in kg.children(MI) for p in kg.parents(c)]
    assert kg.parents("HP:0001945")          # phenotypes have parents too
    assert kg.parents(SYMP_FEVER)


def test_anatomy_is_most_specific(kg):
    sites = {t.object_name for t in kg.neighbors(MI, "located_in")}
    assert "coronary artery" in sites
    assert "anatomical structure" not in sites and "anatomical entity" not in sites


def test_every_edge_and_node_has_provenance(kg):
    known = {*sources.CATALOG, *kg_build.LOCAL_SOURCES}
    local = {sid: lic for sid, (_, lic) in kg_build.LOCAL_SOURCES.items()}
    for u, v, k, d in kg.graph.edges(keys=True, data=True):
        assert k == d["relation"] and k in RELATIONS
        lic = sources.CATALOG[d["source"]].license if d["source"] in sources.CATALOG else local[d["source"]]
        assert d["license"] == lic
        for extra in d.get("also_sources", ()):
            assert extra in known
    for n, a in kg.graph.nodes(data=True):
        assert a["category"] in CATEGORIES and a["name"]
        assert a["sources"] and all(s in known for s in a["sources"])
        assert len(a["synonym_sources"]) == len(a["synonyms"]) and set(a["synonym_sources"]) <= known


def test_no_obsolete_terms(kg):
    hp_obo = sources.ensure("hpo") / "hp.obo"
    obsolete, cur = [], None
    with open(hp_obo, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("id: "):
                cur = line[4:].strip()
            elif line.startswith("is_obsolete: true"):
                obsolete.append(cur)
    assert len(obsolete) > 10
    assert not any(o in kg.graph for o in obsolete)
    assert not any(a["name"].lower().startswith("obsolete ") for _, a in kg.graph.nodes(data=True))


def test_symptom_phenotype_equivalence(kg):
    assert HP_FEVER in kg.equivalents(SYMP_FEVER)
    assert SYMP_FEVER in kg.equivalents(HP_FEVER)
    assert kg.graph.has_edge(SYMP_FEVER, HP_FEVER, key="xref") and kg.graph.has_edge(HP_FEVER, SYMP_FEVER,
                                                                                        key="xref")
    found = kg.diseases_with_finding(SYMP_FEVER)
    rels = {(t.relation, t.source) for t in found}
    assert ("has_phenotype", "hpo") in rels             # reached through the HP equivalent
    assert any(r == "has_symptom" for r, _ in rels)
    assert all(t.object in ({SYMP_FEVER} | kg.equivalents(SYMP_FEVER)) for t in found)


def test_triples_and_text(kg):
    ts = kg.triples([ASTHMA, MI], relations=["has_symptom", "treated_by"])
    assert ts and {t.subject for t in ts} == {ASTHMA, MI}
    assert len({t.id for t in ts}) == len(ts)
    t = next(t for t in ts if t.object_name == "wheezing")
    assert t.id == f"{ASTHMA}|has_symptom|{t.object}"
    assert t.text() == "asthma has symptom wheezing"
    phen = kg.neighbors(MARFAN, "has_phenotype")[0]
    assert phen.text().startswith("Marfan syndrome has phenotype ")
    incoming = kg.neighbors("DB01001", "treated_by", direction="in")
    assert ASTHMA in {x.subject for x in incoming}
    with pytest.raises(ValueError):
        kg.neighbors(ASTHMA, direction="sideways")
    assert isinstance(ts[0], Triple)


def test_subgraph_and_vocabulary(kg):
    sub = kg.subgraph([ASTHMA], depth=1)
    assert ASTHMA in sub and "DOID:1176" in sub and sub.number_of_edges() > 40
    vocab = kg.vocabulary(["disease"])
    assert all(v.category == "disease" for v in vocab)
    mi = next(v for v in vocab if v.id == MI)
    assert "heart attack" in mi.synonyms
    assert {v.category for v in kg.vocabulary()} == set(CATEGORIES)


def test_stats(kg):
    st = kg.stats()
    assert st["nodes"] == kg.graph.number_of_nodes() and st["edges"] == kg.graph.number_of_edges()
    assert set(st["nodes_per_category"]) == set(CATEGORIES)
    assert set(st["edges_per_relation"]) == set(RELATIONS)
    assert st["edges_per_source"]["hpo"] > 100_000 and st["edges_per_source"]["hsdn"] > 5_000
    print("\n" + json.dumps({k: st[k] for k in ("nodes_per_category", "nodes_per_source",
                                                "edges_per_relation", "edges_per_source")}))


# ---------------------------------------------------------------- persistence and versioning
def test_save_load_roundtrip(kg, tmp_path):
    path = kg.save(tmp_path / "kg.pkl")
    t0 = time.perf_counter()
    loaded = KnowledgeGraph.load(path)
    seconds = time.perf_counter() - t0
    print(f"\nKG load: {seconds:.2f}s, artefact {path.stat().st_size / 1e6:.1f} MB")
    assert seconds <= 5.0
    assert loaded.stats() == kg.stats()
    assert loaded.version == kg.version
    assert _ids(loaded.lookup("heart attack"))[0] == MI
    assert [t.id for t in loaded.neighbors(ASTHMA)] == [t.id for t in kg.neighbors(ASTHMA)]
    assert loaded.graph.has_edge(SYMP_FEVER, HP_FEVER, key="xref")


def test_load_rejects_foreign_file(tmp_path):
    bad = tmp_path / "bad.pkl"
    import pickle
    bad.write_bytes(pickle.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="rebuild"):
        KnowledgeGraph.load(bad)


def test_load_or_build_reuses_artefact(kg, home):
    path = artefact_path(kg.base_version)
    assert path.exists() and kg.base_version in path.name
    assert str(path).startswith(str(home))
    mtime = path.stat().st_mtime_ns
    again = load_or_build()
    assert again.version == kg.version and path.stat().st_mtime_ns == mtime
    assert again.stats() == kg.stats()


def test_version_follows_input_checksums(kg, tmp_path):
    ids = kg_build.resolve_sources(None, False)
    located = kg_build.locate(ids)
    assert kg_build.compute_version(located) == kg.base_version
    same = tmp_path / "same.tsv"
    shutil.copyfile(located["pharmacotherapydb"], same)
    assert kg_build.compute_version({**located, "pharmacotherapydb": same}) == kg.base_version
    changed = tmp_path / "changed.tsv"
    shutil.copyfile(located["pharmacotherapydb"], changed)
    with open(changed, "a", encoding="utf-8") as fh:
        fh.write("DOID:2841\tDB00000\tasthma\tPlacebo\tDM\t1\t1\n")
    assert kg_build.compute_version({**located, "pharmacotherapydb": changed}) != kg.base_version
    fewer = {k: v for k, v in located.items() if k != "hsdn"}
    assert kg_build.compute_version(fewer) != kg.base_version
    without_ncit = {k: v for k, v in located.items() if k != "ncit"}
    assert kg_build.compute_version(without_ncit) != kg.base_version


def test_bad_source_selection():
    with pytest.raises(BuildError, match="unknown source"):
        kg_build.resolve_sources(["no-such-source"], False)
    with pytest.raises(BuildError, match="do-humando"):
        kg_build.resolve_sources(["hpo"], False)
    with pytest.raises(BuildError, match="not knowledge-graph"):
        kg_build.resolve_sources(["do-humando", "medquad"], False)


def test_subset_build_without_hpo(home):
    sub = load_or_build(sources=["do-humando", "do-obo-2016", "do-disease-symptom", "do-symp"])
    st = sub.stats()
    assert "phenotype" not in st["nodes_per_category"]
    assert st["edges_per_relation"]["has_symptom"] > 1000
    assert _ids(sub.lookup("heart attack"))[0] == MI


def test_optional_ddxplus_subset(home):
    g = load_or_build(sources=["do-humando", "do-xrefs", "do-obo-2016"], include_ddxplus=True)
    conditions = [n for n, a in g.graph.nodes(data=True) if n.startswith("DDX:") and a["category"] == "disease"]
    assert len(conditions) == 49
    gerd = g.lookup("GERD", categories=["disease"])[0]
    assert gerd.id.startswith("DDX:")
    assert "DOID:8534" in g.equivalents(gerd.id)
    symptoms = g.neighbors(gerd.id, "has_symptom")
    assert symptoms and all(t.source == "ddxplus-conditions" for t in symptoms)
    assert not any(v.id.startswith("DDX:") for v in g.vocabulary(["symptom"]))
    default = load_or_build(sources=["do-humando", "do-xrefs", "do-obo-2016"])
    assert default.version != g.version and not any(n.startswith("DDX:") for n in default.graph)


# ---------------------------------------------------------------- CLI
def test_cli_stats_and_show(kg, capsys):
    from clinicalrag.cli import main

    assert main(["kg", "stats", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["version"] == kg.version and st["edges_per_relation"]["treated_by"] > 1000

    assert main(["kg", "show", "heart attack", "--json", "--limit", "3"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["concept"]["id"] == MI
    assert all(len(g["shown"]) <= 3 for g in card["triples"].values())
    assert all(t["source"] and t["license"] for g in card["triples"].values() for t in g["shown"])

    assert main(["kg", "show", "asthma"]) == 0
    text = capsys.readouterr().out
    assert "DOID:2841" in text and "treated_by" in text and "provenance" in text

    assert main(["kg", "show", "asthmaa"]) == 2
    err = capsys.readouterr().err
    assert "no concept named" in err and "asthma" in err.lower()

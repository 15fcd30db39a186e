"""Mining MedQuAD for disease -> finding edges (agents.miner, `clinicalrag kg mine`) on real pages of the release with
the project's own extractor and the built knowledge graph. Nothing is mocked; the mined files go to tmp_path (the
data home is only read)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from agents.miner import MINER_VERSION, Miner, definition_documents, mine_medquad, miner_version, report
from clinicalrag.cli import main
from knowledge.corpus import iter_documents
from knowledge.kg import load_or_build, mined

PYELONEPHRITIS, UTI = "DOID:11400", "DOID:0080784"
# fever in the Symptom Ontology and in HPO: one equivalence group; a mined edge carries the member the disease's
# curated edge uses (HPO's "Fever" where a cardinal entry names it), else the one first read
FEVER = frozenset({"SYMP:0000613", "HP:0001945"})
DOCS = ("NIDDK_0000169-5",    # Pyelonephritis, symptoms: "- fever - vomiting - back, side, and groin pain - chills ..."
        "NIDDK_0000214-7",    # Urinary Tract Infection In Adults: "Normally, UTIs do not cause fever if ..."
        "NIDDK_0000169-1")    # Pyelonephritis, information: one sentence, no symptom in it
APPENDICITIS_PAGE = "MPlusHealthTopics_0000052-1"   # MedlinePlus "Appendicitis": all one "information" answer
APPENDICITIS = "DOID:8337"
NEGATED = "Normally, UTIs do not cause fever if they are in the bladder."


@pytest.fixture(scope="module")
def kg():
    return load_or_build(mined=False)


@pytest.fixture(scope="module")
def miner(kg):
    return Miner(kg)


@pytest.fixture(scope="module")
def docs():
    found = {d.doc_id: d for d in iter_documents(organisations=["NIDDK"]) if d.doc_id in DOCS}
    assert set(found) == set(DOCS)
    return found


@pytest.fixture(scope="module")
def result(miner, docs):
    return miner.mine([docs[i] for i in DOCS])


def edge(result, disease: str, finding: frozenset[str]):
    return next((e for e in result.edges if e.disease == disease and e.finding in finding), None)


def test_a_symptoms_page_listing_fever_gives_a_fever_edge_citing_its_span(result, docs):
    e = edge(result, PYELONEPHRITIS, FEVER)
    assert e is not None and e.doc_id == "NIDDK_0000169-5" and e.linked_by == "cui"
    text = docs[e.doc_id].text
    assert text[e.span[0]:e.span[1]] == e.sentence and "fever" in e.sentence.lower()
    assert text[e.mention[0]:e.mention[1]] == e.surface and e.surface.lower() == "fever"
    assert e.span[0] <= e.mention[0] < e.mention[1] <= e.span[1]
    assert e.question_type == "symptoms" and e.organisation == "NIDDK" and e.url.startswith("http")
    found = {x.finding_name.lower() for x in result.edges if x.disease == PYELONEPHRITIS}
    assert {"vomiting", "chills", "nausea"} <= found


def test_every_span_points_into_its_answer_and_only_selected_question_types_count(kg, result, docs):
    assert result.stats["documents"] == 3
    assert result.edges
    for e in result.edges:
        text = docs[e.doc_id].text
        assert text[e.span[0]:e.span[1]] == e.sentence
        assert text[e.mention[0]:e.mention[1]] == e.surface
    narrow = Miner(kg, question_types=("symptoms", "causes", "exams and tests")).mine([docs[i] for i in DOCS])
    assert narrow.stats["documents"] == 2          # the information page is passed over
    assert all(docs[e.doc_id].question_type != "information" for e in narrow.edges)


def test_a_general_page_counts_only_where_it_speaks_of_symptoms(miner):
    """A MedlinePlus page is one "information" answer: its symptom sentence and the list it leads into give edges;
    its sentences on anatomy and causes give none, and "inability to pass gas" is no flatulence."""
    [page] = [d for d in iter_documents(organisations=["MPlusHealthTopics"]) if d.doc_id == APPENDICITIS_PAGE]
    res = miner.mine([page])
    found = {e.finding_name.lower(): e for e in res.edges if e.disease == APPENDICITIS}
    assert {"abdominal pain", "loss of appetite", "fever"} <= set(found), sorted(found)
    assert "symptom" in found["abdominal pain"].sentence.lower()
    assert found["fever"].sentence.strip(" -") == "Low fever"          # a list item led in by "Other symptoms ..."
    assert "flatulence" not in found
    assert all(e.question_type == "information" for e in res.edges)
    assert res.stats.get("sentences_without_cue", 0) > 0


def test_a_negated_mention_gives_no_edge(miner, docs):
    page = docs["NIDDK_0000214-7"]
    assert NEGATED in page.text
    only = dataclasses.replace(page, text=NEGATED)
    res = miner.mine([only])
    assert res.stats["documents_linked"] == 1
    assert res.edges == [] and res.stats["rejected"].get("negated", 0) >= 1
    # on the whole page the UTI -> fever edge, if any, cites an affirmed sentence, never the negated one
    whole = miner.mine([page])
    e = edge(whole, UTI, FEVER)
    assert e is None or NEGATED not in e.sentence


def test_the_signs_of_another_condition_are_not_the_pages_disease(miner):
    """The mitral valve prolapse page lists the signs of the infection it can lead to ("Signs and symptoms of a
    bacterial infection include fever, chills, body aches, and headaches"): none of them becomes a prolapse finding,
    while its own symptoms do; "Signs of a gallstone attack may include ..." on the gallstones page stays the page's."""
    mvp = "Signs and symptoms of a bacterial infection include fever, chills, body aches, and headaches."
    [page] = [d for d in iter_documents(organisations=["NHLBI"]) if d.doc_id == "NHLBI_0000091-5"]
    assert mvp in page.text
    res = miner.mine([page])
    assert res.stats.get("sentences_about_another_condition", 0) >= 1
    assert res.edges and not [e for e in res.edges if e.sentence == mvp]
    assert {"palpitation", "chest pain"} & {e.finding_name.lower() for e in res.edges}
    gall = ("Signs of a gallstone attack may include nausea, vomiting, or pain in the abdomen, back, or just under "
            "the right arm.")
    [page] = [d for d in iter_documents(organisations=["MPlusHealthTopics"])
              if d.doc_id == "MPlusHealthTopics_0000388-1"]
    assert gall in page.text
    assert [e for e in miner.mine([page]).edges if e.sentence == gall]


ATHEROSCLEROSIS = "DOID:1936"


def test_a_list_that_lost_its_bullets_belongs_to_the_disease_its_lead_in_refers_to(miner):
    """The atherosclerosis page tells what each narrowed artery leads to: "... you may have symptoms of a stroke.
    These symptoms may include:" followed by one symptom per line, and "... you may develop chronic kidney disease
    ... As the disease gets worse it can cause tiredness ...". Those lines are the stroke's and the kidney disease's,
    not atherosclerosis's; the angina of its coronary arteries stays its own. A lead-in with risk wording ("They are
    also at higher risk for:") makes no findings of its items; one that compares ("Later symptoms may be similar to
    those of natural menopause:") keeps them the page's."""
    [athero] = [d for d in iter_documents(organisations=["NHLBI"]) if d.doc_id == "NHLBI_0000012-5"]
    assert "These symptoms may include:\n\nSudden weakness" in athero.text
    spans = {athero.text[a:b]: item for a, b, item in Miner.sentence_spans(athero.text)}
    assert spans["Sudden weakness"] and spans["Confusion"] and spans["Loss of consciousness"]   # items, not headings
    assert not spans["These symptoms may include:"]
    found = {e.finding_name.lower() for e in miner.mine([athero]).edges if e.disease == ATHEROSCLEROSIS}
    assert "dyspepsia" in found or "chest pain" in found or "pain" in found, sorted(found)
    assert not found & {"dizziness", "headache", "loss of balance", "weakness", "syncope", "nausea",
                        "concentration difficulty", "loss of appetite"}, sorted(found)
    [sickle] = [d for d in iter_documents(organisations=["NHLBI"]) if d.doc_id == "NHLBI_0000117-5"]
    assert "They are also at higher risk for:\n\nMiscarriages" in sickle.text
    assert not [e for e in miner.mine([sickle]).edges if e.sentence in ("Miscarriages", "Premature births")]
    [pof] = [d for d in iter_documents(organisations=["MPlusHealthTopics"])
             if d.doc_id == "MPlusHealthTopics_0000742-1"]
    assert "similar to those of natural menopause:\n- Hot flashes" in pof.text
    assert {"Hot flashes", "Night sweats"} <= {e.sentence for e in miner.mine([pof]).edges}


WILSON_DISEASE = "DOID:893"


def test_these_features_after_another_disease_are_still_the_page_s_own(miner):
    """On a page about one disease, "these features" and "this condition" mean that disease even when the sentence
    before named another: Wilson disease's GARD page says its patients develop signs of chronic liver disease, then
    "These features may include jaundice; ... fatigue". Only "These symptoms" / "As the disease gets worse" refer
    back to the other disease."""
    [wilson] = [d for d in iter_documents(organisations=["GARD"]) if d.doc_id == "GARD_0006449-2"]
    assert "chronic liver disease in their teenaged years or early twenties. These features may include jaundice" \
        in wilson.text
    found = {e.finding_name.lower() for e in miner.mine([wilson]).edges if e.disease == WILSON_DISEASE}
    assert {"jaundice", "fatigue"} <= found, sorted(found)


def test_the_cli_writes_a_valid_file_that_loads_over_the_graph(kg, tmp_path, capsys):
    out = tmp_path / "mined.jsonl"
    assert main(["kg", "mine", "--organisations", "NHLBI", "--limit", "25", "--out", str(out), "--json",
                 "--report", "--sample", "5"]) == 0
    summary = json.loads(capsys.readouterr().out)
    m = mined.read(out)
    assert m.header["kg_version"] == kg.version and m.header["miner"] == miner_version()
    assert summary["mining"]["edges"] == len(m.edges) > 0
    assert summary["mining"]["documents"] == 25
    assert all(e.organisation == "NHLBI" for e in m.edges)
    rep = summary["report"]
    assert rep["diseases_gaining_edges"] >= rep["common_diseases_gaining_edges"] >= 0
    assert len(rep["sample"]) == min(5, len(m.edges))
    texts = {d.doc_id: d.text for d in iter_documents(organisations=["NHLBI"])}
    for e in m.edges:
        assert texts[e.doc_id][e.span[0]:e.span[1]] == e.sentence

    over = load_or_build(mined_path=out)
    assert over.version == f"{kg.version}+m{m.digest[:8]}" and over.base_version == kg.version
    counts = over.report["medquad_mined"]
    assert counts["edges"] == len(m.edges) and counts["added"] + counts["on_existing_edges"] == len(m.edges)
    e = m.edges[0]
    attrs = [d for k, d in over.graph[e.disease][e.finding].items() if k in ("has_symptom", "has_phenotype")]
    assert any((d.get("citation") or {}).get("doc_id") == e.doc_id for d in attrs)


def test_report_counts_common_diseases_with_the_prior(kg, result):
    rep = report(kg, result.edges, sample=3)
    assert rep["edges"] == len(result.edges)
    assert rep["new_edges"] + rep["on_curated_edges"] == rep["edges"]
    assert rep["diseases_gaining_edges"] >= 1
    # a urinary tract infection is common by the commonness prior (consumer pages, drug indications, ICD code)
    top = {t["disease"]: t for t in rep["top_diseases"]}
    if UTI in top:
        assert top[UTI]["common"]


def test_the_miner_version_follows_the_phrase_tables(tmp_path, monkeypatch):
    """Editing a phrase table changes what the extractor mines, so the recorded miner version changes and `kg
    build` mines again (a file from before is "stale")."""
    from agents.mee import lay

    before = miner_version()
    assert before.startswith(MINER_VERSION + "+x")
    table = tmp_path / "lay.tsv"
    table.write_text(lay.LAY_TABLE.read_text() + "SYMP:0000613\tfever\tphrase\t\\bburning\\s+hot\\b\n")
    monkeypatch.setattr(lay, "LAY_TABLE", table)
    assert miner_version() != before


MALARIA = "DOID:12365"


def test_nci_thesaurus_definitions_give_edges_citing_the_definition(kg, miner):
    """A disease's NCIt definition is read like a page: the sentence that lists signs and symptoms gives edges that
    cite the definition (its NCIt id, span and URL); sentences on what the disease is give none."""
    docs = [d for d in definition_documents(kg) if d.disease_id == MALARIA]
    assert docs and all(d.doc_id.startswith("NCIT:C") and d.organisation == "NCI Thesaurus" for d in docs)
    res = miner.mine(docs)
    found = {e.finding_name.lower(): e for e in res.edges if e.disease == MALARIA}
    assert {"chills", "high fever"} & set(found), sorted(found)
    for e in found.values():
        doc = next(d for d in docs if d.doc_id == e.doc_id)
        assert doc.text[e.span[0]:e.span[1]] == e.sentence and e.question_type == "definition"
        assert e.url.endswith(doc.doc_id.split(":")[1]) and e.organisation == "NCI Thesaurus"
        assert any(w in e.sentence.lower() for w in ("symptom", "sign", "characteri", "present", "manifest"))
    assert res.stats["sentences_without_cue"] >= 1          # "A protozoan infection caused by ..." is no finding


def test_mining_only_the_definitions(kg, tmp_path, capsys):
    res = mine_medquad(kg, organisations=["NCI Thesaurus"], limit=200)
    assert res.stats["documents"] == 200 and res.edges
    assert {e.organisation for e in res.edges} == {"NCI Thesaurus"}
    out = tmp_path / "definitions.jsonl"
    assert main(["kg", "mine", "--organisations", "NCI Thesaurus", "--limit", "50", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    m = mined.read(out)
    assert summary["mining"]["documents"] == 50 and m.edges
    assert all(e.question_type == "definition" and e.doc_id.startswith("NCIT:C") for e in m.edges)


# pages whose further CUIs name broader or neighbouring diseases than the page's own (MedQuAD lists what a page
# mentions among them), and a guide to a disease's complications
LINK_PAGES = {
    "NIDDK_0000034-3": "diabetic neuropathy",      # "Diabetic Neuropathies": also carries diabetes, type 2 diabetes
    "GARD_0002230-1": "familial atrial fibrillation",  # also carries atrial fibrillation
    "GARD_0004813-1": None,                        # PFAPA: also carries fever, stomatitis, pharyngitis, adenitis
    "NIDDK_0000057-7": (),                         # "Prevent diabetes problems: Keep your heart ..." (heart attack signs)
    "NHLBI_0000131-5": "thrombotic thrombocytopenic purpura",  # its focus CUI is the broader "Purpura"
}


@pytest.fixture(scope="module")
def link_docs():
    found = {d.doc_id: d for d in iter_documents(organisations=["NIDDK", "GARD", "NHLBI"]) if d.doc_id in LINK_PAGES}
    assert set(found) == set(LINK_PAGES)
    return found


def test_a_page_is_linked_to_its_focus_not_to_the_broader_diseases_it_mentions(kg, miner, link_docs):
    names = {pid: {str(kg.graph.nodes[d].get("name")).lower() for d, _ in miner.link(link_docs[pid])}
             for pid in LINK_PAGES}
    assert names["NIDDK_0000034-3"] == {"diabetic neuropathy"}
    assert "familial atrial fibrillation" in names["GARD_0002230-1"]
    assert "atrial fibrillation" not in names["GARD_0002230-1"]
    assert not names["GARD_0004813-1"] & {"pharyngitis", "fever", "stomatitis", "lymphadenitis"}
    assert names["NIDDK_0000057-7"] == set()
    assert names["NHLBI_0000131-5"] == {"thrombotic thrombocytopenic purpura"}
    # the page's own disease is still reached: the heart-attack list gives type 2 diabetes no chest pain edge
    res = miner.mine([link_docs["NIDDK_0000057-7"], link_docs["NIDDK_0000034-3"]])
    assert not [e for e in res.edges if e.disease in ("DOID:9352", "DOID:9351")]
    assert {e.finding_name.lower() for e in res.edges} >= {"paresthesia"}

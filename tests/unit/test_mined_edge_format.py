"""The mined-edges file (knowledge.kg.mined): round trip, validation errors naming the line, the digest and the
version it gives the graph, and the overlay on a small hand-made graph. No data mirror, no knowledge graph build."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from knowledge.kg import build, mined
from knowledge.kg.builder import Builder
from knowledge.kg.graph import KnowledgeGraph

MI, ASTHMA, CHEST_PAIN, SWEATING, WHEEZING, HP_DYSPNEA = ("DOID:5844", "DOID:2841", "SYMP:0000483", "SYMP:0000386",
                                                          "SYMP:0000070", "HP:0002094")
ANSWER = ("Heart attack symptoms vary. The most common symptom is chest pain or discomfort. "
          "Other symptoms include breaking out in a cold sweat.")


def edge(finding: str = CHEST_PAIN, surface: str = "chest pain", disease: str = MI, **kw) -> mined.MinedEdge:
    """A record citing the sentence of ``ANSWER`` that holds ``surface``."""
    start = ANSWER.index("The most") if surface == "chest pain" else ANSWER.index("Other")
    end = ANSWER.index(".", start) + 1
    m = ANSWER.index(surface)
    fields = dict(disease=disease, finding=finding, doc_id="NHLBI_0000060-4", span=(start, end),
                  sentence=ANSWER[start:end], question_type="symptoms", organisation="NHLBI", focus="Heart Attack",
                  linked_by="cui", disease_name="myocardial infarction", finding_name=surface, mention=(m, m + len(surface)),
                  surface=surface, url="http://www.nhlbi.nih.gov/health/health-topics/topics/heartattack")
    fields.update(kw)
    return mined.MinedEdge(**fields)


def small_kg() -> KnowledgeGraph:
    """Two diseases and four findings; myocardial infarction -> chest pain is a curated Disease Ontology edge."""
    b = Builder()
    b.step = lambda msg: None
    b.node(MI, "disease", "do-humando", name="myocardial infarction")
    b.node(ASTHMA, "disease", "do-humando", name="asthma")
    for sid, name in [(CHEST_PAIN, "chest pain"), (SWEATING, "sweating"), (WHEEZING, "wheezing")]:
        b.node(sid, "symptom", "do-symp", name=name)
    b.node(HP_DYSPNEA, "phenotype", "hpo", name="Dyspnea")
    b.edge(MI, "has_symptom", CHEST_PAIN, "do-disease-symptom")
    b.edge(ASTHMA, "has_symptom", WHEEZING, "do-disease-symptom")   # same attributes: one shared dict
    b.edge(ASTHMA, "has_phenotype", HP_DYSPNEA, "hpo", frequency=0.8)
    g = build.assemble(b.nodes.items(), b.edge_list())
    return KnowledgeGraph(g, "0123456789abcdef", {"sources": ["do-humando"]})


# ---------------------------------------------------------------- round trip
def test_round_trip_keeps_every_field(tmp_path):
    edges = [edge(), edge(SWEATING, "cold sweat", n_sentences=2, n_docs=2)]
    path = mined.write(tmp_path / "m.jsonl", edges, header={"kg_version": "0123456789abcdef", "miner": "test-1"})
    back = mined.read(path)
    assert back.edges == edges
    assert back.header["kg_version"] == "0123456789abcdef" and back.header["edges"] == 2
    assert back.header["digest"] == mined.digest(edges) == back.digest
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["format"] == mined.FORMAT
    rec = json.loads(lines[1])
    assert ANSWER[rec["span"][0]:rec["span"][1]] == rec["sentence"]
    assert ANSWER[rec["mention"][0]:rec["mention"][1]] == rec["surface"] == "chest pain"


# ---------------------------------------------------------------- validation
def write_lines(path: Path, records: list) -> Path:
    head = {"format": mined.FORMAT, "format_version": mined.FORMAT_VERSION}
    path.write_text("\n".join(json.dumps(r) if not isinstance(r, str) else r for r in [head, *records]) + "\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("change,message", [
    ({"span": [10, 5]}, "start < end"),
    ({"sentence": "not the sentence"}, "characters but span"),
    ({"relation": "treated_by"}, "relation 'treated_by'"),
    ({"source": "hsdn"}, "source must be"),
    ({"linked_by": "guess"}, "linked_by 'guess'"),
    ({"mention": [0, 3]}, "outside span"),
    ({"surface": "cold sweat"}, "is not the sentence's text"),
    ({"n_sentences": 0}, "at least 1"),
    ({"colour": "red"}, "unknown field"),
    ({"doc_id": 7}, "wrong type"),
    ({"finding": MI}, "same concept"),
])
def test_a_bad_line_is_named(tmp_path, change, message):
    good = edge().to_dict()
    bad = {**good, "finding": SWEATING, **change}
    path = write_lines(tmp_path / "m.jsonl", [good, bad])
    with pytest.raises(mined.MinedFormatError, match=rf"m\.jsonl, line 3: .*{message}"):
        mined.read(path)


def test_missing_field_broken_json_header_and_repeats_are_errors(tmp_path):
    good = edge().to_dict()
    no_doc = {k: v for k, v in good.items() if k != "doc_id"}
    with pytest.raises(mined.MinedFormatError, match=r"line 2: missing field\(s\) doc_id"):
        mined.read(write_lines(tmp_path / "a.jsonl", [no_doc]))
    with pytest.raises(mined.MinedFormatError, match=r"line 3: Expecting"):
        mined.read(write_lines(tmp_path / "b.jsonl", [good, '{"disease": ']))
    with pytest.raises(mined.MinedFormatError, match=r"line 3: .*repeats line 2"):
        mined.read(write_lines(tmp_path / "c.jsonl", [good, good]))
    (tmp_path / "d.jsonl").write_text(json.dumps(good) + "\n", encoding="utf-8")
    with pytest.raises(mined.MinedFormatError, match=r"line 1: the first line must be the header"):
        mined.read(tmp_path / "d.jsonl")
    (tmp_path / "e.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(mined.MinedFormatError, match="no header"):
        mined.read(tmp_path / "e.jsonl")


def test_write_refuses_invalid_edges(tmp_path):
    with pytest.raises(mined.MinedFormatError, match="characters but span"):
        mined.write(tmp_path / "m.jsonl", [edge(sentence="shorter")])
    with pytest.raises(mined.MinedFormatError, match="appears twice"):
        mined.write(tmp_path / "m.jsonl", [edge(), edge()])
    assert not (tmp_path / "m.jsonl").exists()


# ---------------------------------------------------------------- digest and version
def test_digest_follows_the_edges_not_the_header():
    a = [edge()]
    assert mined.digest(a) == mined.digest([edge()])
    assert mined.digest(a) != mined.digest([edge(n_sentences=2)])
    assert mined.digest(a) != mined.digest([edge(), edge(SWEATING, "cold sweat")])
    assert mined.mined_version("0123456789abcdef", mined.digest(a)) == f"0123456789abcdef+m{mined.digest(a)[:8]}"


def test_default_path_is_per_base_version_under_the_build_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CLINICALRAG_HOME", str(tmp_path))
    p = mined.default_path("0123456789abcdef")
    assert p == tmp_path / "build" / "kg" / "medquad-mined-0123456789abcdef.jsonl"
    assert mined.default_path("fedcba9876543210") != p


# ---------------------------------------------------------------- overlay
def test_overlay_adds_new_edges_with_their_citation_and_changes_the_version():
    kg = small_kg()
    wheezing_before = dict(kg.graph[ASTHMA][WHEEZING]["has_symptom"])
    edges = [edge(), edge(SWEATING, "cold sweat", n_sentences=3)]
    counts = mined.apply_overlay(kg, mined.MinedFile({"kg_version": kg.version}, edges))
    assert counts["edges"] == 2 and counts["added"] == 1 and counts["on_existing_edges"] == 1
    assert counts["diseases"] == 1 and counts["findings"] == 2 and counts["docs"] == 1
    assert kg.report["medquad_mined"] is counts and kg.report["sources"] == ["do-humando"]
    assert kg.base_version == "0123456789abcdef"
    assert kg.version == "0123456789abcdef+m" + mined.digest(edges)[:8]

    new = kg.graph[MI][SWEATING]["has_symptom"]
    assert new["source"] == mined.SOURCE and new["relation"] == "has_symptom"
    cit = new["citation"]
    assert cit["doc_id"] == "NHLBI_0000060-4" and cit["n_sentences"] == 3
    assert ANSWER[cit["span"][0]:cit["span"][1]] == cit["sentence"]
    assert "cold sweat" in cit["sentence"]
    # the finding's view of the graph sees the same edge
    assert kg.graph.pred[SWEATING][MI]["has_symptom"] is new
    t = next(t for t in kg.neighbors(MI, relation="has_symptom") if t.object == SWEATING)
    assert t.source == mined.SOURCE and t.extra["citation"]["organisation"] == "NHLBI"

    # a curated edge for the same pair is not duplicated: the mined source and citation are recorded on it
    assert len(kg.graph[MI][CHEST_PAIN]) == 1
    cur = kg.graph[MI][CHEST_PAIN]["has_symptom"]
    assert cur["source"] == "do-disease-symptom" and cur["also_sources"] == [mined.SOURCE]
    assert cur["citation"]["surface"] == "chest pain"
    assert kg.graph.pred[CHEST_PAIN][MI]["has_symptom"] is cur
    # ... without touching the attribute dict the built graph shares with other edges
    assert kg.graph[ASTHMA][WHEEZING]["has_symptom"] == wheezing_before
    assert "citation" not in kg.graph[ASTHMA][WHEEZING]["has_symptom"]
    stats = kg.stats()
    assert stats["edges_per_source"][mined.SOURCE] == 2
    assert stats["edges_per_relation"]["has_symptom"] == 3


def test_overlay_records_on_a_phenotype_annotation_and_skips_unknown_concepts():
    kg = small_kg()
    edges = [edge(HP_DYSPNEA, "chest pain", disease=ASTHMA), edge("SYMP:9999999", "chest pain"),
             edge(ASTHMA, "chest pain", disease=MI)]
    counts = mined.apply_overlay(kg, mined.MinedFile({}, edges))
    assert counts["edges"] == 1 and counts["on_existing_edges"] == 1
    assert counts["skipped_unknown_concept"] == 1 and counts["skipped_not_a_finding"] == 1
    assert set(kg.graph[ASTHMA][HP_DYSPNEA]) == {"has_phenotype"}
    assert kg.graph[ASTHMA][HP_DYSPNEA]["has_phenotype"]["also_sources"] == [mined.SOURCE]
    assert not kg.graph.has_edge(MI, ASTHMA)


def test_overlay_step_of_load_or_build_uses_the_default_file_when_it_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("CLINICALRAG_HOME", str(tmp_path))
    kg = small_kg()
    assert mined.overlay(kg) is None and kg.version == "0123456789abcdef"
    with pytest.raises(FileNotFoundError, match="kg mine"):
        mined.overlay(kg, mined=True)
    path = mined.write(mined.default_path(kg.version), [edge(SWEATING, "cold sweat")],
                       header={"kg_version": kg.version})
    assert mined.overlay(small_kg(), mined=False) is None
    counts = mined.overlay(kg)
    assert counts["added"] == 1 and kg.graph[MI][SWEATING]["has_symptom"]["source"] == mined.SOURCE
    assert kg.version.startswith("0123456789abcdef+m") and kg.base_version == "0123456789abcdef"
    other = small_kg()
    assert mined.overlay(other, path=path)["added"] == 1 and other.version == kg.version


# ---------------------------------------------------------------- layering
def test_the_knowledge_layer_imports_no_agent_graph_or_cli_code():
    root = Path(__file__).resolve().parents[2] / "knowledge"
    offenders = []
    for py in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            offenders += [f"{py.relative_to(root.parent)}: {n}" for n in names
                          if n.split(".")[0] in ("agents", "graph", "clinicalrag")]
    assert (root / "kg" / "mined.py").is_file()
    assert offenders == []


def test_an_edge_read_from_a_definition_carries_the_definitions_license():
    from knowledge.kg.mined import DEFINITION_LICENSE, LICENSE, license_of

    assert license_of("definition") == DEFINITION_LICENSE != LICENSE == license_of("symptoms")
    assert "NCI Thesaurus" in DEFINITION_LICENSE and "MedQuAD" in LICENSE

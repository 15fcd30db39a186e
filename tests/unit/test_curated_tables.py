"""The curated, reviewable tables of the graph build (findings kept findings, synonym and cross-reference errata,
clinical names) share one reader: its header and filled-field checks, and each table's own id check."""
from __future__ import annotations

import pytest

from knowledge.kg import build, mesh_nodes, parsers, vocab


def test_reasoned_table_reads_rows_and_skips_comments(tmp_path):
    t = tmp_path / "t.tsv"
    t.write_text("# a comment\n\nconcept\tsynonym\treason\nSYMP:1\tfoo\tnames another concept\n")
    assert parsers.read_reasoned_table(t, ("concept", "synonym", "reason")) == [["SYMP:1", "foo",
                                                                                 "names another concept"]]


@pytest.mark.parametrize("text, message", [
    ("id\tsynonym\treason\n", "header"),
    ("concept\tsynonym\treason\nSYMP:1\tfoo\t\n", "a row needs concept, synonym and a reason"),
    ("concept\tsynonym\treason\nSYMP:1\tfoo\n", "a row needs"),
])
def test_reasoned_table_rejects_a_bad_header_or_an_empty_field(tmp_path, text, message):
    t = tmp_path / "t.tsv"
    t.write_text(text)
    with pytest.raises(ValueError, match=message):
        parsers.read_reasoned_table(t, ("concept", "synonym", "reason"))


@pytest.mark.parametrize("read, text, message", [
    (build.read_synonym_errata, "concept\tsynonym\treason\ndiarrhea\tfecal incontinence\tnot an id\n", "no concept id"),
    (mesh_nodes.read_findings, "mesh\tname\treason\nhypotension\tHypotension\ta sign\n", "no MeSH UI"),
    (build.read_xref_errata, "concept\txref\treason\nDOID:446\tD003480\tno prefix\n", "no cross-reference"),
    (vocab.read_clinical_names, "name\tconcept\tkind\treason\nstrep throat\tDOID:2275\tsimilar\tno such kind\n",
     "kind 'similar'"),
    (vocab.read_clinical_names, "name\tconcept\tkind\treason\nstrep throat\tpharyngitis\tnarrower\tnot an id\n",
     "no concept id"),
    (mesh_nodes.read_diagnoses,
     "mesh\theading\tname\treason\nDVT\tVenous Thrombosis\tdeep vein thrombosis\ta diagnosis\n", "no MeSH UI"),
])
def test_each_table_checks_its_ids(tmp_path, read, text, message):
    table = tmp_path / "table.tsv"
    table.write_text(text)
    with pytest.raises(ValueError, match=message):
        read(table)


def test_the_shipped_tables_read():
    assert ("SYMP:0000570", "fecal incontinence") in {
        (c, s) for c, s, _ in build.read_synonym_errata(build.LOCAL_SOURCES["kg-synonym-errata"][0])}
    assert len(mesh_nodes.read_findings()) >= 20
    assert mesh_nodes.read_diagnoses()["D020246"] == "deep vein thrombosis"
    assert ("DOID:446", "MESH:D003480") in {(c, x) for c, x, _ in build.read_xref_errata(
        build.LOCAL_SOURCES["kg-xref-errata"][0])}
    assert ("sepsis", "DOID:0040085", "MAPPED") in vocab.read_clinical_names()

"""agents.verifier.citations: parsing, cleaning and stripping inline citations."""
from __future__ import annotations

from agents.verifier import Citation, clean_citations, parse_citations, strip_citations

A = "B:0000123-2#0"
G = "G:DOID:2841|has_symptom|SYMP:0000614"
KNOWN = {A, G}


def test_forms_and_order():
    text = f"Wheeze [{A}; {G}]. Again [{G}][{A}:5-60] and [1] and [{A}, {G}] and [{A}:60-5]."
    assert [(c.id, c.span, c.raw) for c in parse_citations(text, KNOWN)] == [
        (A, None, A), (G, None, G), (A, (5, 60), f"{A}:5-60"), (A, (5, 60), f"{A}:60-5")]


def test_unknown_and_non_id_brackets_are_not_citations():
    assert parse_citations("see [1], [sic] and [B:999#0]", KNOWN) == []
    assert parse_citations(f"[{A}:5-60]", {"B:other"}) == []


def test_citation_dataclass_defaults():
    assert Citation("x") == Citation("x", None, "")


def test_clean_removes_fabricated_ids_only():
    cleaned, fab = clean_citations(f"A [{A}; B:9999999_9#9]. B [O:made_up#1]. C [1].", KNOWN)
    assert fab == ["B:9999999_9#9", "O:made_up#1"]
    assert cleaned == f"A [{A}]. B. C [1]."


def test_clean_leaves_valid_text_unchanged():
    text = f"Asthma causes wheezing [{A}:0-40] [{G}]."
    assert clean_citations(text, KNOWN) == (text, [])


def test_strip_removes_citation_brackets_and_tidies_spaces():
    assert strip_citations(f"Asthma causes wheezing [{A}] [O:made#1] .", KNOWN) == "Asthma causes wheezing."
    assert strip_citations("Stage [1] disease [sic].") == "Stage [1] disease [sic]."
    # without the known ids, only id-shaped tokens are recognised
    assert strip_citations("Cough [x:1-2] persists [B:1#0].") == "Cough [x:1-2] persists."

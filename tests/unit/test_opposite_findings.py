"""Opposite findings (knowledge/kg/opposites.py): which names pair, which do not, and the reviewed list's format."""
from __future__ import annotations

import pytest

from knowledge.kg.opposites import PATH, direction_key, opposite_findings, read_pairs


@pytest.mark.parametrize(("name", "key"), [
    ("Increased circulating free T4 concentration", ("free t4", "up")),
    ("Decreased circulating free T4 concentration", ("free t4", "down")),
    ("Decreased thyroid-stimulating hormone level", ("thyroid stimulating hormone", "down")),
    ("Elevated circulating thyroid-stimulating hormone concentration", ("thyroid stimulating hormone", "up")),
    ("Hypokalemia", ("kalemia", "down")),
    ("Hyperkalemia", ("kalemia", "up")),
    ("Low serum calcitriol", ("calcitriol", "down")),
    ("Fever", None),
    ("Hypo", None),                                  # a prefix with nothing after it
    ("Increased or decreased sweating", None),       # two directions: not one measurement's direction
])
def test_direction_key(name, key):
    assert direction_key(name) == key


def test_pairs_by_name_and_by_list_are_symmetric_and_leave_the_rest_alone():
    names = {"A": "Hypokalemia", "B": "Hyperkalemia", "C": "Tachycardia", "D": "Bradycardia",
             "E": "Increased circulating ACTH level", "F": "Decreased circulating ACTH concentration",
             "G": "Fever", "H": "Hyperhidrosis", "I": "Increased LDL cholesterol concentration"}
    opp = opposite_findings(names, pairs=[("tachycardia", "BRADYCARDIA")])
    assert opp["A"] == {"B"} and opp["B"] == {"A"}
    assert opp["C"] == {"D"} and opp["D"] == {"C"}
    assert opp["E"] == {"F"} and opp["F"] == {"E"}
    for lone in "GHI":                      # no opposite among the names given
        assert lone not in opp


def test_reviewed_list_reads_and_rejects_a_bad_row(tmp_path):
    rows = read_pairs(PATH)
    assert len(rows) >= 10 and ("Tachycardia", "Bradycardia") in rows
    bad = tmp_path / "bad.tsv"
    bad.write_text("# comment\nTachycardia\n", encoding="utf-8")
    with pytest.raises(ValueError, match="row 1"):
        read_pairs(bad)

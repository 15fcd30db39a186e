"""Where the patient has been (agents/mee/travel.py): a travel or origin cue, then a place of the gazetteer in the
same clause, as broad world regions; denied trips and places without a cue give nothing."""
from __future__ import annotations

import pytest

from agents.mee.travel import PLACES, find_places, load_places
from knowledge.kg.endemic import REGIONS


def regions(text: str) -> list[str]:
    return sorted({r for p in find_places(text) for r in p.regions})


def test_the_gazetteer_uses_the_graph_regions_only():
    places = load_places(str(PLACES))
    assert len(places) >= 200
    assert {r for rs in places.values() for r in rs} <= set(REGIONS)
    assert places["thailand"] == ("asia",)
    assert set(places["egypt"]) >= {"africa"}


@pytest.mark.parametrize("text, expected", [
    ("25-year-old man back from Thailand 5 days ago with high fever.", ["asia"]),
    ("She returned from a safari in Kenya last week.", ["africa"]),
    ("He recently traveled to rural Mexico to visit family.", None),            # mexico: one or two regions
    ("History: traveled out of the country in the last 4 weeks: West Africa", ["africa"]),
    ("A 30-year-old man who immigrated from Guatemala 2 years ago.", None),
    ("He went on a hiking trip in and around the desert near Phoenix, Arizona, 4 months ago.", ["north_america"]),
])
def test_travel_and_origin_give_regions(text, expected):
    got = regions(text)
    assert got, text
    if expected is not None:
        assert got == expected


def test_spans_point_into_the_text():
    text = "Back from Thailand and Cambodia since Monday; fever."
    got = find_places(text)
    assert [text[p.start:p.end] for p in got] == ["Thailand", "Cambodia"]
    assert all(p.regions == ["asia"] for p in got)


@pytest.mark.parametrize("text", [
    "He denies recent travel.",
    "She has not traveled to Africa.",
    "No travel outside the city.",
    "He ate at a Thai restaurant last night.",
    "She works in a bank.",
    "The pain is from the right side.",
])
def test_no_trip_no_place(text):
    assert regions(text) == []

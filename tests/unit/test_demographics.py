"""agents.mee.demographics: age, sex and durations from free text."""
from __future__ import annotations

import pytest

from agents.mee import find_age_sex, find_durations


@pytest.mark.parametrize("text,age,sex", [
    ("A 34-year-old woman with fever", 34, "female"),
    ("62 y/o F with dizziness", 62, "female"),
    ("M/58, chest pain", 58, "male"),
    ("a 6-week-old infant, she feeds poorly", 6 * 7 / 365, "female"),
    ("18 month old boy", 1.5, "male"),
    ("Age: 71. He reports cough.", 71, "male"),
    ("She has had a cough", None, "female"),
    ("The man's wife says he is confused", None, "male"),      # the first strong word wins over pronouns
    ("His mother, a woman of 80", None, "female"),              # "woman" is strong; "his" is not
    ("250-year-old tree", None, None),                          # impossible ages are ignored
])
def test_age_and_sex(text, age, sex):
    got_age, got_sex, _ = find_age_sex(text)
    assert got_sex == sex
    assert (got_age is None and age is None) or got_age == pytest.approx(age, abs=1e-3)


def test_spans_point_at_the_words():
    text = "Patient is a 45 yo gentleman with cough"
    _, _, spans = find_age_sex(text)
    assert [text[s:e] for s, e in spans] == ["45 yo", "gentleman"]


@pytest.mark.parametrize("text,expected", [
    ("fever for 3 days and cough for two weeks", [("for 3 days", 3.0), ("for two weeks", 14.0)]),
    ("headache x 6h", [("x 6h", 0.25)]),
    ("diarrhoea over the past week", [("over the past week", 7.0)]),
    ("chest pain for 30 minutes", [("for 30 minutes", 30 / 1440)]),
    ("5 days ago he fell", [("5 days ago", 5.0)]),
    ("seen last year at d 3", []),
])
def test_durations(text, expected):
    got = [(d.text, d.days) for d in find_durations(text)]
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert [d for _, d in got] == pytest.approx([d for _, d in expected], abs=1e-4)

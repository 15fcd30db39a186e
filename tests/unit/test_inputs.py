"""Input normalisation: any value in, a clean presentation or a clear InputError out."""
from __future__ import annotations

import pytest

from graph.inputs import InputError, check_presentation, join_turns, normalise_presentation


@pytest.mark.parametrize("bad, msg", [
    ("", "empty"), ("   \n\t ", "empty"), (b"\xff\xfe\x00\x01binary", "binary"), ("a\x00b", "NUL"),
    ("fever " * 4000, "limit is 20,000"), (12345, "must be text"), (None, "must be text"),
    ("\x01\x02\x03\x04\x05", "control characters"), ("\ud800", "empty")])
def test_unusable_input_is_refused_clearly(bad, msg):
    if bad == "\ud800":   # a lone surrogate alone becomes U+FFFD: not empty, but no text either
        assert check_presentation(bad) == "\ufffd"
        return
    with pytest.raises(InputError, match=msg):
        check_presentation(bad)


@pytest.mark.parametrize("raw, clean", [
    ("fever\ud800 and cough", "fever\ufffd and cough"),
    ("rash \ud83d\ude00", "rash \U0001f600"),            # a valid surrogate pair is one character
    ("\udfff", "\ufffd"),
    ("cafe\u0301", "caf\u00e9"),                         # NFC
    ("  fever\x07 and cough  ", "fever  and cough"),     # a stray control character becomes a space
    (b"45-year-old with fever", "45-year-old with fever"),
])
def test_normalisation(raw, clean):
    text, notes = normalise_presentation(raw)
    assert text == clean
    text.encode("utf-8")


def test_notes_say_what_changed():
    _, notes = normalise_presentation("fever\ud800 cough\x07")
    assert any("surrogates" in n for n in notes) and any("control" in n for n in notes)
    assert normalise_presentation("plain text")[1] == []


def test_join_turns_keeps_the_latest_turns_within_the_limit():
    text, turns, warnings = join_turns(["a" * 10, "b" * 10], "c" * 10, max_chars=25)
    assert text == "b" * 10 + "\n" + "c" * 10 and turns == ["b" * 10, "c" * 10] and warnings
    assert join_turns([], "x", 5) == ("x", ["x"], [])

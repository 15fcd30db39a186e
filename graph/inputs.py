"""Input normalisation for the intake node: any value in, a clean presentation or a clear :class:`InputError` out.

Nothing here raises anything but :class:`InputError`:

- bytes are decoded as UTF-8 (binary data is refused); other non-text values are refused;
- NUL bytes or many control characters (binary data) are refused; a few stray control characters become spaces;
- unpaired UTF-16 surrogates (e.g. ``'\\ud800'``, which a JSON decoder lets through and which the tokenizer
  cannot encode) become U+FFFD; a valid surrogate pair becomes its character;
- the text is put in Unicode NFC form and stripped; an empty text is refused;
- a text longer than the limit is refused (the message says how to fix it).
"""
from __future__ import annotations

import unicodedata
from typing import Any

MAX_CHARS = 20000
_KEEP_CONTROLS = "\n\r\t"


class InputError(ValueError):
    """The presentation cannot be processed (empty, binary, too long). Nothing was run."""


def _has_surrogates(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def normalise_presentation(text: Any, max_chars: int = MAX_CHARS) -> tuple[str, list[str]]:
    """(the clean presentation, notes on what was changed) or :class:`InputError`."""
    notes: list[str] = []
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("the presentation is binary data, not UTF-8 text") from None
    if not isinstance(text, str):
        raise InputError(f"the presentation must be text, got {type(text).__name__}")
    if "\x00" in text:
        raise InputError("the presentation contains NUL bytes: it looks like binary data, not text")
    if _has_surrogates(text):
        fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        bad = fixed.count("\ufffd") - text.count("\ufffd")
        if bad:
            notes.append(f"replaced {bad} invalid character(s) (unpaired UTF-16 surrogates) with U+FFFD")
        text = fixed
    text = unicodedata.normalize("NFC", text)
    stripped = text.strip()
    if not stripped:
        raise InputError("the presentation is empty: describe the patient (age, sex, symptoms, findings)")
    ctrl = sum(1 for ch in stripped if unicodedata.category(ch) == "Cc" and ch not in _KEEP_CONTROLS)
    if ctrl > max(3, len(stripped) // 50):
        raise InputError("the presentation contains many control characters: it looks like binary data, not text")
    if ctrl:
        stripped = "".join(" " if unicodedata.category(ch) == "Cc" and ch not in _KEEP_CONTROLS else ch
                           for ch in stripped).strip()
        notes.append(f"replaced {ctrl} control character(s) with spaces")
        if not stripped:
            raise InputError("the presentation is empty: describe the patient (age, sex, symptoms, findings)")
    if len(stripped) > max_chars:
        raise InputError(f"the presentation has {len(stripped):,} characters; the limit is {max_chars:,}. "
                         "Shorten it to the relevant history and findings.")
    return stripped, notes


def check_presentation(text: Any, max_chars: int = MAX_CHARS) -> str:
    """The clean presentation (see :func:`normalise_presentation`) or :class:`InputError`."""
    return normalise_presentation(text, max_chars)[0]


def join_turns(history: list[str], message: str, max_chars: int) -> tuple[str, list[str], list[str]]:
    """(presentation, the turns it holds, warnings): the thread's earlier turns and the new message, oldest turns
    left out when the whole would pass ``max_chars`` (the new message alone always fits: intake checked it)."""
    turns = [*history, message]
    dropped = 0
    while len(turns) > 1 and len("\n".join(turns)) > max_chars:
        turns.pop(0)
        dropped += 1
    warnings = [f"the thread is longer than {max_chars:,} characters: its {dropped} oldest turn(s) were left out "
                "of this answer"] if dropped else []
    return "\n".join(turns), turns, warnings

"""How far a section header reaches, for the flags a section gives its entities.

medspaCy's sectionizer runs a section from its header to the next header (or the end of the text), and the
extractor gives the entities of some sections a flag: past medical and social history -> ``historical``, family
history -> ``family``, allergies and instructions -> ``hypothetical``. In a short presentation a header is often
followed by the present illness without a new header ("Past medical history: hypertension. She presents with chest
pain."), and the chest pain is not past history. So the flag of a section reaches only:

- when the header line carries text ("History: obesity; heart failure."), to the end of that line, or to the end of
  an earlier sentence when the next sentence opens on the present illness ("She ...", "He ...", "The patient ...",
  "Today ...", "On examination ...", "Her temperature ...");
- when the header stands alone on its line ("PMH:" then a list), over the following lines up to a blank line.

It never reaches past the section's own end (the next header).
"""
from __future__ import annotations

import re

# A sentence that opens on the present illness or the examination (case-sensitive: sentence starts).
_OPENER = re.compile(
    r"(?:He|She|They|Her|His|Their|The\s+patient|Patient|Pt|Now|Today|Tonight|Currently|Presently|This\s+(?:morning|"
    r"evening|afternoon)|On\s+(?:examination|exam|arrival|admission|presentation)|Examination|Physical\s+examination|"
    r"Exam|Vital\s+signs|Vitals|Temperature|Pulse|Blood\s+pressure|Laboratory|Labs|Presents|Presenting|Complains|"
    r"Reports|Over\s+the\s+(?:past|last)|For\s+the\s+(?:past|last))\b")
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def section_scope_end(text: str, body_start: int, body_end: int) -> int:
    """The character offset where the flag of a section whose body is ``text[body_start:body_end]`` stops (see the
    module docstring)."""
    body_end = min(body_end, len(text))
    line_end = text.find("\n", body_start)
    if line_end < 0:
        line_end = len(text)
    if text[body_start:line_end].strip(" \t:-\u2013\u2014"):
        end = min(line_end, body_end)
        for m in _SENTENCE_END.finditer(text, body_start, end):
            rest = m.end()
            while rest < end and text[rest].isspace():
                rest += 1
            if rest < end and _OPENER.match(text, rest):
                return m.end()
        return end
    first = line_end
    while first < body_end and text[first].isspace():
        first += 1                                   # blank lines between the header and its first line
    blank = _BLANK_LINE.search(text, first, body_end)
    return blank.start() if blank else body_end


__all__ = ["section_scope_end"]

"""agents.verifier.claims: an answer split into claims with their citations."""
from __future__ import annotations

from agents.types import Draft, DifferentialItem
from agents.verifier import split_claims
from agents.verifier.claims import compose_text, split_sentences

A = "B:0000123-2#0"
G = "G:DOID:2841|has_symptom|SYMP:0000614"
KNOWN = {A, G}


def test_headers_disclaimers_and_insufficient_lines_are_skipped():
    text = (f"## Differential diagnosis\n"
            f"1. **Asthma** (high): recurrent wheezing fits asthma. [{G}] Asthma often starts in "
            f"childhood, e.g. before age 10 [{A}].\n"
            f"- Insufficient evidence to rank bronchiolitis.\n"
            f"Next steps:\n"
            f"| --- | --- |\n"
            f"This is decision support, not a substitute for clinical judgement.")
    claims, skipped = split_claims(text, KNOWN)
    assert [c.clean for c in claims] == ["Asthma (high): recurrent wheezing fits asthma.",
                                         "Asthma often starts in childhood, e.g. before age 10."]
    assert [[x.id for x in c.citations] for c in claims] == [[G], [A]]
    assert [s.split(":")[0] for s in skipped] == ["header", "insufficient-evidence statement", "header",
                                                  "disclaimer"]


def test_citations_after_the_full_stop_belong_to_the_sentence_before():
    claims, _ = split_claims(f"Asthma narrows the airways. [{A}] [{G}] It is common.", KNOWN)
    assert [(c.clean, [x.id for x in c.citations]) for c in claims] == [
        ("Asthma narrows the airways.", [A, G]), ("It is common.", [])]


def test_a_stray_citation_line_attaches_to_the_previous_claim():
    claims, _ = split_claims(f"- Asthma narrows the airways.\n- [{G}]", KNOWN)
    assert len(claims) == 1 and [x.id for x in claims[0].citations] == [G]


def test_decimals_and_abbreviations_do_not_end_a_claim():
    claims, _ = split_claims(f"Temperature of 38.5 C is a fever, i.e. pyrexia [{A}]. Dr. Smith agrees.", KNOWN)
    assert [c.clean for c in claims] == ["Temperature of 38.5 C is a fever, i.e. pyrexia.", "Dr. Smith agrees."]


def test_evidence_sentences():
    assert split_sentences("One. Two!\nThree? Four\n\nok") == ["One.", "Two!", "Three?", "Four"]   # "ok": too short


def test_text_composed_from_a_structured_draft():
    draft = Draft(differential=[
        DifferentialItem(rank=1, diagnosis="Asthma", rationale="Asthma causes wheezing.", citations=[A, G]),
        DifferentialItem(rank=2, diagnosis="Bronchiolitis", rationale="", citations=[]),
    ], next_steps=["Spirometry"])
    assert compose_text(draft) == f"- Asthma causes wheezing [{A}][{G}].\n- Bronchiolitis\n- Spirometry"

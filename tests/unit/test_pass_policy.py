"""agents.verifier: the pass rule, the LLM/deterministic combination and the lexical scoring."""
from __future__ import annotations

import pytest

from agents.types import ClaimCheck, Draft, Evidence
from agents.verifier import PassPolicy, Verifier, combine, content_stems, negated_stems


def check(verdict="SUPPORTED", confidence=0.9, citations=("B:1#0",)) -> ClaimCheck:
    return ClaimCheck(claim="Asthma causes wheezing.", citations=list(citations), verdict=verdict,
                      confidence=confidence)


def test_all_supported_passes():
    p = PassPolicy()
    checks = [check(), check(confidence=0.75)]
    assert p.reasons(checks) == [] and p.supported_ratio(checks) == 1.0


def test_each_failure_is_named():
    p = PassPolicy(confidence_threshold=0.75, max_partial_ratio=0.10)
    checks = [check("CONTRADICTED", 0.8), check(citations=()), check(confidence=0.6), check("INSUFFICIENT", 0.7)]
    reasons = p.reasons(checks)
    assert reasons[0].startswith("claim 1 CONTRADICTED by B:1#0")
    assert reasons[1].startswith("claim 2 has no citation")
    assert reasons[2].startswith("claim 3 SUPPORTED with low confidence 0.60 < 0.75")
    assert reasons[3].startswith("2/4 claims not fully supported (50% > 10%): claims 3, 4")
    assert reasons[4].startswith("claim 4 INSUFFICIENT against B:1#0")
    assert p.supported_ratio(checks) == 0.25


def test_partial_ratio_budget():
    checks = [check()] * 9 + [check("INSUFFICIENT", 0.6)]
    assert PassPolicy(max_partial_ratio=0.10).reasons(checks) == []
    assert PassPolicy(max_partial_ratio=0.05).reasons(checks)[0].startswith("1/10 claims not fully supported")


def test_no_claims_and_overflow_fail():
    p = PassPolicy(max_claims=3)
    assert p.reasons([], insufficient=True) == [
        "no verifiable claims in the answer (the draft declares insufficient evidence)"]
    assert p.reasons([check()] * 3, overflow=2) == ["2 claims beyond max_claims=3 were not checked"]
    assert p.supported_ratio([]) == 0.0


def test_combine_rules():
    assert combine("SUPPORTED", 0.8, "SUPPORTED", 0.9) == ("SUPPORTED", pytest.approx(0.89))
    v, c = combine("SUPPORTED", 0.9, "INSUFFICIENT", 0.8)
    assert v == "INSUFFICIENT" and c == pytest.approx(0.8 * 0.55)
    assert combine("SUPPORTED", 0.9, "CONTRADICTED", 0.5)[0] == "INSUFFICIENT"
    assert combine("SUPPORTED", 0.9, "CONTRADICTED", 0.9)[0] == "CONTRADICTED"
    assert combine("CONTRADICTED", 0.9, "SUPPORTED", 1.0) == ("CONTRADICTED", pytest.approx(0.45))


def test_content_and_negated_stems():
    assert content_stems("Asthma may cause recurring wheezing and coughing") == ["asthma", "caus", "recur",
                                                                                  "wheez", "cough"]
    assert negated_stems("Asthma does not cause fever, but it causes wheezing.") == {"caus", "fever"}
    assert negated_stems("Pleurisy is not a condition in which the pleura is inflamed") >= {"pleura"}
    assert negated_stems("The rash is absent") == {"rash"}


EV = Evidence(id="B:0000123-2#0", role="B", kind="chunk", title="Asthma",
              text="Asthma is a chronic disease of the airways. It causes recurring periods of wheezing and "
                   "coughing. There is no cure for asthma.")


def test_lexical_verdicts_without_embedder_or_llm():
    v = Verifier().verify(Draft(text=f"Asthma causes recurring wheezing [{EV.id}].\n"
                                     f"Asthma has a cure [{EV.id}].\n"
                                     f"Asthma is caused by a bacterial infection [{EV.id}]."), [EV])
    assert [c.verdict for c in v.claims] == ["SUPPORTED", "CONTRADICTED", "INSUFFICIENT"]
    assert v.claims[0].confidence == 1.0 and "negation mismatch on asthma, cur vs" in v.claims[1].note
    assert not v.passed and v.supported_ratio == pytest.approx(1 / 3, abs=1e-4)


def test_fabricated_citations_are_removed_and_reported():
    v = Verifier().verify(Draft(text=f"Asthma causes recurring wheezing [{EV.id}; B:999#9]."), [EV])
    assert v.fabricated_citations == ["B:999#9"] and v.passed
    assert v.cleaned_text == f"Asthma causes recurring wheezing [{EV.id}]."
    assert v.notes == ["removed 1 fabricated citation(s): B:999#9"]

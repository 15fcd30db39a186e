"""Policy that lives in the agents (the graph only calls it): citation hygiene, the insufficient-draft
verification, grading without MEE, KRG's cited ids, config -> retrieval parameters, the entity cap."""
from __future__ import annotations

import pytest
from asthma_case import CHUNK, WHEEZE, asthma_state

from agents.answer import INSUFFICIENT_REASON, clean_draft, valid_citation, verify_draft
from agents.grader import grade
from agents.hki import RetrievalParams
from agents.krg import KRG
from agents.types import DifferentialItem, Draft, Entity, Extraction
from agents.verifier import Verifier
from graph.config import PipelineConfig


def test_valid_citation():
    known = {WHEEZE, CHUNK}
    assert valid_citation(WHEEZE, known) and valid_citation(f"[{CHUNK}:0-40]", known)
    assert not valid_citation("B:invented#1", known) and not valid_citation("1", known)
    assert not valid_citation("", known)


def test_clean_draft_removes_unknown_ids_everywhere():
    d = Draft(text=f"Asthma [{WHEEZE}][B:x#1].", next_steps=["Test [O:y#2]"],
              differential=[DifferentialItem(rank=1, diagnosis="asthma", rationale="r [G:a|b|c]",
                                             citations=[WHEEZE, "B:x#1"])])
    out, removed = clean_draft(d, {WHEEZE})
    assert out.text == f"Asthma [{WHEEZE}]." and out.next_steps == ["Test"]
    assert out.differential[0].citations == [WHEEZE] and out.differential[0].rationale == "r"
    assert removed == ["B:x#1", "G:a|b|c", "O:y#2"]
    assert d.differential[0].citations == [WHEEZE, "B:x#1"]     # the input is not modified


def test_insufficient_draft_fails_verification_without_claims():
    s = asthma_state()
    v = verify_draft(Verifier(), Draft(text="Insufficient evidence.", insufficient=True), s["evidence"])
    assert not v.passed and v.reasons == [INSUFFICIENT_REASON] and v.claims == []


def test_grade_without_entities_counts_evidence():
    s = asthma_state()
    g = grade(Extraction(), s["evidence"], [], {}, min_evidence=3, use_entities=False)
    assert g.sufficient and g.reasons == []
    g = grade(Extraction(), s["evidence"][:1], [], {}, min_evidence=3, use_entities=False)
    assert not g.sufficient and g.reasons == ["only 1 evidence items (need 3)"]
    g = grade(Extraction(), s["evidence"], [], {}, min_evidence=3, use_entities=True)   # with MEE: no findings
    assert not g.sufficient


def test_krg_for_answer_falls_back_to_the_most_relevant_evidence():
    s = asthma_state()
    refs, _ = KRG().for_answer(Draft(text="no citations"), s["evidence"], fallback=2)
    assert {i for r in refs for i in r.evidence_ids} == {e.id for e in s["evidence"][:2]}


def test_retrieval_parameters_from_config():
    p = RetrievalParams.from_config(PipelineConfig(sources=["O", "G"], top_k_per_source=9, chunk_k=3,
                                                   max_evidence=12, differential_k=4, use_mee=False))
    assert p == RetrievalParams(sources=("G", "O"), top_k=9, chunk_k=3, max_evidence=12, differential_k=4,
                                use_entities=False)
    q = RetrievalParams.from_config(PipelineConfig(use_subtypes=False, subtype_ratio=0.25, subtype_standout=3))
    assert (q.use_subtypes, q.subtype_ratio, q.subtype_standout) == (False, 0.25, 3.0)


def test_entity_cap_keeps_demographics_and_the_first_findings():
    ents = [Entity(text="45 y", category="demographic")] + [Entity(text=f"f{i}", category="symptom")
                                                           for i in range(5)]
    capped, note = Extraction(entities=ents).capped(2)
    assert [e.text for e in capped.entities] == ["45 y", "f0", "f1"] and "5 clinical entities" in note
    same, none = Extraction(entities=ents).capped(5)
    assert none is None and len(same.entities) == 6


def test_demographic_penalty_for_sex_and_age_bound_disease_names():
    from agents.ranker import RankerConfig, demographic_factor

    cfg = RankerConfig()
    assert demographic_factor("prostate cancer", 25, "female", cfg) == cfg.sex_mismatch
    assert demographic_factor("ovarian cyst", 60, "male", cfg) == cfg.sex_mismatch
    assert demographic_factor("prostate cancer", 70, "male", cfg) == 1.0
    assert demographic_factor("male breast cancer", 52, "female", cfg) == cfg.sex_mismatch
    assert demographic_factor("breast cancer", 52, "female", cfg) == 1.0
    assert demographic_factor("female breast cancer", 52, "female", cfg) == 1.0
    assert demographic_factor("HELLP syndrome", 35, "male", cfg) == cfg.sex_mismatch
    assert demographic_factor("severe pre-eclampsia", 35, "male", cfg) == cfg.sex_mismatch
    assert demographic_factor("premenstrual tension", 22, "male", cfg) == cfg.sex_mismatch
    assert demographic_factor("orchitis", 30, "female", cfg) == cfg.sex_mismatch
    assert demographic_factor("HELLP syndrome", 35, "female", cfg) == 1.0
    # HPO's ages of onset: all of them infancy or earlier -> the adult penalty; any later one -> none
    assert demographic_factor("biliary atresia", 35, "male", cfg, onset=("infantile",)) == cfg.age_mismatch
    assert demographic_factor("biliary atresia", 0.2, "male", cfg, onset=("infantile",)) == 1.0
    assert demographic_factor("Fabry disease", 35, "male", cfg, onset=("childhood", "adult")) == 1.0
    assert demographic_factor("Alport syndrome", 35, None, cfg, onset=("congenital", "juvenile")) == 1.0
    assert demographic_factor("juvenile idiopathic arthritis", 40, None, cfg) == cfg.age_mismatch
    assert demographic_factor("juvenile idiopathic arthritis", 9, None, cfg) == 1.0
    assert demographic_factor("sudden infant death syndrome", 72, "female", cfg) == cfg.age_mismatch
    assert demographic_factor("sudden infant death syndrome", 0.3, None, cfg) == 1.0
    assert demographic_factor("cystitis", None, None, cfg) == 1.0
    # a curated typical age (the cardinal-findings table) works both ways, once, and not without an age
    assert demographic_factor("Kawasaki disease", 25, "male", cfg, typical_age=(None, 10.0)) == cfg.age_mismatch
    assert demographic_factor("Kawasaki disease", 3, "male", cfg, typical_age=(None, 10.0)) == 1.0
    assert demographic_factor("polymyalgia rheumatica", 30, None, cfg, typical_age=(50.0, None)) == cfg.age_mismatch
    assert demographic_factor("polymyalgia rheumatica", 72, None, cfg, typical_age=(50.0, None)) == 1.0
    assert demographic_factor("polymyalgia rheumatica", None, None, cfg, typical_age=(50.0, None)) == 1.0
    assert demographic_factor("juvenile idiopathic arthritis", 40, None, cfg,
                              typical_age=(None, 16.0)) == cfg.age_mismatch
    # a restricted disease weighs down only when the patient has been only where it is not acquired
    assert demographic_factor("Ebola virus disease", 25, "male", cfg, endemic=("africa",),
                              regions=["asia"]) == cfg.region_mismatch
    assert demographic_factor("Ebola virus disease", 25, "male", cfg, endemic=("africa",),
                              regions=["asia", "africa"]) == 1.0
    assert demographic_factor("Ebola virus disease", 25, "male", cfg, endemic=("africa",), regions=[]) == 1.0
    assert demographic_factor("influenza", 25, "male", cfg, endemic=(), regions=["asia"]) == 1.0
    # the time fit: a chronic disease for an illness of days, an acute one for months; nothing when either is unknown
    assert demographic_factor("bronchiectasis", 72, "male", cfg, typical_course="chronic",
                              course="acute") == cfg.course_mismatch
    assert demographic_factor("influenza", 40, None, cfg, typical_course="acute",
                              course="chronic") == cfg.course_mismatch
    assert demographic_factor("bronchiectasis", 72, "male", cfg, typical_course="chronic", course="chronic") == 1.0
    assert demographic_factor("influenza", 40, None, cfg, typical_course="acute", course="acute") == 1.0
    assert demographic_factor("asthma", 40, None, cfg, typical_course=None, course="acute") == 1.0
    assert demographic_factor("bronchiectasis", 72, None, cfg, typical_course="chronic", course=None) == 1.0


def test_fusion_keeps_the_age_and_sex_penalty_of_ranked_candidates():
    """The KG ranking's score carries the demographic penalty but rank fusion reads only its rank: a pregnancy
    condition ranked first by the KG and by its page must still fall behind for a man."""
    from agents.hki import HKI, RetrievalParams
    from agents.types import Candidate

    class _NoConcepts:          # the two ranked diseases need no look-up; nothing else is asked
        graph = None

        def concept(self, cid):
            return None

    hki = HKI(index=None, kg=_NoConcepts(), ranker=None)
    ranked = [Candidate(concept_id="D:1", name="severe pre-eclampsia", score=1.0),
              Candidate(concept_id="D:2", name="acute viral hepatitis", score=0.9)]
    p = RetrievalParams()
    fused = hki._fuse(ranked, {}, p, age=35, sex="male", page_rank={"D:1": 1, "D:2": 2})
    assert [c.concept_id for c in fused] == ["D:2", "D:1"]
    same = hki._fuse(ranked, {}, p, age=35, sex="female", page_rank={"D:1": 1, "D:2": 2})
    assert [c.concept_id for c in same] == ["D:1", "D:2"]


def test_a_disease_only_word_search_found_is_weighed_down():
    """A disease no finding of the patient matched in the knowledge graph, put forward by the text and page searches
    alone, has its fused score multiplied by ``unmatched_factor``; a disease the KG ranking matched keeps its own."""
    from types import SimpleNamespace

    from agents.hki import HKI, RetrievalParams
    from agents.types import Candidate

    class _Names:               # the word-search disease needs its name; no graph facts (age, region, course)
        graph = None

        def concept(self, cid):
            return SimpleNamespace(name={"D:9": "herpes zoster"}.get(cid, cid))

    hki = HKI(index=None, kg=_Names(), ranker=None)
    ranked = [Candidate(concept_id="D:1", name="pharyngitis", score=1.0)]
    votes, pages = {"D:9": (1.0, "chunk"), "D:1": (0.5, "chunk")}, {"D:9": 1}   # D:1: KG 1st, text 2nd

    def scores(factor):
        # the ranks alone (kg_score_weight 0): the KG's own margin is another test's subject
        fused = hki._fuse(ranked, votes, RetrievalParams(unmatched_factor=factor, kg_score_weight=0.0),
                          page_rank=pages)
        return {c.concept_id: c.score for c in fused}

    plain, weighed = scores(1.0), scores(0.85)
    assert plain["D:9"] > plain["D:1"]                          # first on word overlap alone ...
    assert weighed["D:9"] == pytest.approx(0.85 * plain["D:9"], abs=1e-4)
    assert weighed["D:1"] == plain["D:1"] and weighed["D:1"] > weighed["D:9"]   # ... behind the KG's match now
    assert RetrievalParams().unmatched_factor == 0.85


def test_the_kg_ranking_weighs_by_its_margin_not_its_rank_alone():
    """The KG ranking's part of the fusion grows with a candidate's KG score relative to the best one: a disease the
    KG puts far ahead keeps its first place against the KG's distant second that the page search also names; a close
    second with the same page rank still passes it. With ``kg_score_weight`` 0 the ranks alone decide."""
    from agents.hki import HKI, RetrievalParams
    from agents.types import Candidate

    class _NoConcepts:          # every fused disease is a ranked one: no look-up
        graph = None

        def concept(self, cid):
            return None

    hki = HKI(index=None, kg=_NoConcepts(), ranker=None)

    def order(second_score, weight):
        ranked = [Candidate(concept_id="D:1", name="first", score=10.0),
                  Candidate(concept_id="D:2", name="second", score=second_score)]
        fused = hki._fuse(ranked, {}, RetrievalParams(kg_score_weight=weight), page_rank={"D:2": 4})
        return [c.concept_id for c in fused], {c.concept_id: c.score for c in fused}

    assert order(2.0, 0.0)[0] == ["D:2", "D:1"]       # 1/5 + 1/7 against 1/4: the ranks alone
    ids, scores = order(2.0, 0.15)
    assert ids == ["D:1", "D:2"]                        # far behind in the KG: the page rank does not lift it past
    assert scores["D:1"] == pytest.approx(1 / 4 + 0.15, abs=1e-4)
    assert scores["D:2"] == pytest.approx(1 / 5 + 1 / 7 + 0.15 * 0.2, abs=1e-4)
    assert order(9.5, 0.15)[0] == ["D:2", "D:1"]       # a close second: the page rank decides
    assert RetrievalParams().kg_score_weight == 0.15


def test_an_exposure_raises_only_a_disease_a_finding_matches():
    """A stated exposure (the real risk-factor table: immunosuppression -> herpes zoster) multiplies the fused score
    of a disease the KG ranking matched, and of one word search alone found only when ``risk_needs_match`` is off:
    immunosuppression and a burning sore throat do not make herpes zoster likelier without a rash."""
    from types import SimpleNamespace

    from agents.hki import HKI, RetrievalParams
    from agents.risk_factors import RiskFactors, load_risk_factors
    from agents.types import Candidate

    class _Names:               # the word-search disease needs its name; no graph facts (age, region, course)
        graph = None

        def concept(self, cid):
            return SimpleNamespace(name={"DOID:8536": "herpes zoster"}.get(cid, cid))

    risk = RiskFactors(load_risk_factors()).diseases("History: immunosuppressed.")
    zoster, tb = "DOID:8536", "DOID:399"
    assert zoster in risk and tb in risk
    hki = HKI(index=None, kg=_Names(), ranker=None)
    ranked = [Candidate(concept_id="DOID:2275", name="pharyngitis", score=1.0),
              Candidate(concept_id=tb, name="tuberculosis", score=0.5)]
    votes, pages = {zoster: (1.0, "chunk")}, {zoster: 2}

    def fused(needs_match):
        out = hki._fuse(ranked, votes, RetrievalParams(risk_needs_match=needs_match), page_rank=pages, risk_hits=risk)
        return {c.concept_id: c for c in out}

    strict, loose = fused(True), fused(False)
    words_only = 0.85 * (1 / 4 + 1 / 5)                              # text 1st, page 2nd, unmatched_factor
    assert strict[zoster].score == pytest.approx(words_only, abs=1e-3)   # word search alone: no boost ...
    assert "history makes it likelier" not in strict[zoster].explanation
    assert not [t for t in strict[zoster].supporting if "immunosuppression" in t]   # ... and the exposure not cited
    assert [t for t in loose[zoster].supporting if "immunosuppression" in t]
    assert loose[zoster].score == pytest.approx(1.6 * strict[zoster].score, abs=1e-3)
    assert "history makes it likelier" in loose[tb].explanation and "history makes it likelier" in strict[tb].explanation
    assert strict[tb].score == loose[tb].score                       # a KG-matched disease keeps its boost
    assert RetrievalParams().risk_needs_match is True

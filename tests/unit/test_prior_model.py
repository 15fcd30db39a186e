"""The commonness prior's model (agents/prior.py) and feature coding (knowledge/prior.py) on hand-made problems:
the conditional-logit fit finds the direction that generated the data, its gradient is the objective's, the
re-scoring re-orders by the fitted utility and says why. No data, no knowledge graph."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from agents.prior import (DATA_FILE, EVIDENCE_FEATURES, FUSION_FEATURES, RANK_FEATURES, RANK_K, CommonnessPrior,
                          _objective, evidence_values, feature_rows, fit_conditional_logit, fusion_values,
                          n_case_features, n_fusion_features, rank_values)
from agents.types import Candidate
from knowledge.prior import FEATURES, PriorFeatures, feature_vector, icd10cm_chapter


def simulated_cases(beta_true: np.ndarray, n_cases: int = 400, n_cand: int = 6, seed: int = 1):
    """Cases whose gold is drawn from softmax(x @ beta_true) over random candidate features."""
    rng = np.random.default_rng(seed)
    xs, golds = [], []
    for _ in range(n_cases):
        x = rng.normal(size=(n_cand, len(beta_true)))
        u = x @ beta_true
        p = np.exp(u - u.max())
        p /= p.sum()
        xs.append(x)
        golds.append([int(rng.choice(n_cand, p=p))])
    return xs, golds


def test_fit_recovers_the_direction_that_generated_the_gold_candidates():
    beta_true = np.array([2.0, 0.0, -1.0])
    xs, golds = simulated_cases(beta_true)
    r = fit_conditional_logit(xs, golds, l2=0.001)
    assert r.converged
    assert r.beta[0] > 1.0 and r.beta[2] < -0.4
    assert abs(r.beta[1]) < 0.3
    cosine = r.beta @ beta_true / (np.linalg.norm(r.beta) * np.linalg.norm(beta_true))
    assert cosine > 0.97
    assert r.nll < r.nll_start          # better than every candidate equally likely
    assert r.nll_start == pytest.approx(math.log(6))


def test_a_stronger_penalty_shrinks_only_the_penalised_weights():
    xs, golds = simulated_cases(np.array([1.5, -1.5]), n_cases=150)
    light = fit_conditional_logit(xs, golds, l2=0.001)
    heavy = fit_conditional_logit(xs, golds, l2=1.0)
    assert np.linalg.norm(heavy.beta) < 0.7 * np.linalg.norm(light.beta)
    free = fit_conditional_logit(xs, golds, l2=1.0, penalise=[False, True])
    assert abs(free.beta[0]) > abs(heavy.beta[0]) + 0.2      # the unpenalised weight keeps its size
    assert abs(free.beta[1]) < abs(light.beta[1])


def test_gradient_matches_finite_differences_with_several_gold_candidates():
    rng = np.random.default_rng(7)
    xs = [rng.normal(size=(5, 4)) for _ in range(12)]
    golds = [np.array([0, 3]) if i % 3 == 0 else np.array([i % 5]) for i in range(12)]
    beta = rng.normal(size=4)
    pen = np.array([0.0, 1.0, 1.0, 1.0])
    f, grad, _ = _objective(beta, xs, golds, 0.3, pen)
    eps = 1e-6
    for j in range(4):
        step = np.zeros(4)
        step[j] = eps
        num = (_objective(beta + step, xs, golds, 0.3, pen)[0] - _objective(beta - step, xs, golds, 0.3, pen)[0])
        assert grad[j] == pytest.approx(num / (2 * eps), rel=1e-5, abs=1e-7)


def test_cases_without_a_gold_candidate_carry_no_information():
    x = [np.eye(3)]
    with pytest.raises(ValueError, match="no case has a gold candidate"):
        fit_conditional_logit(x, [[]])
    xs, golds = simulated_cases(np.array([1.0, 0.5]), n_cases=80)
    a = fit_conditional_logit(xs, golds, l2=0.01)
    b = fit_conditional_logit(xs + [np.ones((4, 2))] * 5, golds + [[]] * 5, l2=0.01)
    assert a.cases == b.cases == 80
    np.testing.assert_allclose(a.beta, b.beta)


@pytest.mark.parametrize(("code", "chapter"), [
    ("J11.1", 10), ("A09", 1), ("B99.9", 1), ("C50.911", 2), ("D49.9", 2), ("D57.1", 3), ("H59", 7), ("H60.1", 8),
    ("O9A.11", 15), ("Q87.8", 17), ("S72.0", 19), ("T88.7", 19), ("U07.1", 22), ("Z87", 21), ("787", None),
    ("", None),
])
def test_icd10cm_chapters(code, chapter):
    assert icd10cm_chapter(code) == chapter


def test_feature_coding_of_page_collections_counts_and_subsets():
    common = dict(zip(FEATURES, feature_vector({"pages": ["MPlusHealthTopics", "NHLBI", "GARD"], "drugs": 40,
                                                 "hsdn": 155, "icd": [10], "subsets": [], "sources": 7,
                                                 "names": 9})))
    rare = dict(zip(FEATURES, feature_vector({"pages": ["GARD", "GHR"], "icd": [], "subsets": ["DO_rare_slim"],
                                               "hpo_only": True, "registry": True, "sources": 1, "names": 1})))
    assert common["consumer_page"] == common["institute_page"] == 1.0 and common["rare_pages_only"] == 0.0
    assert common["drug_indications"] == pytest.approx(math.log(41))
    assert common["icd10cm"] == common["icd_ch10"] == 1.0 and common["icd_ch01"] == 0.0
    assert rare["consumer_page"] == 0.0 and rare["rare_pages_only"] == 1.0
    assert rare["do_rare_slim"] == rare["hpo_only"] == rare["rare_registry"] == 1.0
    assert rare["icd10cm"] == 0.0 and rare["drug_indications"] == 0.0
    assert feature_vector({}) == [0.0] * len(FEATURES)


# ---- re-scoring with a hand-made model -------------------------------------------------------------------

TABLE = PriorFeatures({
    "X:rare": {"pages": ["GARD", "GHR"], "subsets": ["DO_rare_slim"], "sources": 2, "names": 2},
    "X:common": {"pages": ["MPlusHealthTopics", "CDC"], "drugs": 12, "icd": [10], "sources": 7, "names": 20},
    "X:plain": {"sources": 3, "names": 3},
})


def model(consumer: float = 2.0, rare: float = -1.0) -> CommonnessPrior:
    names = [*FUSION_FEATURES, "consumer_page", "rare_pages_only"]
    return CommonnessPrior.from_dict({
        "format": 1, "features": names, "provisional": True,
        "weights": dict(zip(names, [1.0, 0.0, consumer, rare])),
        "mean": dict.fromkeys(names, 0.0), "scale": dict.fromkeys(names, 1.0)}, TABLE)


def fused() -> list[Candidate]:
    return [Candidate(concept_id="X:rare", name="rare fever", score=0.5, explanation="text rank 1"),
            Candidate(concept_id="X:plain", name="plain disease", score=0.45, explanation="text rank 2"),
            Candidate(concept_id="X:common", name="common fever", score=0.4, explanation="text rank 3")]


def test_fusion_features_are_relative_score_and_log_rank():
    np.testing.assert_allclose(fusion_values(fused()), [[1.0, 0.0], [0.9, math.log(2)], [0.8, math.log(3)]])
    rows = feature_rows(TABLE, fused(), ["fusion_score", "consumer_page", "drug_indications"])
    np.testing.assert_allclose(rows, [[1.0, 0.0, 0.0], [0.9, 0.0, 0.0], [0.8, 1.0, math.log(13)]])


def test_rescore_puts_the_common_disease_first_and_says_why():
    out = model().rescore(fused())
    assert [c.concept_id for c in out] == ["X:common", "X:plain", "X:rare"]
    assert sum(c.score for c in out) == pytest.approx(1.0, abs=1e-3)
    assert out[0].score > out[1].score > out[2].score
    assert "commonness prior +2.00 (raised by: consumer health pages (MedlinePlus, CDC))" in out[0].explanation
    assert out[0].explanation.startswith("text rank 3; ")
    assert "commonness prior -1.00 (lowered by: only rare/genetic disease pages (GARD/GHR))" in out[2].explanation


def test_prior_weight_zero_keeps_the_fusion_order():
    out = model().rescore(fused(), weight=0.0)
    assert [c.concept_id for c in out] == ["X:rare", "X:plain", "X:common"]
    half = model().rescore(fused(), weight=0.05)      # too weak to overturn a fusion lead of 0.2
    assert [c.concept_id for c in half] == ["X:rare", "X:plain", "X:common"]


def test_monotone_prior_never_rewards_a_lower_fused_rank():
    """With a positive weight on the log of the fused rank (the shipped fit has one), a candidate fused one place lower
    at nearly the same score gains; ``monotone`` caps each fusion part at the parts fused above it, so near-ties are
    ordered by the commonness part and then by the fusion."""
    names = [*FUSION_FEATURES, "consumer_page"]
    m = CommonnessPrior.from_dict({
        "format": 1, "features": names, "provisional": True, "weights": dict(zip(names, [1.0, 2.0, 0.5])),
        "mean": dict.fromkeys(names, 0.0), "scale": dict.fromkeys(names, 1.0)}, TABLE)
    near = [Candidate(concept_id="X:rare", name="rare fever", score=0.5),
            Candidate(concept_id="X:plain", name="plain disease", score=0.49),
            Candidate(concept_id="X:common", name="common fever", score=0.45)]
    assert [c.concept_id for c in m.rescore(near)] == ["X:common", "X:plain", "X:rare"]     # rank rewarded
    out = m.rescore(near, monotone=True)
    assert [c.concept_id for c in out] == ["X:common", "X:rare", "X:plain"]
    assert out[0].score > out[1].score == out[2].score


def test_a_model_naming_unknown_features_or_without_fusion_features_is_refused():
    names = [*FUSION_FEATURES, "popularity"]
    doc = {"format": 1, "features": names, "weights": dict.fromkeys(names, 1.0), "mean": dict.fromkeys(names, 0.0),
           "scale": dict.fromkeys(names, 1.0)}
    with pytest.raises(ValueError, match="unknown features"):
        CommonnessPrior.from_dict(doc, TABLE)
    names = ["consumer_page"]
    doc = {"format": 1, "features": names, "weights": {"consumer_page": 1.0}, "mean": {"consumer_page": 0.0},
           "scale": {"consumer_page": 1.0}}
    with pytest.raises(ValueError, match="must start with"):
        CommonnessPrior.from_dict(doc, TABLE)


def test_the_packaged_weights_load_and_carry_their_provenance():
    data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    prior = CommonnessPrior.load(TABLE)
    nf, nfus = n_case_features(prior.names), n_fusion_features(prior.names)
    assert prior.names[:2] == list(FUSION_FEATURES) and set(prior.names[2:nfus]) <= set(RANK_FEATURES)
    assert set(prior.names[nfus:nf]) <= set(EVIDENCE_FEATURES)
    assert set(prior.names[nf:]) <= set(FEATURES)
    prov = data["provenance"]
    assert prov["split"] == "dev"
    assert prov["cases"] > 0 and prov["datasets"]
    assert {"date", "code_version", "kg_version", "feature_table", "pool"} <= set(prov)
    assert data["provisional"] == prior.provisional
    if prior.provisional:
        assert "PROVISIONAL" in data["note"]
    # a fitted prior must favour the consumer-page diseases over the rare-disease-page-only ones
    w = data["weights"]
    assert w["consumer_page"] > w["rare_pages_only"]


def test_the_digest_names_the_model_and_changes_with_its_weights():
    a, b = model(), model(consumer=2.5)
    assert a.digest() == model().digest() != b.digest()
    info = a.describe()
    assert info["digest"] == a.digest() and info["provisional"] is True


def test_the_penalty_is_chosen_on_held_out_benchmarks():
    """Leave one benchmark out: a feature that tells the gold apart in one benchmark only (a label-set quirk)
    does not carry to the other, so the held-out loss asks for a strong penalty; folds of cases would not see it."""
    from benchmarks.fit_prior import L2_GRID, choose_l2

    rng = np.random.default_rng(1)
    xs, golds, groups = [], [], []
    for g in ("a", "b", "c"):
        for _ in range(60):
            x = rng.normal(size=(8, 3))
            gold = int(np.argmax(x[:, 0] + rng.normal(scale=0.5, size=8)))   # fusion feature: everywhere
            if g == "a":
                x[:, 2] = 0.0
                x[gold, 2] = 1.0                                             # quirk: only in benchmark "a"
            else:
                x[:, 2] = (rng.random(8) < 0.15).astype(float)
            xs.append(x)
            golds.append([gold])
            groups.append(g)
    by_benchmark, scores = choose_l2(xs, golds, n_fusion=2, groups=groups)
    by_cases, _ = choose_l2(xs, golds, n_fusion=2)
    assert set(scores) == {str(v) for v in L2_GRID}
    assert by_benchmark > by_cases


def test_tied_candidates_share_a_rank_so_the_order_of_a_tie_moves_nobody():
    a = Candidate(concept_id="X:kg", name="first in the KG ranking", score=0.25)
    b = Candidate(concept_id="X:page", name="first in the page ranking", score=0.25)
    c = Candidate(concept_id="X:plain", name="plain disease", score=0.2)
    assert fusion_values([a, b, c]) == fusion_values([b, a, c])
    np.testing.assert_allclose(fusion_values([a, b, c]), [[1.0, 0.0], [1.0, 0.0], [0.8, math.log(3)]])
    m = model()
    assert {x.concept_id: x.score for x in m.rescore([a, b, c])} == {x.concept_id: x.score for x in m.rescore([b, a, c])}


# ---- evidence features -------------------------------------------------------------------------------------

def test_evidence_features_are_the_share_explained_of_the_best_and_the_contradictions():
    cands = [Candidate(concept_id="X:rare", name="rare fever", score=0.5, matched=["F:1", "F:2"]),
             Candidate(concept_id="X:plain", name="plain disease", score=0.45, matched=["F:1", "F:2", "F:3", "F:4"],
                       contradicted=["F:9"]),
             Candidate(concept_id="X:common", name="common fever", score=0.4)]
    assert evidence_values(cands) == [[0.5, 0.0], [1.0, 1.0], [0.0, 0.0]]
    assert evidence_values([Candidate(concept_id="X:rare", name="rare fever", score=0.5)]) == [[0.0, 0.0]]
    rows = feature_rows(TABLE, cands, [*FUSION_FEATURES, *EVIDENCE_FEATURES, "consumer_page"])
    np.testing.assert_allclose(rows[:, 2:], [[0.5, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def test_a_candidate_explaining_more_of_the_findings_rises_and_is_told_so():
    names = [*FUSION_FEATURES, *EVIDENCE_FEATURES, "consumer_page"]
    m = CommonnessPrior.from_dict({
        "format": 1, "features": names, "provisional": True,
        "weights": dict(zip(names, [1.0, 0.0, 2.0, -0.5, 0.0])),
        "mean": dict.fromkeys(names, 0.0), "scale": dict.fromkeys(names, 1.0)}, TABLE)
    assert n_case_features(m.names) == 4
    cands = [Candidate(concept_id="X:rare", name="rare fever", score=0.5, matched=["F:1"]),
             Candidate(concept_id="X:plain", name="plain disease", score=0.45, matched=["F:1", "F:2", "F:3"])]
    out = m.rescore(cands)
    assert [c.concept_id for c in out] == ["X:plain", "X:rare"]
    assert "what it explains of the findings +2.00" in out[0].explanation
    # the evidence part is not the commonness part: the prior's own logit of each stays 0
    assert m.prior_logits(cands) == [0.0, 0.0]
    contradicted = [cands[1].model_copy(update={"contradicted": ["F:8", "F:9"]}), cands[0]]
    assert [c.concept_id for c in m.rescore(contradicted)] == ["X:plain", "X:rare"]   # 2 - 1 > 2/3
    heavier = [cands[1].model_copy(update={"contradicted": ["F:7", "F:8", "F:9"]}), cands[0]]
    assert [c.concept_id for c in m.rescore(heavier)] == ["X:rare", "X:plain"]


def test_evidence_features_must_follow_the_fusion_features():
    names = [*FUSION_FEATURES, "consumer_page", "explained_rel"]
    doc = {"format": 1, "features": names, "weights": dict.fromkeys(names, 1.0), "mean": dict.fromkeys(names, 0.0),
           "scale": dict.fromkeys(names, 1.0)}
    with pytest.raises(ValueError, match="must follow"):
        CommonnessPrior.from_dict(doc, TABLE)


# ---- rank features -----------------------------------------------------------------------------------------

def test_rank_features_say_where_each_ranking_put_the_candidate():
    kg_first = Candidate(concept_id="X:kg", name="first in the KG ranking", score=0.25, ranks={"kg": 1, "text": 4})
    page_first = Candidate(concept_id="X:page", name="first in the page ranking", score=0.25, ranks={"page": 1})
    signed = Candidate(concept_id="X:sign", name="named by its sign", score=0.2, ranks={"sign": 2, "site": 3})
    assert RANK_FEATURES == ("rr_kg", "rr_text", "rr_page", "rr_site", "rr_sign")
    np.testing.assert_allclose(rank_values([kg_first, page_first, signed]), [
        [1 / (RANK_K + 1), 1 / (RANK_K + 4), 0.0, 0.0, 0.0],
        [0.0, 0.0, 1 / (RANK_K + 1), 0.0, 0.0],
        [0.0, 0.0, 0.0, 1 / (RANK_K + 3), 1 / (RANK_K + 2)]])
    # tied in the fusion, told apart by the weight the fit gives the KG ranking over the page ranking
    names = [*FUSION_FEATURES, *RANK_FEATURES, "consumer_page"]
    m = CommonnessPrior.from_dict({
        "format": 1, "features": names, "provisional": True,
        "weights": dict(zip(names, [1.0, 0.0, 2.0, 0.0, 0.5, 0.0, 0.0, 0.0])),
        "mean": dict.fromkeys(names, 0.0), "scale": dict.fromkeys(names, 1.0)}, TABLE)
    assert (n_fusion_features(m.names), n_case_features(m.names)) == (7, 7)
    assert [c.concept_id for c in m.rescore([page_first, kg_first])] == ["X:kg", "X:page"]
    # they are part of the fusion, not of the commonness prior
    assert m.prior_logits([page_first, kg_first]) == [0.0, 0.0]


def test_rank_features_must_come_right_after_the_fusion_features():
    names = [*FUSION_FEATURES, *EVIDENCE_FEATURES, "rr_kg", "consumer_page"]
    doc = {"format": 1, "features": names, "weights": dict.fromkeys(names, 1.0), "mean": dict.fromkeys(names, 0.0),
           "scale": dict.fromkeys(names, 1.0)}
    with pytest.raises(ValueError, match="rank features"):
        CommonnessPrior.from_dict(doc, TABLE)

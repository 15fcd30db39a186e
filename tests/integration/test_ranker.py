"""KG differential ranker on the real knowledge graph and the hand-written clinical case set.

The KG is built from the catalogued open sources (the data mirror when present) with the project's own
``load_or_build``; findings are resolved with the KG's own ``lookup``. Nothing is mocked.
"""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from agents.ranker import KGRanker, RankerConfig
from agents.types import Candidate, Entity
from clinicalrag.bench.runner import BenchError, gold_finding_entities

CASE_FILE = Path(__file__).resolve().parents[1] / "cases" / "clinical_cases.yaml"


def load_cases() -> list[dict]:
    cases = yaml.safe_load(CASE_FILE.read_text(encoding="utf-8"))["cases"]
    for c in cases:
        c.setdefault("acceptable", [])
        c.setdefault("findings", [])
        for f in c["findings"]:
            f.setdefault("negated", False)
    return cases


def resolve_phrase(kg, phrase: str):
    hits = kg.lookup(phrase, categories=["symptom", "phenotype"])
    return hits[0] if hits else None


def accepted_ids(kg, case: dict) -> set[str]:
    """The gold DOID, its subtypes (``is_a`` descendants) and the listed acceptable ids."""
    gold = case.get("gold")
    if not gold:
        return set()
    ok, stack = {gold["doid"]}, [gold["doid"]]
    while stack:
        for c in kg.children(stack.pop()):
            if c not in ok:
                ok.add(c)
                stack.append(c)
    return ok | set(case["acceptable"])


@dataclass
class CaseResult:
    id: str
    gold: str | None
    rank: int | None
    top: list[Candidate] = field(default_factory=list)


def evaluate(kg, ranker, cases, k: int = 10) -> list[CaseResult]:
    """The ranker on each case's listed findings (what ``clinicalrag bench run --dataset cases --systems
    ranker:gold-findings`` measures), with the rank of the gold disease or an accepted one."""
    out = []
    for case in cases:
        pos, neg = gold_finding_entities(kg, case["findings"])
        top = ranker.rank(pos, neg, k=k)
        ok = accepted_ids(kg, case)
        rank = next((i for i, c in enumerate(top, 1) if c.concept_id in ok), None)
        out.append(CaseResult(case["id"], (case.get("gold") or {}).get("doid"), rank, top))
    return out


def summary(results: list[CaseResult]) -> dict[str, float]:
    scored = [r for r in results if r.gold]
    n = max(1, len(scored))
    s = {f"top{k}": sum(1 for r in scored if r.rank is not None and r.rank <= k) / n for k in (1, 3, 5, 10)}
    s["n"] = len(scored)
    s["mrr"] = sum(1.0 / r.rank for r in scored if r.rank) / n
    return s


# Floors a little below what the default configuration achieves on the case set (docs/results.md, system ranker:gold-findings); a drop below
# them means the scoring or the KG regressed.
TOP1_FLOOR = 0.32
TOP5_FLOOR = 0.50
TOP10_FLOOR = 0.60


@pytest.fixture(scope="module")
def kg():
    from knowledge.kg import BuildError, load_or_build

    try:
        return load_or_build()
    except (BuildError, FileNotFoundError, OSError) as exc:  # no data available offline: say so, don't fake it
        pytest.skip(f"knowledge graph sources unavailable: {exc}")


@pytest.fixture(scope="module")
def ranker(kg):
    return KGRanker(kg).warm()


@pytest.fixture(scope="module")
def cases():
    return load_cases()


@pytest.fixture(scope="module")
def results(kg, ranker, cases):
    return evaluate(kg, ranker, cases, k=10)


def _ent(kg, phrase: str, negated: bool = False) -> Entity:
    c = resolve_phrase(kg, phrase)
    assert c is not None, f"{phrase!r} does not resolve in the KG"
    return Entity(text=phrase, category="symptom", concept_id=c.id, concept_name=c.name, negated=negated)


# ----------------------------------------------------------------------------------------------- the case file
def test_case_file_shape(cases):
    assert len(cases) >= 20
    assert len({c["id"] for c in cases}) == len(cases)
    with_gold = [c for c in cases if c["gold"]]
    assert len(with_gold) >= 20
    assert any(not c["gold"] and not c["findings"] for c in cases), "needs an out-of-scope question"
    assert any(f["negated"] for c in cases for f in c["findings"]), "needs cases with negated findings"
    for c in cases:
        assert 1 <= c["presentation"].count(".") + c["presentation"].count("?") <= 6, c["id"]


def test_gold_and_acceptable_ids_exist_with_their_names(kg, cases):
    from knowledge.kg import normalise

    for c in cases:
        if not c["gold"]:
            continue
        node = kg.concept(c["gold"]["doid"])
        assert node is not None and node.category == "disease", f"{c['id']}: {c['gold']['doid']} not a KG disease"
        assert normalise(node.name) == normalise(c["gold"]["name"]), (c["id"], node.name, c["gold"]["name"])
        for a in c["acceptable"]:
            assert kg.concept(a) is not None and kg.concept(a).category == "disease", f"{c['id']}: {a}"


def test_every_finding_phrase_resolves(kg, cases):
    missing = [(c["id"], f["text"]) for c in cases for f in c["findings"]
               if resolve_phrase(kg, f["text"]) is None]
    assert not missing, f"finding phrases the KG lookup cannot resolve: {missing}"


def test_unresolvable_phrase_fails_loudly(kg):
    case = {"id": "bogus", "findings": [{"text": "fever", "negated": False},
                                        {"text": "zzqx not a symptom", "negated": False}]}
    with pytest.raises(BenchError, match="zzqx not a symptom"):
        gold_finding_entities(kg, case["findings"])


# ----------------------------------------------------------------------------------------------- accuracy
def test_accuracy_on_case_set(results):
    s = summary(results)
    print(f"\nranker on {s['n']} cases: top-1 {s['top1']:.2f} top-3 {s['top3']:.2f} top-5 {s['top5']:.2f} "
          f"top-10 {s['top10']:.2f} MRR {s['mrr']:.3f}")
    for r in results:
        print(f"  {r.id:26s} rank {r.rank}")
    assert s["top1"] >= TOP1_FLOOR
    assert s["top5"] >= TOP5_FLOOR
    assert s["top10"] >= TOP10_FLOOR


def test_out_of_scope_and_empty_give_nothing(ranker, results):
    assert ranker.rank([], [], k=10) == []
    assert ranker.rank([], [Entity(text="fever", category="symptom", concept_id="SYMP:0000613", negated=True)]) == []
    oos = [r for r in results if r.gold is None]
    assert oos and all(r.top == [] for r in oos)
    # entities without a concept id, or with an id the KG does not know, are ignored
    assert ranker.rank([Entity(text="France", category="anatomy"),
                        Entity(text="x", category="symptom", concept_id="NOPE:1")], []) == []


# ----------------------------------------------------------------------------------------------- negation
def test_negating_a_finding_lowers_the_diseases_that_expect_it(kg, ranker):
    cough, dyspnea, fever = _ent(kg, "cough"), _ent(kg, "dyspnea"), _ent(kg, "fever")
    base = {c.concept_id: c for c in ranker.rank([cough, dyspnea, fever], [], k=100_000)}
    without = {c.concept_id: c for c in ranker.rank([cough, dyspnea], [], k=100_000)}
    negated = {c.concept_id: c for c in ranker.rank([cough, dyspnea], [_ent(kg, "fever", negated=True)], k=100_000)}
    lowered = 0
    for cid, c in negated.items():
        if fever.concept_id in c.contradicted:
            assert cid in without and c.score < without[cid].score, c.name
            assert c.contradicting, c.name
            assert "absent" in c.explanation
            lowered += 1
    assert lowered >= 5
    # COVID-19 (DO: fever, cough, dyspnea) drops when fever is denied
    covid = "DOID:0080600"
    assert covid in base and covid in without
    rank_without = list(without).index(covid)
    rank_negated = list(negated).index(covid) if covid in negated else 10**6
    assert negated.get(covid) is None or negated[covid].score < without[covid].score
    assert rank_negated >= rank_without


def test_case_negations_lower_scores(kg, ranker, cases):
    """In every case with negated findings, dropping the negations never lowers any candidate's score and raises
    at least one (the negations do something)."""
    checked = 0
    for c in cases:
        pos, neg = gold_finding_entities(kg, c["findings"])
        if not neg or not pos:
            continue
        with_neg = {x.concept_id: x.score for x in ranker.rank(pos, neg, k=100_000)}
        no_neg = {x.concept_id: x.score for x in ranker.rank(pos, [], k=100_000)}
        common = set(with_neg) & set(no_neg)
        assert all(with_neg[d] <= no_neg[d] + 1e-9 for d in common), c["id"]
        assert any(with_neg[d] < no_neg[d] - 1e-9 for d in common), c["id"]
        checked += 1
    assert checked >= 4


# ----------------------------------------------------------------------------------------------- provenance
def test_supporting_and_contradicting_triples_exist(kg, results, ranker):
    seen = 0
    for r in results:
        for c in r.top:
            assert isinstance(c, Candidate)
            assert c.supporting or c.matched, c
            for tid in c.supporting + c.contradicting:
                s, rel, o = tid.split("|")
                assert kg.graph.has_edge(s, o, key=rel), f"{r.id}: {tid} is not a KG edge"
                seen += 1
            assert c.explanation.startswith("matches ")
            assert kg.concept(c.concept_id).category == "disease"
    assert seen > 100


def test_candidate_fields_reflect_input(kg, ranker):
    ents = [_ent(kg, p) for p in ("wheezing", "chest tightness", "dyspnea")]
    top = ranker.rank(ents, [_ent(kg, "fever", negated=True)], k=5)
    assert 0 < len(top) <= 5
    assert [c.score for c in top] == sorted((c.score for c in top), reverse=True)
    ids = {e.concept_id for e in ents}
    for c in top:
        assert set(c.matched) <= ids
        assert set(c.contradicted) <= {_ent(kg, "fever").concept_id}
    assert any(c.concept_id in ("DOID:2841", "DOID:9415", "DOID:0080811") for c in top[:3]), [c.name for c in top]
    # the explanation names the matched findings and their sources
    asthma = next(c for c in top if "asthma" in c.name.lower())
    assert "wheezing" in asthma.explanation.lower()


def test_generic_findings_favour_the_parent_disease(kg, ranker):
    """Parent propagation: with generic findings the clinical entity (pneumonia) is ranked next to its subtypes."""
    ents = [_ent(kg, p) for p in ("productive cough", "fever", "chills", "pleuritic chest pain")]
    ids = [c.concept_id for c in ranker.rank(ents, [], k=5)]
    assert "DOID:552" in ids


def test_finding_equivalent_to_a_disease_and_disease_findings(kg, ranker):
    """HP "Gastroesophageal reflux" is xref-equivalent to the DO disease: that disease is matched through the xref
    triple; a finding that is itself a disease concept makes that disease a candidate."""
    top = ranker.rank([_ent(kg, "acid reflux"), _ent(kg, "heartburn")], [], k=10)
    gerd = next((c for c in top if c.concept_id == "DOID:8534"), None)
    assert gerd is not None, [c.name for c in top]
    assert any("|xref|DOID:8534" in t for t in gerd.supporting)
    named = ranker.rank([Entity(text="asthma", category="disease", concept_id="DOID:2841")], [], k=5)
    assert named and named[0].concept_id == "DOID:2841"
    assert "named in the presentation" in named[0].explanation


def test_demographics_are_soft_filters(kg, ranker):
    ents = [_ent(kg, p) for p in ("abdominal pain", "weight loss", "ascites")]
    female = ranker.rank(ents, [], k=200, sex="female")
    male = ranker.rank(ents, [], k=200, sex="male")
    ovarian_f = [c for c in female if "ovar" in c.name.lower()]
    ovarian_m = {c.concept_id: c for c in male if "ovar" in c.name.lower()}
    assert ovarian_f, "ovarian disease expected for abdominal pain + ascites in a woman"
    for c in ovarian_f:
        assert c.concept_id not in ovarian_m or ovarian_m[c.concept_id].score < c.score


def test_config_options_are_validated(kg):
    with pytest.raises(TypeError, match="no_such_option"):
        KGRanker(kg, no_such_option=1)
    r = KGRanker(kg, common_prior=0.0)
    assert r.config.common_prior == 0.0 and RankerConfig().common_prior > 0


# ----------------------------------------------------------------------------------------------- speed
def test_ranking_is_fast(kg, ranker, cases):
    phrases = ["fever", "cough", "dyspnea", "headache", "nausea", "vomiting", "fatigue", "chest pain",
               "abdominal pain", "weight loss"]
    ents = [_ent(kg, p) for p in phrases]
    ranker.rank(ents, [], k=10)  # the per-finding profiles are cached after first use
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        ranker.rank(ents, [_ent(kg, "rash", negated=True)], k=10)
        times.append((time.perf_counter() - t0) * 1000)
    med = statistics.median(times)
    print(f"\nrank() with 10 findings: median {med:.1f} ms")
    # target is < 20 ms on an idle core; the bound leaves room for a busy shared machine
    assert med < 80


_SEEDED_RANKING = """
import json, sys
from agents.ranker import KGRanker
from agents.types import Entity
from knowledge.kg import load_or_build
kg = load_or_build()
ids = sys.argv[1].split(",")
ents = [Entity(text=i, category="symptom", concept_id=i, concept_name=kg.concept(i).name) for i in ids]
print(json.dumps([[c.concept_id, round(c.score, 9), c.supporting[:3]] for c in KGRanker(kg).rank(ents, [], k=15)]))
"""


@pytest.mark.parametrize("finding_ids", [
    "HP:0010783,SYMP:0000487,SYMP:0000064",   # a red, irritated skin; rashes; joint pain
    "SYMP:0000487,SYMP:0000882",              # rashes; high fever
])
def test_the_ranking_is_the_same_in_every_process(kg, finding_ids):
    """Python salts string hashes per process, so a set of ids iterates in another order in every run. The
    ranker's match sets and tied edges were taken in that order, and a finding that names a disease (a rash names
    "exanthem") made it a candidate in some processes and not in others: 11 of 600 Symptom2Disease patients changed
    their differential between two runs of the same code. Two processes with different hash seeds must agree."""
    import os
    import subprocess
    import sys

    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        run = subprocess.run([sys.executable, "-c", _SEEDED_RANKING, finding_ids], env=env, capture_output=True,
                             text=True, timeout=600, cwd=Path(__file__).resolve().parents[2])
        assert run.returncode == 0, run.stderr[-2000:]
        outs.append(run.stdout.strip().splitlines()[-1])
    assert outs[0] == outs[1]
    assert len(json.loads(outs[0])) >= 5


def test_present_finding_argues_against_a_disease_expecting_its_opposite(kg, ranker):
    """A suppressed TSH and a raised free T4 count against hypothyroidism (it expects the raised TSH), with the reason
    in the explanation; without the opposite pairs (``opposite_mu=0``) they do not."""
    from dataclasses import replace

    from knowledge.kg.opposites import read_pairs

    names = {str(a.get("name") or "").lower() for _, a in kg.graph.nodes(data=True)
             if a.get("category") in ("symptom", "phenotype")}
    for a, b in read_pairs():                 # every reviewed pair names findings the graph has
        assert a.lower() in names and b.lower() in names, (a, b)

    def ent(cid: str) -> Entity:
        return Entity(text=cid, category="test", concept_id=cid, concept_name=kg.graph.nodes[cid]["name"])

    low_tsh, high_ft4, tremor = ent("HP:0031098"), ent("HP:0033077"), _ent(kg, "tremor")
    assert kg.graph.nodes["HP:0033077"]["name"] == "Increased circulating free T4 concentration"
    findings = [low_tsh, high_ft4, tremor]
    hypothyroidism = "DOID:1459"
    off = KGRanker(kg, replace(ranker.config, opposite_mu=0.0))
    with_pairs = {c.concept_id: c for c in ranker.rank(findings, [], k=100_000)}
    without = {c.concept_id: c for c in off.rank(findings, [], k=100_000)}
    assert hypothyroidism in without and not without[hypothyroidism].contradicted
    hypo = with_pairs.get(hypothyroidism)
    assert hypo is not None and hypo.score < without[hypothyroidism].score
    assert "HP:0002925" in hypo.contradicted                # Elevated circulating TSH concentration
    assert "the patient has Decreased thyroid-stimulating hormone level" in hypo.explanation
    # a disease that explains the patient's findings is not argued against by their opposites
    hyper = "DOID:7998"                                     # hyperthyroidism
    assert with_pairs[hyper].score == pytest.approx(without[hyper].score)
    assert list(with_pairs).index(hyper) <= list(without).index(hyper)


def test_a_finding_broader_than_another_present_one_can_be_left_out(kg, ranker):
    """``most_specific`` drops "pain" and "abdominal pain" beside "left lower quadrant pain" (one complaint, said three
    ways) and keeps unrelated findings; with ``drop_broader`` no candidate of the ranking counts "pain" as matched."""
    from dataclasses import replace

    llq, abdominal, pain, fever = (_ent(kg, p) for p in ("left lower quadrant abdominal pain", "abdominal pain",
                                                         "pain", "fever"))
    ids = [pain.concept_id, llq.concept_id, abdominal.concept_id, fever.concept_id]
    assert len(set(ids)) == 4
    assert ranker.most_specific(ids) == [llq.concept_id, fever.concept_id]
    assert ranker.most_specific([pain.concept_id]) == [pain.concept_id]      # nothing narrower: kept
    assert ranker.config.drop_broader is False                              # measured neutral: off by default
    on = KGRanker(kg, replace(ranker.config, drop_broader=True))
    findings = [pain, llq, fever]
    kept = {c.concept_id: c for c in on.rank(findings, [], k=100_000)}
    both = {c.concept_id: c for c in ranker.rank(findings, [], k=100_000)}
    assert all(pain.concept_id not in c.matched for c in kept.values())
    assert any(pain.concept_id in c.matched for c in both.values())


def test_how_much_several_sources_for_one_finding_add_is_a_setting(kg, ranker):
    """``source_agreement`` 1 (the default) combines the sources asserting one disease-finding pair by noisy-OR; 0
    keeps the strongest alone, so a pair several sources assert scores exactly its strongest edge."""
    from dataclasses import replace

    from agents.ranker import _combine

    assert ranker.config.source_agreement == 1.0
    assert _combine([0.6, 0.45], 1.0) == pytest.approx(1 - 0.4 * 0.55)
    assert _combine([0.6, 0.45], 0.0) == pytest.approx(0.6)
    assert _combine([0.6, 0.45], 0.5) == pytest.approx(0.6 + 0.5 * (1 - 0.4 * 0.55 - 0.6))
    fever = _ent(kg, "fever")
    strongest = KGRanker(kg, replace(ranker.config, source_agreement=0.0)).index.profile(fever.concept_id, False)
    compound = ranker.index.profile(fever.concept_id, False)
    multi = [d for d, (s, edges) in compound.items() if len({e[1] for e in edges}) > 1 or "," in edges[0][2]]
    assert multi
    for d in multi[:20]:
        assert strongest[d][0] < compound[d][0]
        assert strongest[d][0] == pytest.approx(max(e[0] for e in strongest[d][1]))


def test_how_far_up_a_finding_is_matched_is_a_setting(kg, ranker):
    """``parent_depth`` 1 (the default) matches a finding's direct broader terms at ``parent_discount``; 2 adds their
    broader terms at ``parent_discount`` squared, and keeps the first step as it was."""
    from dataclasses import replace

    assert ranker.config.parent_depth == 1
    llq = _ent(kg, "left lower quadrant abdominal pain")
    one = {n: (d, how) for n, d, how in ranker.index.expansion(llq.concept_id, True)}
    two = {n: (d, how) for n, d, how in
           KGRanker(kg, replace(ranker.config, parent_depth=2)).index.expansion(llq.concept_id, True)}
    broader_one = {n for n, (_, how) in one.items() if how == "broader"}
    assert broader_one and all(one[n][0] == ranker.config.parent_discount for n in broader_one)
    assert all(two[n] == one[n] for n in one)
    second = set(two) - set(one)
    assert second, "the second step found no broader term"
    assert all(two[n] == (pytest.approx(ranker.config.parent_discount ** 2), "broader") for n in second)


def test_scores_are_the_rankings_scores_for_every_matching_disease(kg, ranker):
    """``scores`` gives what ``rank`` ranks by, for every disease that matches (not only the top k)."""
    found = [_ent(kg, "fever"), _ent(kg, "cough")]
    scores = ranker.scores(found, [_ent(kg, "rash", negated=True)], age=30, sex="female")
    ranked = ranker.rank(found, [_ent(kg, "rash", negated=True)], k=30, age=30, sex="female")
    assert len(ranked) == 30 and len(scores) > 30
    for c in ranked:
        assert scores[c.concept_id] == pytest.approx(c.score, abs=1e-6)
    assert max(scores.values()) == pytest.approx(ranked[0].score, abs=1e-6)
    assert ranker.scores([]) == {}


def test_a_subtype_the_findings_single_out_is_named_before_its_parent(kg):
    """A parent disease that ranks high only by speaking for one subtype gives it the first place; a parent whose
    subtypes fit about equally, or that has evidence of its own, keeps it; an unrelated disease never moves."""
    from agents.subtypes import has_subtype_pair, name_subtypes_first
    from agents.types import Candidate

    parent, child, rival, other = (kg.lookup(p, categories=["disease"])[0] for p in (
        "anxiety disorder", "post-traumatic stress disorder", "panic disorder", "hypoglycemia"))
    assert parent.id in kg.ancestors(child.id, 2) and parent.id in kg.ancestors(rival.id, 2)
    assert parent.id not in kg.ancestors(other.id, 2)
    cands = [Candidate(concept_id=c.id, name=c.name, score=s, explanation="matches x")
             for c, s in ((parent, 0.9), (other, 0.5), (child, 0.3), (rival, 0.2))]
    own = {parent.id: 0.1, other.id: 0.8, child.id: 0.6, rival.id: 0.1}
    assert has_subtype_pair(cands, kg) and not has_subtype_pair([cands[3], cands[1], cands[0]], kg)
    assert has_subtype_pair([cands[2], cands[0]], kg) is False
    out = name_subtypes_first(cands, kg, own)
    assert [c.concept_id for c in out] == [child.id, parent.id, other.id, rival.id]
    assert out[0].score == 0.9 and f"named before {parent.name}" in out[0].explanation
    assert out[0].subtype_of == parent.id and not out[1].subtype_of
    assert [c.score for c in out[1:]] == [0.9, 0.5, 0.2]
    # two subtypes fit about equally: the parent is the honest name
    assert name_subtypes_first(cands, kg, {**own, rival.id: 0.4}) == cands
    # the parent has evidence of its own (at least half the subtype's)
    assert name_subtypes_first(cands, kg, {**own, parent.id: 0.3}) == cands
    # off, and a subtype already first
    assert name_subtypes_first(cands, kg, own, ratio=0) == cands
    assert name_subtypes_first(out, kg, own) == out


def test_a_broader_term_or_a_kind_of_an_earlier_candidate_says_so_or_is_folded_into_it(kg):
    """"Stroke" after "hemorrhagic stroke" (or before it) would read as one diagnosis twice: the later one says how it
    relates to the earlier; folded, it goes into the earlier one's entry and gives its place to the next disease.
    Siblings, unrelated diseases and the language model's own candidates are not folded."""
    from agents.generator import also_words
    from agents.subtypes import mark_relatives
    from agents.types import Candidate

    stroke, bleed, infarct, htn, athero = (kg.lookup(p, categories=["disease"])[0] for p in (
        "stroke", "hemorrhagic stroke", "ischemic stroke", "hypertension", "atherosclerosis"))
    assert stroke.id in kg.ancestors(bleed.id, 2) and stroke.id in kg.ancestors(infarct.id, 2)

    def cand(c, s, origins=("kg",)):
        return Candidate(concept_id=c.id, name=c.name, score=s, origins=list(origins), explanation="matches x")

    ranked = [cand(bleed, 0.9), cand(athero, 0.8), cand(stroke, 0.7), cand(infarct, 0.6), cand(htn, 0.5)]
    marked = mark_relatives(ranked, kg)
    assert [c.concept_id for c in marked] == [c.concept_id for c in ranked]
    assert [c.relative_of for c in marked] == ["", "", "a broader term for hemorrhagic stroke",
                                               "a kind of stroke", ""]
    assert also_words(marked[2]) == "a broader term for hemorrhagic stroke" and also_words(marked[1]) == ""
    out = mark_relatives(ranked, kg, fold=True)
    # the parent goes into the first kind; the second kind is a sibling of the first, not folded
    assert [c.concept_id for c in out] == [bleed.id, athero.id, infarct.id, htn.id]
    assert out[0].also == {stroke.id: "stroke (a broader term)"} and not out[2].relative_of
    assert out[0].explanation.endswith("also covers stroke (a broader term)")
    assert also_words(out[0]) == "also covers stroke (a broader term)"
    assert [c.score for c in out] == [0.9, 0.8, 0.6, 0.5]
    # the parent first: its kinds are folded into it
    out = mark_relatives([cand(stroke, 0.9), cand(htn, 0.8), cand(bleed, 0.7), cand(infarct, 0.6)], kg, fold=True)
    assert [c.concept_id for c in out] == [stroke.id, htn.id]
    assert list(out[0].also.values()) == ["hemorrhagic stroke (a kind)", "ischemic stroke (a kind)"]
    # a candidate the language model proposed keeps its own place (and says how it relates); depth 0: nothing
    model = mark_relatives([cand(bleed, 0.9), cand(stroke, 0.7, ("model", "kg"))], kg, fold=True)
    assert [c.concept_id for c in model] == [bleed.id, stroke.id]
    assert model[1].relative_of == "a broader term for hemorrhagic stroke"
    assert mark_relatives(ranked, kg, depth=0) == ranked


def test_a_condition_the_patient_is_known_to_have_says_so_and_can_be_weighed_down(kg):
    """"A 24-year-old woman with type 1 diabetes has vomiting and Kussmaul breathing": type 1 diabetes is the
    context, diabetic ketoacidosis the diagnosis. A candidate that is a known condition (its HPO or DO id) or a broader
    term for one says so; a sibling (type 2 diabetes) does not; a relative's or a denied condition is not the
    patient's; with a factor under 1 the known condition moves down but stays in the list."""
    from agents.generator import also_words
    from agents.subtypes import demote_known, known_conditions
    from agents.types import Candidate

    t1, dka, dm, t2 = (kg.lookup(p, categories=["disease"])[0] for p in (
        "type 1 diabetes mellitus", "diabetic ketoacidosis", "diabetes mellitus", "type 2 diabetes mellitus"))
    hp_t1 = next(i for i in kg.equivalents(t1.id) if i.startswith("HP:"))
    ents = [Entity(text="type 1 diabetes", category="symptom", concept_id=hp_t1, historical=True),
            Entity(text="asthma", category="disease", concept_id=kg.lookup("asthma", categories=["disease"])[0].id,
                   historical=True, family=True),
            Entity(text="gout", category="disease", concept_id=kg.lookup("gout", categories=["disease"])[0].id,
                   historical=True, negated=True),
            Entity(text="vomiting", category="symptom", concept_id="SYMP:0019145")]
    known = known_conditions(ents, kg)
    assert known == {t1.id: "type 1 diabetes"}

    def cand(c, s):
        return Candidate(concept_id=c.id, name=c.name, score=s, origins=["kg"])

    ranked = [cand(t1, 0.9), cand(dka, 0.6), cand(dm, 0.3), cand(t2, 0.2)]
    marked = demote_known(ranked, known, kg)
    assert [c.concept_id for c in marked] == [t1.id, dka.id, dm.id, t2.id] and marked[0].score == 0.9
    assert [bool(c.known_condition) for c in marked] == [True, False, True, False]
    assert also_words(marked[0]) == "a known condition of the patient (type 1 diabetes)"
    out = demote_known(ranked, known, kg, factor=0.5)
    # the broader term (0.3 -> 0.15) falls below the sibling too
    assert [c.concept_id for c in out] == [dka.id, t1.id, t2.id, dm.id] and out[1].score == 0.45
    assert demote_known(ranked, {}, kg, factor=0.5) == ranked


def test_a_narrower_term_that_is_a_disease_speaks_for_that_disease(kg, ranker):
    """A blood pressure of 182/108 reads as HPO "Increased blood pressure"; its narrower term "Hypertension" is
    xref-equivalent to DO hypertension, which is matched through that xref triple at the narrower-term discount
    (``narrower_disease`` 0 turns it off) and says so in its explanation."""
    from dataclasses import replace

    raised, hypertension = "HP:0032263", "DOID:10763"
    assert raised in kg.graph and hypertension in kg.graph
    cfg = ranker.config
    edges = ranker.index.profile(raised, True)[hypertension][1]
    xref = [e for e in edges if e[1].endswith(f"|xref|{hypertension}")]
    assert xref and xref[0][3] == "narrower"
    assert xref[0][0] == pytest.approx(cfg.equivalent_disease * cfg.child_discount * cfg.narrower_disease)
    off = KGRanker(kg, replace(cfg, narrower_disease=0.0)).index.profile(raised, True)
    assert not [e for e in off.get(hypertension, (0, ()))[1] if "|xref|" in e[1]]
    bp = Entity(text="BP 182/108", category="symptom", concept_id=raised)
    cand = next(c for c in ranker.rank([bp], [], k=50) if c.concept_id == hypertension)
    assert "narrower term Hypertension is this disease" in cand.explanation, cand.explanation


def test_a_graded_finding_is_matched_as_its_plain_term(kg, ranker):
    """"mild fever" is a degree of "fever": it is matched as fever, so a disease whose sources say only "fever"
    (chickenpox) scores as one whose mined sentence said "mild fever" does, through its narrower term; with
    ``degree_as_plain`` off the plain fever counts at the broader-term discount only. A course word ("chronic
    cough") and a named entity ("Severe combined immunodeficiency") are not degrees."""
    from dataclasses import replace

    on_ranker = KGRanker(kg, replace(ranker.config, degree_as_plain=True))
    idx = on_ranker.index
    mild, fever, chickenpox = "SYMP:0000881", "SYMP:0000613", "DOID:8659"
    assert idx.plain_term(mild) == fever
    assert idx.plain_term("SYMP:0000130") == "SYMP:0000504"      # severe headache -> headache
    assert idx.plain_term("SYMP:0000686") == "SYMP:0000686"      # chronic cough stays
    assert idx.plain_term("HP:0004430") == "HP:0004430"          # severe combined immunodeficiency stays
    rash = Entity(text="red spots", category="symptom", concept_id="SYMP:0000487")
    ent = Entity(text="mild fever", category="symptom", concept_id=mild)
    on = on_ranker.scores([rash, ent])
    off = KGRanker(kg, replace(ranker.config, degree_as_plain=False)).scores([rash, ent])
    plain = on_ranker.scores([rash, Entity(text="fever", category="symptom", concept_id=fever)])
    assert on[chickenpox] == pytest.approx(plain[chickenpox])
    assert on[chickenpox] > 1.5 * off[chickenpox]
    cand = next(c for c in on_ranker.rank([rash, ent], [], k=100) if c.concept_id == chickenpox)
    assert "fever" in cand.explanation
    assert not ranker.config.degree_as_plain      # off by default (the dev halves: docs/results.md)


def test_related_findings_table_names_real_concepts(kg):
    """Every finding of agents/data/related_findings.yaml is a finding concept of the graph under the name the table
    writes, and each pair joins two or more different concepts."""
    from agents.curated import concept_problem
    from agents.ranker import read_related

    table = read_related()
    assert table.pairs
    for pair in table.pairs:
        assert len({c.id for c in pair.findings}) >= 2, pair.id
        for c in pair.findings:
            assert concept_problem(kg, c, pair.id) is None
            assert kg.concept(c.id).category in ("symptom", "phenotype"), c.id


def test_a_related_finding_matches_at_its_discount(kg, ranker):
    """A patient's tiredness (fatigue) matches chickenpox, whose textbook entry says malaise, at ``related_discount``
    and the explanation says it was through the related finding; with the discount 0 it does not. A denied fatigue
    does not count against a disease through malaise (denials keep their own match set)."""
    from dataclasses import replace

    from agents.ranker import related_findings

    fatigue, malaise, chickenpox = "SYMP:0019177", "SYMP:0019176", "DOID:8659"
    assert malaise in related_findings()[fatigue]
    on_ranker = KGRanker(kg, replace(ranker.config, related_discount=0.5))
    off_ranker = KGRanker(kg, replace(ranker.config, related_discount=0.0))
    rash = Entity(text="red spots all over", category="symptom", concept_id="SYMP:0000487")
    tired = Entity(text="tired all the time", category="symptom", concept_id=fatigue)
    on, off = on_ranker.scores([rash, tired]), off_ranker.scores([rash, tired])
    assert on[chickenpox] > 1.2 * off[chickenpox]
    cand = next(c for c in on_ranker.rank([rash, tired], [], k=5000) if c.concept_id == chickenpox)
    assert fatigue in cand.matched and "related: malaise" in cand.explanation
    off_cand = next(c for c in off_ranker.rank([rash, tired], [], k=5000) if c.concept_id == chickenpox)
    assert fatigue not in off_cand.matched
    denied_on = on_ranker.scores([rash], [tired])
    denied_off = off_ranker.scores([rash], [tired])
    assert denied_on[chickenpox] == pytest.approx(denied_off[chickenpox])
    assert ranker.config.related_discount > 0     # on by default (the dev halves: docs/results.md)


def test_a_one_way_pair_widens_only_its_first_finding(kg, ranker):
    """A one-way pair widens the patient's finding in one direction only: tiredness (fatigue) meets the diseases a
    textbook gives malaise for, while a patient who feels unwell (malaise) does not reach the diseases that list
    fatigue alone, scoring them exactly as with the table off. Two-way pairs (epigastric pain under its two ontology
    names) still widen both ways."""
    from dataclasses import replace

    from agents.ranker import read_related, related_findings

    fatigue, malaise = "SYMP:0019177", "SYMP:0019176"
    table = related_findings()
    assert malaise in table[fatigue] and fatigue not in table.get(malaise, ())
    assert "SYMP:0000542" in table["HP:0410019"] and "HP:0410019" in table["SYMP:0000542"]
    assert "malaise-fatigue" in {p.id for p in read_related().pairs if p.one_way}

    off_ranker = KGRanker(kg, replace(ranker.config, related_discount=0.0))
    joints = Entity(text="my joints hurt", category="symptom", concept_id="SYMP:0000064")   # in no pair
    unwell = Entity(text="I feel unwell", category="symptom", concept_id=malaise)
    on_s, off_s = ranker.scores([joints, unwell]), off_ranker.scores([joints, unwell])
    fatigue_only = [d for d in ranker.index.profile(fatigue, False) if d not in ranker.index.profile(malaise, False)]
    assert len(fatigue_only) > 50
    for d in fatigue_only:
        assert on_s.get(d, 0.0) == pytest.approx(off_s.get(d, 0.0))
    # the other way, a patient's tiredness does reach a malaise-only disease
    malaise_only = [d for d in ranker.index.profile(malaise, False) if d not in ranker.index.profile(fatigue, False)]
    tired = Entity(text="tired all the time", category="symptom", concept_id=fatigue)
    on_t, off_t = ranker.scores([joints, tired]), off_ranker.scores([joints, tired])
    assert any(on_t.get(d, 0.0) > off_t.get(d, 0.0) for d in malaise_only)


def test_a_finding_denied_only_by_a_normal_value_counts_less(kg, ranker):
    """A normal creatinine measured in a routine panel lowers thrombotic thrombocytopenic purpura (whose annotations
    expect a raised creatinine) less than a stated denial does, by RankerConfig.reading_negation_share; a stated
    denial of the same finding beside the measured one counts in full."""
    from dataclasses import replace

    ttp, creat = "DOID:10772", "HP:0003259"
    assert ranker.index.profile(creat, False).get(ttp) is not None
    pos = [Entity(text=t, category="symptom", concept_id=c) for t, c in (
        ("platelets 18,000", "SYMP:0000114"), ("petechiae", "SYMP:0000760"), ("fever", "SYMP:0000613"))]
    measured = Entity(text="creatinine 1.0 mg/dL", category="symptom", concept_id=creat, negated=True, measured=True)
    stated = measured.model_copy(update={"text": "renal function is normal", "measured": False})
    none_s = ranker.scores(pos)[ttp]
    measured_s, stated_s = ranker.scores(pos, [measured])[ttp], ranker.scores(pos, [stated])[ttp]
    assert stated_s < measured_s < none_s
    assert ranker.scores(pos, [measured, stated])[ttp] == pytest.approx(stated_s)
    full = KGRanker(kg, replace(ranker.config, reading_negation_share=1.0))
    assert full.scores(pos, [measured])[ttp] == pytest.approx(stated_s)


def test_bruises_meet_the_diseases_that_list_bruising_easily(kg, ranker):
    """A patient's bruises (Symptom Ontology "bruise") reach the diseases whose HPO entry names bruising
    susceptibility or ecchymosis (no cross-reference joins them); with the table off most do not."""
    from dataclasses import replace

    bruise, easy = "SYMP:0000406", "HP:0000978"
    only_easy = [d for d in ranker.index.profile(easy, False) if d not in ranker.index.profile(bruise, False)]
    assert len(only_easy) > 20
    ent = Entity(text="bruises on his legs", category="symptom", concept_id=bruise)
    on_s = ranker.scores([ent])
    off_s = KGRanker(kg, replace(ranker.config, related_discount=0.0)).scores([ent])
    assert all(on_s.get(d, 0.0) > 0 for d in only_easy)
    # with the table off most of them are out of reach (a few still come through a subtype they speak for)
    gained = [d for d in only_easy if not off_s.get(d, 0.0)]
    assert len(gained) > 20 and len(gained) > len(only_easy) // 2


def test_a_normal_value_denies_in_full_the_disease_its_finding_names(kg, ranker):
    """A normal platelet count denies the disease "thrombocytopenia" (the finding's equivalent disease) as a stated
    denial would; other diseases expecting the finding keep the measured share."""
    finding, disease = "SYMP:0000114", "DOID:1588"
    pos = [Entity(text="bruises", category="symptom", concept_id="SYMP:0000406"),
           Entity(text="petechiae", category="symptom", concept_id="SYMP:0000760")]
    measured = Entity(text="platelets 250,000/mm3", category="symptom", concept_id=finding, negated=True,
                      measured=True)
    stated = measured.model_copy(update={"text": "no thrombocytopenia", "measured": False})
    m_s, s_s = ranker.scores(pos, [measured]), ranker.scores(pos, [stated])
    assert m_s[disease] == pytest.approx(s_s[disease])
    itp = "DOID:8924"    # autoimmune thrombocytopenic purpura: expects it, is not named by it
    assert m_s[itp] > s_s[itp]


def test_a_broader_term_with_nothing_of_its_own_is_folded_into_its_kind(kg):
    """"Paranasal sinus disease" ranks only by speaking for sinusitis (its own KG score is zero): beside sinusitis it
    names the same diagnosis again, vaguer, and goes into sinusitis's entry, sinusitis taking the better place. A
    broader term with evidence of its own, or one another source put forward, stays; so does one with no kind listed."""
    from agents.subtypes import fold_empty_broader, has_subtype_pair
    from agents.types import Candidate

    sinus_class, sinusitis, maxillary, cold = (kg.lookup(p, categories=["disease"])[0] for p in (
        "paranasal sinus disease", "sinusitis", "chronic maxillary sinusitis", "common cold"))
    assert sinus_class.id in kg.ancestors(sinusitis.id, 2) and sinus_class.id not in kg.ancestors(cold.id, 2)

    def cand(c, s, origins=("kg",)):
        return Candidate(concept_id=c.id, name=c.name, score=s, origins=list(origins), explanation="matches x")

    ranked = [cand(sinus_class, 0.9), cand(cold, 0.8), cand(sinusitis, 0.7), cand(maxillary, 0.6)]
    own = {sinusitis.id: 0.5, maxillary.id: 0.3, cold.id: 0.4}
    assert has_subtype_pair(ranked, kg, either_way=True) and not has_subtype_pair(ranked[1:2], kg, either_way=True)
    out = fold_empty_broader(ranked, kg, own)
    # sinusitis, the first kind of it in the list, takes the broader term's place and score
    assert [c.concept_id for c in out] == [sinusitis.id, cold.id, maxillary.id]
    assert out[0].score == 0.9 and out[0].also == {sinus_class.id: "paranasal sinus disease (a broader term)"}
    assert out[0].explanation.endswith("also covers paranasal sinus disease (a broader term)")
    # after its kind: folded in place, the order of the rest kept
    later = [cand(sinusitis, 0.9), cand(cold, 0.8), cand(sinus_class, 0.7)]
    assert [c.concept_id for c in fold_empty_broader(later, kg, own)] == [sinusitis.id, cold.id]
    # evidence of its own, a word search's or the model's vote, or no kind listed: it stays
    assert fold_empty_broader(ranked, kg, {**own, sinus_class.id: 0.1}) == ranked
    assert fold_empty_broader([cand(sinus_class, 0.9, ("kg", "page")), *ranked[1:]], kg, own)[0].concept_id \
        == sinus_class.id
    assert fold_empty_broader([cand(sinus_class, 0.9, ("model",)), *ranked[1:]], kg, own)[0].concept_id \
        == sinus_class.id
    assert fold_empty_broader([ranked[0], ranked[1]], kg, own) == [ranked[0], ranked[1]]

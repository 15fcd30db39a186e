"""The curated cardinal findings of common diseases (knowledge/kg/cardinal.py) in the real knowledge graph and the
real ranker.

- every disease and finding of the table exists in the built graph under the name written beside it, with the
  right category, and the build skipped none of them;
- each finding is a disease -> finding edge of the graph (to it or, when another source already states the fact, to
  an xref-equivalent of it) whose sources include ``kg-cardinal`` and that carries the textbook citation; the
  table gives no disease two edges for one finding and its equivalent; the evidence made from such an edge names the textbook;
- the common cold, which no other source links to a nasal symptom strongly, ranks among the KG ranker's first five
  for a cold's presentation with the table and lower without it (``cardinal_strength=0``, the ``no-cardinal``
  ablation).
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from agents.hki import triple_evidence
from agents.llm import LLMConfig
from agents.ranker import KGRanker, ranking_findings
from knowledge.kg import cardinal
from graph.pipeline import Resources
from knowledge.kg.normalize import normalise

pytestmark = pytest.mark.integration

COMMON_COLD = "DOID:10459"
COLD = "Two days of a runny nose, sneezing, a blocked nose and a scratchy sore throat; no fever."


@pytest.fixture(scope="module")
def kg(knowledge):
    return knowledge[0]


def test_every_disease_and_finding_checks_out_against_the_graph(kg):
    problems = []
    for e in cardinal.read():
        c = kg.concept(e.disease.id)
        if c is None or c.category != "disease" or normalise(c.name) != normalise(e.disease.name):
            problems.append((e.disease, c and (c.name, c.category)))
        for f in e.findings:
            c = kg.concept(f.id)
            if c is None or c.category not in ("symptom", "phenotype") or normalise(c.name) != normalise(f.name):
                problems.append((e.disease.name, f, c and (c.name, c.category)))
    assert problems == []
    report = kg.report or {}
    assert report.get("cardinal_diseases") == len(cardinal.read())
    assert not report.get("cardinal_unknown_disease") and not report.get("cardinal_unknown_finding")


def test_each_finding_is_an_edge_citing_the_textbook(kg):
    g = kg.graph
    entries = cardinal.read()
    for e in entries:
        for f in e.findings:
            # the finding itself, or the equivalent another source already links the disease to (one fact, one edge)
            tagged = [d for x in kg.equivalents(f.id) | {f.id}
                      for k, d in (g.get_edge_data(e.disease.id, x) or {}).items()
                      if k in ("has_symptom", "has_phenotype")
                      and cardinal.SOURCE in [d.get("source"), *(d.get("also_sources") or ())]]
            assert tagged, (e.disease.name, f.name)
            assert tagged[0].get("reference") == e.reference, (e.disease.name, f.name)
    for e in entries:
        tagged = [v for _, v, k, d in g.out_edges(e.disease.id, keys=True, data=True)
                  if k in ("has_symptom", "has_phenotype")
                  and cardinal.SOURCE in [d.get("source"), *(d.get("also_sources") or ())]]
        for f in e.findings:
            linked = [v for v in tagged if v in kg.equivalents(f.id) | {f.id}]
            assert len(linked) == 1, (e.disease.name, f.name, linked)
    cold = next(e for e in entries if e.disease.id == COMMON_COLD)
    t = next(t for t in kg.neighbors(COMMON_COLD, "has_symptom") if t.source == cardinal.SOURCE)
    ev = triple_evidence(t, 1.0)
    assert ev.id == f"G:{COMMON_COLD}|has_symptom|{t.object}"
    assert "cardinal findings" in ev.source and "Harrison" in ev.source and cold.reference.startswith("Loscalzo")


def test_the_table_brings_the_common_cold_up_for_a_cold(knowledge, kg):
    res = Resources(llm_config=LLMConfig(), kg=kg, index=knowledge[1])
    ex = res.mee.extract(COLD)
    findings, negated = ranking_findings(ex)
    assert len(findings) >= 3, findings
    ranker = KGRanker(kg)
    ranked = [c.concept_id for c in ranker.rank(findings, negated, k=50, age=ex.age_years, sex=ex.sex)]
    assert COMMON_COLD in ranked[:5], ranked[:5]
    without = KGRanker(kg, replace(ranker.config, cardinal_strength=0.0))
    ranked0 = [c.concept_id for c in without.rank(findings, negated, k=50, age=ex.age_years, sex=ex.sex)]
    assert COMMON_COLD not in ranked0 or ranked0.index(COMMON_COLD) > ranked.index(COMMON_COLD), ranked0[:10]


KAWASAKI = "DOID:13378"
KAWASAKI_CASE = ("{age} with five days of high fever, red eyes, a rash, cracked red lips, swollen glands in the neck "
                 "and red palms and soles.")


def _place(res, ranker, text: str, did: str, k: int = 300):
    """Where the KG ranker puts ``did`` for a presentation (0-based rank, score) and what the extractor read."""
    ex = res.mee.extract(text)
    findings, negated = ranking_findings(ex)
    ranked = ranker.rank(findings, negated, k=k, age=ex.age_years, sex=ex.sex, course=ex.course)
    ids = [c.concept_id for c in ranked]
    assert did in ids, (text, ids[:10])
    return ids.index(did), ranked[ids.index(did)].score, ex


def test_a_typical_age_reaches_the_graph_and_weighs_an_adult_down(knowledge, kg):
    """Kawasaki disease is a disease of small children (the table's typical age: up to 16); its node carries that,
    and the same presentation ranks it lower for a 30-year-old than for a 3-year-old, by the age penalty."""
    written = {e.disease.id: e.typical_age for e in cardinal.read() if e.typical_age}
    for did, ages in written.items():
        assert tuple(kg.graph.nodes[did].get("typical_age")) == ages, did
    assert (kg.report or {}).get("cardinal_typical_ages") == len(written)
    res = Resources(llm_config=LLMConfig(), kg=kg, index=knowledge[1])
    ranker = KGRanker(kg)
    child = _place(res, ranker, KAWASAKI_CASE.format(age="A 3-year-old boy"), KAWASAKI, k=200)
    adult = _place(res, ranker, KAWASAKI_CASE.format(age="A 30-year-old man"), KAWASAKI, k=200)
    assert child[0] < 3, child[:2]
    assert adult[0] > child[0]
    assert adult[1] == pytest.approx(child[1] * ranker.config.age_mismatch, rel=0.02)


BRONCHIECTASIS = "DOID:9563"
COUGH_CASE = "A 60-year-old man with {duration}a daily cough bringing up thick green sputum, and wheezing."


def test_a_course_reaches_the_graph_and_weighs_a_chronic_disease_down_for_an_illness_of_days(knowledge, kg):
    """Bronchiectasis is a disease of months to years of daily sputum (the table's course: chronic); its node
    carries that, and the same cough ranks it lower when it has lasted 4 days than when it has lasted 6 months, by
    the course penalty; without a duration nothing changes."""
    written = {e.disease.id: e.course for e in cardinal.read() if e.course}
    assert written.get(BRONCHIECTASIS) == "chronic"
    for did, course in written.items():
        assert kg.graph.nodes[did].get("typical_course") == course, did
    res = Resources(llm_config=LLMConfig(), kg=kg, index=knowledge[1])
    ranker = KGRanker(kg)
    acute = _place(res, ranker, COUGH_CASE.format(duration="4 days of "), BRONCHIECTASIS)
    chronic = _place(res, ranker, COUGH_CASE.format(duration="6 months of "), BRONCHIECTASIS)
    unsaid = _place(res, ranker, COUGH_CASE.format(duration=""), BRONCHIECTASIS)
    assert (acute[2].course, chronic[2].course, unsaid[2].course) == ("acute", "chronic", None)
    assert acute[0] > chronic[0]
    assert acute[1] == pytest.approx(chronic[1] * ranker.config.course_mismatch, rel=0.02)
    assert unsaid[1] == pytest.approx(chronic[1], rel=0.02)


INFECTIVE_ENDOCARDITIS, PNEUMOCYSTOSIS, PNEUMOCYSTIS_HEADING = "DOID:0060000", "DOID:11339", "MESH:D016720"
MURMUR_CASE = ("A 29-year-old man who injects heroin has had fever and chills for a week. There is a new "
               "holosystolic murmur at the left lower sternal border.")
PCP_CASE = "Three weeks of fever, dry cough and breathlessness on exertion; SpO2 89% on room air."


def test_a_described_murmur_reaches_endocarditis_and_one_node_carries_pneumocystis_pneumonia(knowledge, kg):
    """HPO files a holosystolic murmur two steps below "heart murmur", beyond the ranker's one step up: the
    endocarditis entries name the regurgitant murmurs themselves, so fever, chills and a holosystolic murmur rank
    infective endocarditis among the first ten (without the table it is out of the first 40). The Pneumocystis
    entry sits on the Disease Ontology's pneumocystosis (whose names are the pneumonia's), not on MeSH's
    "Pneumocystis Infections" heading, which has no finding edge left, so one node, not two, answers for it."""
    res = Resources(llm_config=LLMConfig(), kg=kg, index=knowledge[1])
    ranker = KGRanker(kg)
    place, _, ex = _place(res, ranker, MURMUR_CASE, INFECTIVE_ENDOCARDITIS)
    assert "HP:0031667" in {e.concept_id for e in ex.entities}, ex.entities
    assert place < 10, place
    without = KGRanker(kg, replace(ranker.config, cardinal_strength=0.0))
    ranked0 = [c.concept_id for c in without.rank(*ranking_findings(ex), k=40, age=ex.age_years, sex=ex.sex)]
    assert INFECTIVE_ENDOCARDITIS not in ranked0
    g = kg.graph
    assert not [v for _, v, k in g.out_edges(PNEUMOCYSTIS_HEADING, keys=True) if k in ("has_symptom", "has_phenotype")]
    place, _, _ = _place(res, ranker, PCP_CASE, PNEUMOCYSTOSIS)
    assert place < 3, place

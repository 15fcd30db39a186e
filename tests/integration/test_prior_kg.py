"""The commonness prior on real data: its features computed from the built knowledge graph, the MedQuAD release and
the Disease Ontology 2016 subsets, and the packaged fitted weights applied by HKI to the demo case (fever, dry
cough, muscle aches, headache). Nothing is mocked."""
from __future__ import annotations

from dataclasses import replace

import pytest

from agents.hki import HKI, RetrievalParams
from agents.llm import LLMConfig
from graph.config import PipelineConfig
from graph.context import Resources
from knowledge import sources
from knowledge.prior import PriorFeatures, do_subsets

DEMO = "34-year-old woman with 3 days of fever, dry cough, muscle aches and headache; no rash."


@pytest.fixture(scope="module")
def kg(knowledge):
    return knowledge[0]


@pytest.fixture(scope="module")
def features(kg):
    return PriorFeatures.for_kg(kg)


@pytest.fixture(scope="module")
def resources(knowledge):
    kg, index = knowledge
    return Resources(llm_config=LLMConfig(), kg=kg, index=index)


def disease(kg, name: str) -> str:
    hits = kg.lookup(name, categories=["disease"])
    assert hits, name
    return hits[0].id


def test_common_diseases_have_consumer_pages_and_codes(kg, features):
    flu = features.values(disease(kg, "influenza"))
    assert flu["consumer_page"] == 1.0 and flu["rare_pages_only"] == 0.0
    assert flu["icd10cm"] == flu["icd_ch10"] == 1.0          # J11: respiratory system
    assert flu["hpo_only"] == 0.0 and flu["do_rare_slim"] == 0.0
    asthma = features.facts(disease(kg, "asthma"))
    assert asthma["drugs"] >= 10                              # PharmacotherapyDB indications
    assert asthma["hsdn"] >= 50                               # HSDN literature symptom profile
    assert "MPlusHealthTopics" in asthma["pages"]


def test_a_rare_genetic_disease_has_only_rare_disease_pages(kg, features):
    fmf = features.facts(disease(kg, "familial Mediterranean fever"))
    assert fmf["pages"] and set(fmf["pages"]) <= {"GARD", "GHR"}
    v = features.values(disease(kg, "familial Mediterranean fever"))
    assert v["rare_pages_only"] == 1.0 and v["consumer_page"] == 0.0
    assert v["do_rare_slim"] == 1.0 and v["rare_registry"] == 1.0


def test_hpo_only_diseases_are_orphanet_omim_or_decipher_concepts(kg, features):
    only = [cid for cid, f in features.records.items() if f["hpo_only"]]
    assert len(only) > 1000
    assert all(cid.split(":")[0] in ("ORPHA", "OMIM", "DECIPHER") for cid in only)
    assert not any(features.records[c]["hpo_only"] for c in features.records if c.startswith("DOID:"))


def test_do_rare_subset_comes_from_the_2016_release(kg):
    subs = do_subsets(sources.ensure("do-obo-2016"), kg)
    rare = [d for d, s in subs.items() if "DO_rare_slim" in s]
    assert len(rare) >= 400
    assert all(d in kg.graph for d in subs)


def test_features_are_cached_per_kg_version(kg, features):
    folder = PriorFeatures.cache_dir(PriorFeatures.cache_key(kg.version))
    assert (folder / "features.json").is_file()
    again = PriorFeatures.for_kg(kg)
    assert again.records == features.records and again.version == features.version
    assert len(features) == sum(1 for _, a in kg.graph.nodes(data=True) if a["category"] == "disease")


def _rank(candidates, cid: str) -> int | None:
    return next((i for i, c in enumerate(candidates, 1) if c.concept_id == cid), None)


def test_the_fitted_prior_keeps_or_lifts_influenza_in_the_demo_case(resources, kg):
    assert resources.prior is not None
    flu = disease(kg, "influenza")
    ex = resources.mee.extract(DEMO)
    off = resources.hki.retrieve(ex, DEMO, RetrievalParams.from_config(PipelineConfig(use_prior=False)))
    on = resources.hki.retrieve(ex, DEMO, RetrievalParams.from_config(PipelineConfig()))
    r_off, r_on = _rank(off.candidates, flu), _rank(on.candidates, flu)
    assert r_on is not None
    assert r_on <= 3 and (r_off is None or r_on <= r_off), (r_off, r_on, [c.name for c in on.candidates])
    assert not any("commonness prior" in c.explanation for c in off.candidates)
    top = on.candidates[_rank(on.candidates, flu) - 1]
    assert "commonness prior +" in top.explanation and "consumer health pages (MedlinePlus" in top.explanation
    assert 0.5 < sum(c.score for c in on.candidates) <= 1.001    # softmax shares of the pool of 20, top 10 kept
    # with the prior the fold of an empty broader term runs on the wider pool before the cut, so ten are kept; without
    # it the fused list is already cut at ten, and a folded term leaves it one shorter (subtypes.fold_empty_broader)
    assert len(on.candidates) == 10 and 9 <= len(off.candidates) <= 10


def test_prior_weight_zero_is_the_fusion_order(resources):
    ex = resources.mee.extract(DEMO)
    base = RetrievalParams.from_config(PipelineConfig(use_prior=False))
    zero = resources.hki.retrieve(ex, DEMO, replace(base, use_prior=True, prior_weight=0.0))
    off = resources.hki.retrieve(ex, DEMO, base)
    assert [c.concept_id for c in zero.candidates] == [c.concept_id for c in off.candidates]


def test_without_weights_hki_says_the_prior_is_missing(resources):
    hki = HKI(resources.index, resources.kg, resources.ranker, pages=resources.pages, prior=None)
    ex = resources.mee.extract(DEMO)
    res = hki.retrieve(ex, DEMO, RetrievalParams.from_config(PipelineConfig()))
    assert any("commonness prior unavailable" in w for w in res.warnings)
    assert res.candidates



def test_the_pipeline_pages_carry_the_definitions_and_the_baseline_pages_do_not(resources, kg):
    """The pipeline's disease pages add each disease's NCI Thesaurus definitions (a disease with no reference page
    gets one); the BM25 baseline keeps one page per disease of the reference answers only."""
    pages, baseline = resources.pages, resources.baseline_pages
    assert pages is not baseline
    assert set(baseline.concepts) < set(pages.concepts)
    only = [c for c in pages.concepts if c not in set(baseline.concepts)]
    cid = only[0]
    definition = next(d["text"] for d in kg.concept(cid).definitions if d.get("source") == "ncit")
    hits = pages.rank(definition, k=5)
    assert cid in [h["concept_id"] for h in hits]
    assert cid not in [h["concept_id"] for h in baseline.rank(definition, k=50)]

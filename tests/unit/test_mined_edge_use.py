"""Mined edges downstream: the ranker's strength for them, HKI's evidence (the sentence with its page, document id and
span), KNL's prose and KRG's reference. On a small hand-made graph with a real overlay; no data mirror."""
from __future__ import annotations

from agents.hki import triple_evidence
from agents.knl import KNL
from agents.krg import KRG
from agents.ranker import KGRanker, RankerConfig
from agents.types import Entity
from agents.verifier.scoring import cited_text, vocabulary
from knowledge.kg import build, mined
from knowledge.kg.builder import Builder
from knowledge.kg.graph import KnowledgeGraph

MI, CHEST_PAIN, SWEATING, NAUSEA = "DOID:5844", "SYMP:0000483", "SYMP:0000386", "SYMP:0000614"
ANSWER = ("Heart attack symptoms vary. The most common symptom is chest pain or discomfort. "
          "Other symptoms include breaking out in a cold sweat. Nausea can also occur.")
URL = "http://www.nhlbi.nih.gov/health/health-topics/topics/heartattack"


def record(finding: str, surface: str) -> mined.MinedEdge:
    start = ANSWER.rindex(". ", 0, ANSWER.index(surface)) + 2
    end = ANSWER.index(".", start) + 1
    m = ANSWER.index(surface)
    return mined.MinedEdge(disease=MI, finding=finding, doc_id="NHLBI_0000060-4", span=(start, end),
                           sentence=ANSWER[start:end], question_type="symptoms", organisation="NHLBI",
                           focus="Heart Attack", linked_by="cui", mention=(m, m + len(surface)), surface=surface,
                           url=URL, disease_name="myocardial infarction", finding_name=surface)


def mined_kg() -> KnowledgeGraph:
    b = Builder()
    b.step = lambda msg: None
    b.node(MI, "disease", "do-humando", name="myocardial infarction")
    for sid, name in [(CHEST_PAIN, "chest pain"), (SWEATING, "sweating"), (NAUSEA, "nausea")]:
        b.node(sid, "symptom", "do-symp", name=name)
    b.edge(MI, "has_symptom", CHEST_PAIN, "do-disease-symptom")
    kg = KnowledgeGraph(build.assemble(b.nodes.items(), b.edge_list()), "0123456789abcdef", {})
    mined.apply_overlay(kg, mined.MinedFile({}, [record(CHEST_PAIN, "chest pain"), record(SWEATING, "cold sweat")]))
    return kg


def triple(kg: KnowledgeGraph, finding: str):
    return next(t for t in kg.neighbors(MI, relation="has_symptom") if t.object == finding)


def test_the_ranker_gives_mined_edges_their_own_strength():
    kg = mined_kg()
    ranker = KGRanker(kg)
    idx = ranker.index
    s_mined, label, kinds = idx.edge_strength(kg.graph[MI][SWEATING]["has_symptom"])
    assert abs(s_mined - 0.6) < 1e-9 and RankerConfig().mined_strength == 0.6 and label == "MedQuAD" and kinds == {"MedQuAD"}
    # a curated edge the miner confirmed: DO and MedQuAD agree (noisy-OR)
    s_both, label_both, _ = idx.edge_strength(kg.graph[MI][CHEST_PAIN]["has_symptom"])
    assert label_both == "DO, MedQuAD" and abs(s_both - (1 - (1 - 0.9) * (1 - 0.6))) < 1e-9
    weaker = KGRanker(kg, mined_strength=0.3)
    assert weaker.config.index_key() != ranker.config.index_key()
    assert abs(weaker.index.edge_strength(kg.graph[MI][SWEATING]["has_symptom"])[0] - 0.3) < 1e-9
    cands = ranker.rank([Entity(text="cold sweat", category="symptom", concept_id=SWEATING)])
    assert [c.concept_id for c in cands] == [MI]
    assert "MedQuAD" in cands[0].explanation and f"{MI}|has_symptom|{SWEATING}" in cands[0].supporting


def test_hki_evidence_of_a_mined_edge_is_its_sentence_with_page_and_span():
    kg = mined_kg()
    ev = triple_evidence(triple(kg, SWEATING), 0.8, query="cold sweat")
    assert ev.id == f"G:{MI}|has_symptom|{SWEATING}" and ev.kind == "triple" and ev.role == "G"
    assert ev.text == "Other symptoms include breaking out in a cold sweat."
    assert ev.doc_id == "NHLBI_0000060-4" and ev.url == URL and ev.organisation == "NHLBI"
    assert ANSWER[ev.span[0]:ev.span[1]] == ev.text
    assert ev.source == "MedQuAD/NHLBI" and ev.meta["mined"] and ev.meta["section"] == "symptoms"
    # a citation with the sentence's span points at the sentence itself
    assert cited_text(ev, ev.span) == (ev.text, None)
    # the verifier's vocabulary takes the edge's concepts, not every word of the sentence
    vocab = vocabulary([ev])
    assert "breaking" not in " ".join(vocab)
    # a curated edge stays a triple in the graph's words
    cur = triple_evidence(triple(kg, CHEST_PAIN), 0.8)
    assert cur.doc_id is None and cur.text == "Myocardial infarction can present with chest pain."


def test_knl_quotes_the_page_and_never_names_the_relation():
    kg = mined_kg()
    ev = triple_evidence(triple(kg, SWEATING), 0.8)
    (sent,), warnings = KNL().convert([ev])
    assert warnings == []
    assert sent.full == "NHLBI on Heart Attack (symptoms): Other symptoms include breaking out in a cold sweat."
    assert sent.span == ev.span
    assert "has_symptom" not in sent.full and "has symptom" not in sent.full


def test_krg_cites_the_medquad_page_with_the_sentence_span():
    kg = mined_kg()
    mined_ev = triple_evidence(triple(kg, SWEATING), 0.9)
    curated_ev = triple_evidence(triple(kg, CHEST_PAIN), 0.8)
    refs, mapping = KRG().references([mined_ev, curated_ev])
    assert len(refs) == 2
    page = refs[mapping[mined_ev.id] - 1]
    assert page.url == URL and page.span == mined_ev.span and page.source == "MedQuAD/NHLBI"
    text = page.format()
    assert f"chars {mined_ev.span[0]}-{mined_ev.span[1]}" in text and URL in text and "Heart Attack" in text
    graph_ref = refs[mapping[curated_ev.id] - 1]
    assert graph_ref.span is None and "has symptom chest pain" in graph_ref.title


def test_mined_strength_zero_is_the_graph_without_mined_edges():
    """The ``no-mined`` ablation: with mined_strength 0 a mined-only edge is no edge, a confirmed curated edge keeps
    its curated strength alone."""
    kg = mined_kg()
    off = KGRanker(kg, mined_strength=0.0)
    assert off.rank([Entity(text="cold sweat", category="symptom", concept_id=SWEATING)]) == []
    s, label, kinds = off.index.edge_strength(kg.graph[MI][CHEST_PAIN]["has_symptom"])
    assert (abs(s - 0.9) < 1e-9, label, kinds) == (True, "DO", {"DO"})
    assert off.explained(MI, [Entity(text="sweating", category="symptom", concept_id=SWEATING)]) == []


def test_a_denied_finding_only_a_reference_page_says_can_occur_counts_half_against_the_disease():
    """A MedQuAD sentence says what can occur, not how often: its absence argues against the disease with half the
    edge's strength (``negation_weak_share``); an edge a curated source asserts (DO, even when the miner confirms it)
    counts in full. No fever in a bladder infection whose page lists fever must not weigh like a textbook's cardinal
    fever."""
    from dataclasses import replace

    kg = mined_kg()
    ranker = KGRanker(kg)
    assert ranker.config.negation_weak_share == 0.5 and ranker.config.negation_mu == 0.6
    full = KGRanker(kg, replace(ranker.config, negation_weak_share=1.0))
    pain = Entity(text="chest pain", category="symptom", concept_id=CHEST_PAIN)
    sweat = Entity(text="sweating", category="symptom", concept_id=SWEATING)
    no_sweat, no_pain = sweat.model_copy(update={"negated": True}), pain.model_copy(update={"negated": True})

    def score(r, pos, neg):
        return r.rank([pos], [neg])[0].score

    # sweating: a mined edge only (0.6), counted 0.3 -> the factor 1 - 0.6 * 0.6 = 0.64 becomes 1 - 0.6 * 0.3 = 0.82
    assert abs(score(ranker, pain, no_sweat) / score(full, pain, no_sweat) - 0.82 / 0.64) < 1e-6
    # chest pain: DO and MedQuAD -> in full either way
    assert abs(score(ranker, sweat, no_pain) / score(full, sweat, no_pain) - 1.0) < 1e-9

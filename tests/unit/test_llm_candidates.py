"""The LLM path's pieces without the knowledge graph: parsing the local model's recorded replies, repair and the
logical call budget (a real HTTP server on 127.0.0.1), merging the model's ranking with the fused candidates,
the verifier's verdict per diagnosis, and the disagreement section."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.llama_server import ok

from agents.answer import DISAGREEMENT_HEADING, apply_support, item_support
from agents.generator import Generator, LLMRanking, _LLMDraft
from agents.llm import LLMBudget, LLMClient, LLMConfig
from agents.llm.budget import logical_calls
from agents.llm.structured import parse_reply
from agents.proposer import ProposalReply, alternatives_schema, name_variants
from agents.types import Candidate, ClaimCheck, DifferentialItem, Draft, Evidence, Sentence, Verification

RECORDED = yaml.safe_load((Path(__file__).resolve().parents[1] / "cases" / "llm_outputs.yaml").read_text())
SCHEMAS = {"propose": ProposalReply, "generate": LLMRanking, "direct": _LLMDraft, "alternatives": alternatives_schema(4)}


def count_tokens(text: str) -> int:
    return len(text.split())


# ---- recorded replies of the local 1.5B model ------------------------------------------------------------------

@pytest.mark.parametrize("rec", RECORDED["outputs"], ids=lambda r: f"{r['call']}:{r['note'][:30]}")
def test_recorded_replies_of_the_local_model_validate(rec):
    value, problem = parse_reply(rec["raw"], SCHEMAS[rec["call"]], "stop")
    assert problem is None and value is not None


@pytest.mark.parametrize("rec", RECORDED["outputs"], ids=lambda r: f"{r['call']}:{r['note'][:30]}")
def test_a_reply_cut_at_max_tokens_is_an_error_that_says_so(rec):
    raw = rec["raw"][: len(rec["raw"]) * 2 // 3]
    value, problem = parse_reply(raw, SCHEMAS[rec["call"]], "length")
    assert value is None and "malformed JSON" in problem and "truncated at max_tokens" in problem


def test_a_reply_of_the_wrong_shape_names_the_field():
    raw = '{"differential": [{"diagnosis": "influenza", "likelihood": "certain", "citations": ["E1"]}]}'
    value, problem = parse_reply(raw, LLMRanking, "stop")
    assert value is None and "differential.0.likelihood" in problem


# ---- repair and the logical call budget (real HTTP server) --------------------------------------------------

def _budget(srv, max_calls: int = 4) -> LLMBudget:
    client = LLMClient(LLMConfig(base_url=srv.base_url, model=srv.model, timeout=5, max_retries=0,
                                 json_mode="json_object"))
    return LLMBudget(client, max_calls=max_calls)


def test_a_repaired_reply_is_one_logical_call_with_its_parse_error_recorded(faulty_server):
    good = RECORDED["outputs"][0]["raw"]
    faulty_server.queue(ok(good[:40], finish_reason="length"), ok(good))
    llm = _budget(faulty_server)
    res = llm.structured([{"role": "user", "content": "propose"}], ProposalReply, tag="propose")
    assert res.value is not None and res.repaired and [d.name for d in res.value.diagnoses] == ["Influenza",
                                                                                              "Pneumonia"]
    assert len(llm.calls) == 2 and logical_calls(llm.calls) == 1 and llm.used == 1
    assert llm.calls[0]["logical"] and "malformed JSON" in llm.calls[0]["parse_error"]
    assert not llm.calls[1]["logical"] and llm.calls[1]["mode"].endswith("+repair")


def test_the_budget_counts_logical_calls_not_repairs(faulty_server):
    good = RECORDED["outputs"][2]["raw"]
    for _ in range(4):
        faulty_server.queue(ok("{not json"), ok(good))
    llm = _budget(faulty_server, max_calls=4)
    for i in range(4):
        assert llm.structured([{"role": "user", "content": f"rank {i}"}], LLMRanking, tag="generate").ok
    assert llm.used == 4 and len(llm.calls) == 8 and not llm.enabled
    refused = llm.structured([{"role": "user", "content": "again"}], LLMRanking, tag="generate")
    assert refused.value is None and "budget of 4" in refused.error
    assert len(faulty_server.chat_requests()) == 8


# ---- names the model writes ---------------------------------------------------------------------------------

def test_name_variants_strip_parentheses_alternatives_and_qualifiers():
    assert name_variants("Coronary artery disease (CAD)") == ["Coronary artery disease (CAD)",
                                                              "Coronary artery disease", "CAD"]
    assert name_variants("Acute viral bronchitis")[-1] == "bronchitis"
    assert "Influenza" in name_variants("Influenza / flu") and "flu" in name_variants("Influenza / flu")
    assert name_variants("  migraine. ") == ["migraine"]


def test_name_variants_drop_what_a_small_model_appends():
    assert name_variants("Peptic ulcer disease with severe vomiting and abdominal pain") == [
        "Peptic ulcer disease with severe vomiting and abdominal pain", "Peptic ulcer disease"]
    assert name_variants("Acute anemia due to blood loss")[-1] == "anemia"
    assert name_variants("Gastritis - likely NSAID induced")[1] == "Gastritis"
    # a comma or "and" inside a name is part of it
    assert name_variants("Hand, foot and mouth disease") == ["Hand, foot and mouth disease"]


# ---- merging the model's ranking with the fused candidates -------------------------------------------------

def _ev(i: str, concept: str) -> Evidence:
    return Evidence(id=i, role="G", kind="triple", text=f"{concept} can present with fever.", concept_ids=[concept])


def _cands() -> list[Candidate]:
    return [
        Candidate(concept_id="D:a", name="alpha fever", score=0.9, origins=["kg", "page"], ranks={"kg": 1, "page": 2},
                  knowledge_score=0.9),
        Candidate(concept_id="D:b", name="beta flu", score=0.8, origins=["kg", "model"], ranks={"kg": 2, "model": 1},
                  knowledge_score=0.2),
        Candidate(concept_id="model:gamma pox", name="gamma pox", score=0.3, origins=["model"], ranks={"model": 2},
                  model_reason="rash and fever"),
    ]


def _kept() -> list[Sentence]:
    return [Sentence(evidence_id="G:a1", text="Alpha fever can present with fever."),
            Sentence(evidence_id="G:b1", text="Beta flu can present with fever.")]


def _extractive() -> Draft:
    items = [DifferentialItem(rank=1, diagnosis="alpha fever", concept_id="D:a", likelihood="high",
                              rationale="Alpha fever can present with fever. [G:a1]", citations=["G:a1"],
                              origins=["kg", "page"]),
             DifferentialItem(rank=2, diagnosis="beta flu", concept_id="D:b", likelihood="moderate",
                              rationale="Beta flu can present with fever. [G:b1]", citations=["G:b1"],
                              origins=["kg", "model"])]
    return Draft(differential=items, next_steps=["alpha fever: test it. [G:a1]"], text="(extractive)")


def test_merge_fuses_the_models_order_and_keeps_every_origin():
    gen = Generator(llm=None, differential_k=5, count_tokens=count_tokens, generator_weight=1.0)
    ranking = [DifferentialItem(rank=1, diagnosis="Beta flu", concept_id="D:b", likelihood="high",
                                rationale="Fever fits beta flu.", citations=["G:b1"]),
               DifferentialItem(rank=2, diagnosis="alpha fever", concept_id="D:a", likelihood="low",
                                rationale="No citation given.", citations=[])]
    draft = gen.merge(ranking, _extractive(), _cands(), _kept())
    names = [d.diagnosis for d in draft.differential]
    # alpha: 0.9 + 1/(3+2) = 1.10 stays above beta: 0.8 + 1/(3+1) = 1.05; gamma (model only) 0.3
    assert names == ["alpha fever", "beta flu", "gamma pox"]
    alpha, beta, gamma = draft.differential
    assert alpha.rationale.startswith("Alpha fever can present") and alpha.likelihood == "low"  # uncited: extractive
    assert "No citation given" not in draft.text
    assert beta.rationale == "Fever fits beta flu. [G:b1]" and beta.origins == ["kg", "model"]
    assert gamma.concept_id is None and gamma.origins == ["model"] and gamma.citations == []
    assert gamma.note.startswith("model only, no evidence") and "rash and fever" in gamma.note
    assert "model only, no evidence" in draft.text and draft.origin == "llm"
    assert draft.next_steps == ["alpha fever: test it. [G:a1]"]


def test_a_heavier_generator_weight_lets_the_models_order_win():
    gen = Generator(llm=None, differential_k=2, count_tokens=count_tokens, generator_weight=3.0)
    ranking = [DifferentialItem(rank=1, diagnosis="beta flu", concept_id="D:b", rationale="Fits.",
                                citations=["G:b1"])]
    draft = gen.merge(ranking, _extractive(), _cands(), _kept())
    assert [d.diagnosis for d in draft.differential] == ["beta flu", "alpha fever"]   # k = 2 cuts gamma


def test_disagreement_is_shown_with_the_evidence_for_each():
    gen = Generator(llm=None, differential_k=5, count_tokens=count_tokens)
    evidence = [_ev("G:a1", "D:a"), _ev("G:b1", "D:b")]
    draft = gen.with_disagreement(_extractive(), _cands(), _kept(), evidence)
    d = draft.disagreement
    assert d is not None and d.model_first == "beta flu" and d.kg_first == "alpha fever"
    assert d.model_evidence == ["G:b1"] and d.kg_evidence == ["G:a1"] and d.final_first == "alpha fever"
    assert DISAGREEMENT_HEADING in draft.text and "Beta flu can present with fever. [G:b1]" in draft.text


def test_no_disagreement_when_the_model_and_the_knowledge_agree():
    gen = Generator(llm=None, differential_k=5, count_tokens=count_tokens)
    cands = _cands()
    cands[1] = cands[1].model_copy(update={"knowledge_score": 0.95})
    draft = gen.with_disagreement(_extractive(), cands, _kept(), [_ev("G:a1", "D:a"), _ev("G:b1", "D:b")])
    assert draft.disagreement is None and DISAGREEMENT_HEADING not in draft.text


# ---- the verifier's verdict per diagnosis -------------------------------------------------------------------

def test_an_unsupported_diagnosis_moves_to_the_end_and_says_why():
    draft = _extractive()
    draft.differential.append(DifferentialItem(rank=3, diagnosis="gamma pox", origins=["model"],
                                               note="model only, no evidence"))
    v = Verification(passed=False, claims=[
        ClaimCheck(claim="Alpha fever can present with fever.", citations=["G:a1:0-30"], verdict="CONTRADICTED"),
        ClaimCheck(claim="Beta flu can present with fever.", citations=["G:b1"], verdict="SUPPORTED")])
    assert item_support(draft.differential[0], v) == "not supported"
    assert item_support(draft.differential[1], v) == "supported"
    out = apply_support(draft, v)
    assert [(d.rank, d.diagnosis, d.support) for d in out.differential] == [
        (1, "beta flu", "supported"), (2, "gamma pox", "no evidence"), (3, "alpha fever", "not supported")]
    assert out.differential[2].note.startswith("not supported by the cited evidence")
    assert out.text.index("beta flu") < out.text.index("alpha fever")


def test_support_without_a_change_of_order_keeps_the_text():
    draft = _extractive()
    v = Verification(passed=True, claims=[
        ClaimCheck(claim="x", citations=["G:a1"], verdict="SUPPORTED"),
        ClaimCheck(claim="y", citations=["G:b1"], verdict="INSUFFICIENT"),
        ClaimCheck(claim="z", citations=["G:b1"], verdict="SUPPORTED")])
    out = apply_support(draft, v)
    assert [d.support for d in out.differential] == ["supported", "partly supported"]
    assert out.text == "(extractive)"



def test_direct_request_asks_for_a_minimum_only_when_set():
    import pydantic

    from agents.generator import DirectReply, direct_messages, direct_reply_schema

    default = direct_messages("fever and cough", 5)
    assert "Give at most 5 diagnoses" in default[0]["content"]          # the request the cache already holds
    assert direct_reply_schema(5) is DirectReply
    three = direct_messages("fever and cough", 5, 3)
    assert "Give 3 to 5 diagnoses" in three[0]["content"] and three[1] == default[1]
    schema = direct_reply_schema(5, 3)
    arr = schema.model_json_schema()["properties"]["differential"]
    assert (arr["minItems"], arr["maxItems"]) == (3, 5)                  # what the grammar enforces
    one = {"differential": [{"diagnosis": "influenza"}]}
    assert DirectReply.model_validate(one)
    with pytest.raises(pydantic.ValidationError):
        schema.model_validate(one)


# ---- the widening call (llm_agents "alternatives") ------------------------------------------------------------

def test_alternatives_continue_the_ranks_drop_repeats_and_are_flagged(faulty_server):
    from agents.proposer import Proposer  # noqa: PLC0415
    from agents.types import ProposedDiagnosis  # noqa: PLC0415

    reply = {"diagnoses": [{"name": "influenza", "reason": "repeat of the first answer"},
                           {"name": "Pneumonia", "reason": "fever and cough"},
                           {"name": "Acute bronchitis", "reason": "cough"}]}
    faulty_server.queue(ok(json.dumps(reply)))
    first = [ProposedDiagnosis(rank=1, name="Influenza")]
    llm = _budget(faulty_server)
    more, warns, info = Proposer(llm, kg=None, k=4).alternatives("fever, cough, myalgia", first, n=4)
    assert [(x.rank, x.name, x.alternative) for x in more] == [(2, "Pneumonia", True), (3, "Acute bronchitis", True)]
    assert not warns and llm.used == 1 and llm.calls[0]["tag"] == "alternatives"
    user = info["messages"][1]["content"]
    assert "Already put forward: Influenza" in user and "fever, cough, myalgia" in user
    assert "2 to 4" in info["messages"][0]["content"]


def test_alternatives_that_fail_leave_the_first_answer_and_say_so(faulty_server):
    from agents.proposer import Proposer  # noqa: PLC0415

    faulty_server.queue(ok("{not json"), ok("{still not json"))
    more, warns, _ = Proposer(_budget(faulty_server), kg=None, k=4).alternatives("fever", [], n=4)
    assert more == [] and len(warns) == 1 and warns[0].startswith("alternatives:")
    assert "first answer only" in warns[0]


def test_the_widening_call_caps_reasons_and_leaves_room_for_every_diagnosis(faulty_server):
    """A small model's long reasons once ran the reply into max_tokens: the schema sent caps a reason's length
    (constrained decoding stops the string there), max_tokens grows with the number asked, and a server that
    ignores the schema gets its long reasons cut on parsing rather than rejected."""
    from agents.proposer import ITEM_TOKENS, REASON_CHARS, Proposer  # noqa: PLC0415

    long_reason = "fever and cough with myalgia in a young adult during the winter season " * 3
    reply = {"diagnoses": [{"name": "Pneumonia", "reason": long_reason}, {"name": "Sinusitis", "reason": "pain"}]}
    faulty_server.queue(ok(json.dumps(reply)))
    more, warns, _ = Proposer(_budget(faulty_server), kg=None, k=4, max_tokens=128).alternatives(
        "fever, cough", [], n=4)
    assert not warns and [x.name for x in more] == ["Pneumonia", "Sinusitis"]
    assert len(more[0].reason) <= REASON_CHARS and long_reason.startswith(more[0].reason)
    body = faulty_server.chat_requests()[0].body
    assert body["max_tokens"] >= 4 * ITEM_TOKENS
    schema = json.dumps(body.get("response_format") or {})
    assert f'"maxLength": {REASON_CHARS}' in schema


# ---- the model's first choice, kept first when a knowledge ranking backs it ----------------------------------------

def _c(cid: str, score: float, **ranks: int) -> Candidate:
    return Candidate(concept_id=cid, name=cid.lower(), score=score, ranks=ranks,
                     origins=[("model" if k == "alt" else k) for k in ranks])


def test_the_models_first_choice_leads_when_a_knowledge_ranking_backs_it():
    from agents.hki import keep_model_first

    fused = [_c("D:kg", 0.4, kg=1, text=1), _c("D:other", 0.3, page=1), _c("D:model", 0.2, model=1, kg=4)]
    out = keep_model_first(fused, within=5)
    assert [c.concept_id for c in out] == ["D:model", "D:kg", "D:other"]
    assert out[0].score == 0.4 and "kept first" in out[0].explanation and "kg ranking 4" in out[0].explanation
    # the same candidate backed only beyond the limit, or by nothing but the model, stays where the fusion put it
    assert keep_model_first(fused, within=3) == fused
    alone = [fused[0], fused[1], _c("D:model", 0.2, model=1)]
    assert keep_model_first(alone, within=10) == alone


def test_a_first_choice_the_evidence_contradicts_is_not_kept_first():
    from agents.hki import keep_model_first

    fused = [_c("D:kg", 0.4, kg=1), _c("D:model", 0.2, model=1, kg=2).model_copy(
        update={"demoted": "expects fever, which the patient does not have"})]
    assert keep_model_first(fused, within=5) == fused
    leading = [_c("D:model", 0.4, model=1, kg=1), _c("D:kg", 0.3, kg=2)]
    assert keep_model_first(leading, within=5) == leading
    assert keep_model_first([_c("D:kg", 0.4, kg=1)], within=5) == [_c("D:kg", 0.4, kg=1)]


def test_the_findings_block_tells_normal_values_from_stated_absences():
    from agents.proposer import findings_block
    from agents.types import Entity, Extraction

    ex = Extraction(entities=[
        Entity(text="aPTT 62 s", category="symptom", concept_id="HP:0003645", measured=True),
        Entity(text="no fever", category="symptom", concept_id="SYMP:0000613", negated=True),
        Entity(text="platelets 250,000/mm3", category="symptom", concept_id="SYMP:0000114", negated=True,
               measured=True),
        Entity(text="platelets 250,000/mm3", category="symptom", concept_id="HP:0001894", negated=True,
               measured=True)], age_years=7, sex="male")
    lines = findings_block(ex).splitlines()
    assert "Stated as absent: no fever." in lines
    assert "Measured within normal limits: platelets 250,000/mm3." in lines
    assert lines[0].endswith("aPTT 62 s.") and lines[-1] == "Patient: age 7, male."

"""Typed run configuration. The paper's ablations are flags here (Table 2), so an experiment is a config."""
from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class PipelineConfig(BaseModel):
    # a misspelt setting is an error, not a silently default run (an ablation that ablates nothing)
    model_config = ConfigDict(extra="forbid")

    mode: Literal["pipeline", "direct"] = "pipeline"   # direct = LLM only, no retrieval (baseline)
    # ablation axes (paper Table 2)
    use_mee: bool = True
    use_knl: bool = True
    use_krg: bool = True
    use_verifier: bool = True
    use_pages: bool = True            # fuse the disease-page text ranking into the differential
    page_weight: float = Field(1.0, ge=0.0, le=10.0)   # its weight in the rank fusion (KG ranking = 1)
    use_prior: bool = True            # re-rank the differential with the fitted commonness prior (agents/prior.py)
    prior_weight: float = Field(1.0, ge=0.0, le=10.0)  # weight of its commonness part (1 = as fitted)
    prior_pool: int = Field(20, ge=2, le=200)          # fused candidates the prior re-ranks (fit with the same pool)
    prior_monotone: bool = False      # the prior's fusion part never rises down the fused order (agents/prior.py)
    use_mined_edges: bool = True      # rank with the disease -> finding edges mined from MedQuAD (agents/miner.py)
    mined_strength: float | None = Field(None, ge=0.0, le=1.0)  # their edge strength (None: RankerConfig's)
    use_cardinal: bool = True         # rank with the curated cardinal findings of common diseases (knowledge/kg/cardinal)
    cardinal_strength: float | None = Field(None, ge=0.0, le=1.0)  # their edge strength (None: RankerConfig's)
    source_agreement: float | None = Field(None, ge=0.0, le=1.0)  # several sources for one finding: 1 noisy-OR, 0 the
    #                                   strongest alone (None: RankerConfig's)
    use_opposites: bool = True        # a present finding argues against a disease expecting its opposite (low vs high TSH)
    drop_broader_findings: bool = False  # the KG ranking leaves out a finding broader than another present one ("pain"
    #                                   beside "left lower quadrant pain": one complaint, not two)
    degree_as_plain: bool = False     # the KG ranking matches a graded finding ("mild fever") as its plain term ("fever")
    related_discount: float | None = Field(None, ge=0.0, le=1.0)  # a present finding matches the findings
    #                                   agents/data/related_findings.yaml pairs it with (fatigue, malaise) at this
    #                                   discount (0: off; None: RankerConfig's)
    use_sites: bool = True            # the diseases of the organs under a localised pain as a ranking (agents/sites.py)
    site_weight: float = Field(0.5, ge=0.0, le=10.0)   # its weight in the rank fusion (KG ranking = 1; dev-chosen)
    use_signs: bool = True            # the diseases classic signs point to as a ranking (agents/signs.py)
    # its weight in the rank fusion (KG ranking = 1); 2 chosen on the dev halves among 1, 2, 3 (MedQA top-1 12.5 -> 19.6,
    # the other datasets unchanged; 3 = 2)
    sign_weight: float = Field(2.0, ge=0.0, le=10.0)
    # the KG ranking's part of the fusion also grows with the candidate's KG score relative to the best one (the margin
    # its rank alone hides: + kg_score_weight * score / best; 0: the rank alone)
    kg_score_weight: float = Field(0.15, ge=0.0, le=10.0)
    use_risk_factors: bool = True     # stated exposures raise the candidates they make likelier (risk_factors.py)
    # the factor per unit of exposure weight (at most 2) on a fitting candidate's fused score (1: none; 1.6 chosen on
    # the dev halves among 1.3 and 1.6)
    risk_factor_boost: float = Field(1.6, ge=1.0, le=5.0)
    # ... only on a candidate a finding of the patient matches in the knowledge graph: one that word search alone put
    # forward is not made likelier by an exposure (immunosuppression and a "burning" sore throat do not make herpes
    # zoster likelier without a rash)
    risk_needs_match: bool = True
    # ... and so does a disease of another person's the history states: a relative's (a family history) raises the
    # same disease and its subtypes, anyone's infection (a contact) likewise (agents/risk_factors.py others_diseases)
    others_as_exposures: bool = True
    # a disease seldom diagnosed without an exposure (carbon monoxide poisoning without a source of the gas, Q fever
    # without farm animals, long COVID without a past COVID-19: risk_factors.yaml needs_exposure) says so when the
    # history states none, and its score is multiplied by unexposed_factor (1: only marked; it needs the table on,
    # use_risk_factors, so the no-risk-factors ablation leaves it out, but not the raise: a boost of 1 keeps it;
    # pipeline:no-needs marks only). 0.25 chosen on the dev halves among 0.25 and 0.1 (identical there: 16 gold
    # diagnoses up, 5 of them into the top 5, none down; long COVID and carbon monoxide poisoning left the five of
    # several hypertension texts)
    unexposed_factor: float = Field(0.25, ge=0.0, le=1.0)
    # the factor on the fused score of a disease that word search alone put forward (no knowledge-graph finding of
    # the patient matched it): in the dev halves' top fives such diseases were the diagnosis about half as often as
    # those the KG ranking matched (DDXPlus 7 vs 15 %, Symptom2Disease 4 vs 14 %); 0.85 chosen on the dev halves
    # among 1, 0.85 and 0.7 (0.7: more top-5 gains, DDXPlus top-1 -1.4 points)
    unmatched_factor: float = Field(0.85, gt=0.0, le=1.0)
    # a subtype is named before its parent disease when its own knowledge-graph evidence is over 1/subtype_ratio times
    # the parent's own (the parent ranked high only by speaking for it) and it stands out among the parent's subtypes
    # (subtype_standout times the next one): "post-traumatic stress disorder" before "anxiety disorder" (subtypes.py
    # name_subtypes_first; 0.5 and 2 chosen on the dev halves)
    use_subtypes: bool = True
    subtype_ratio: float = Field(0.5, ge=0.0, le=10.0)
    subtype_standout: float = Field(2.0, ge=1.0, le=100.0)
    # a broader term, a kind (is_a up to relatives_depth steps either way; 0: not looked for) or another id of a disease
    # ranked earlier says so ("a broader term for hemorrhagic stroke"); with fold_relatives it is folded into that one
    # ("also covers stroke") and gives its place to the next disease — off: on the dev halves folding lost more gold
    # diagnoses of another granularity than it let in (docs/results.md)
    relatives_depth: int = Field(2, ge=0, le=5)
    fold_relatives: bool = False
    # a broader term that holds nothing of its own — put forward only by the KG ranking (its parent taking over a
    # subtype's findings) or by the organ under a pain, its own KG score zero — is folded into a kind of it in the list
    # ("paranasal sinus disease" into sinusitis, "pancreas disease" into pancreatitis; subtypes.fold_empty_broader).
    # On the dev halves (2026-12-07): Symptom2Disease top-3 +1, MedQA top-5 +1, DDXPlus top-3 +1, nothing lost; the test
    # halves unchanged; lists naming a disease with its broader term fell from 227 to 198 (S2D) and 337 to 236 (DDXPlus)
    fold_empty_broader: bool = True
    # a candidate the patient is known to have (past history, "a woman with type 1 diabetes has ...") says so and its
    # score is multiplied by known_condition_factor (1: only marked; subtypes.demote_known). 0.5 on the dev halves
    # moved 46 DDXPlus cases, mostly down: there a known asthma, COPD or anaemia is often the answer (an exacerbation)
    known_condition_factor: float = Field(1.0, ge=0.0, le=1.0)
    # a condition the patient is known to have ("a man with type 1 diabetes has ...") keeps the ranks the chunk and
    # page searches give it (off: only its knowledge-graph ranking counts, since its name in the presentation finds
    # its pages whatever the present illness is). Off was tried on the dev halves (2026-12-05): the diabetic with
    # ketoacidosis had it 2nd instead of 9th, but DDXPlus top-5 fell 71.0 -> 64.3 (its patients' "history of
    # pericarditis" or known asthma is often the answer, a recurrence) and MedQA did not move: on by default
    known_by_words: bool = True
    # a known condition ahead of one of its complications (a disease the risk-factor table raises for it) yields its
    # place to it when the findings fit the complication at least known_yield_ratio times as well (knowledge-graph
    # ranking scores; 0: never; subtypes.yield_to_fit): the known diabetic's ketoacidosis is named before his diabetes,
    # whose name finds its pages and which explains his hyperglycaemia whatever else is happening. Any other disease
    # stays behind it: yielding to every disease that fits better cost DDXPlus dev top-5 71.0 -> 64.3 (a known
    # pericarditis or COPD is often the present illness again); 0.5 as for a subtype (subtype_ratio), no dev case moves
    known_yield_ratio: float = Field(0.5, ge=0.0, le=10.0)
    # a candidate that a result stated in the presentation excludes (a negative CT pulmonary angiogram, pulmonary
    # embolism; the must-not-miss rules' ruled_out_by) says so, its score is multiplied by ruled_out_factor and, below
    # 1, it is placed after every open candidate (1: only marked). Set by reasoning, not fitted: such a result settles
    # the question, so the diagnosis falls below every open one, yet stays in view (and on the must-not-miss line); no
    # development case states one (one MedQA test question does: a negative urine beta-hCG, gold pseudocyesis)
    ruled_out_factor: float = Field(0.1, ge=0.0, le=1.0)
    # a candidate that a finding of the patient argues against (a fever, allergic rhinitis; a rash all over the body,
    # shingles: agents/data/against_findings.yaml) says so and its score is multiplied by against_factor once per
    # rule, at most twice (1: only marked; the no-against ablation leaves the table out). 0.1 chosen on the dev halves
    # among 0.5, 0.25 and 0.1 (0.5 moved no gold diagnosis; 0.25 four up; 0.1 eleven more up, none down: DDXPlus viral
    # pharyngitis past allergic rhinitis, Symptom2Disease typhoid past gastroenteritis)
    use_against: bool = True
    against_factor: float = Field(0.1, ge=0.0, le=1.0)
    sources: list[Literal["G", "B", "O"]] = Field(default_factory=lambda: ["G", "B", "O"])
    top_k_per_source: int = Field(5, ge=1, le=50)
    chunk_k: int = Field(8, ge=0, le=100)          # hybrid chunk search with the whole presentation
    max_input_tokens: int = Field(4096, ge=256, le=131072)
    # retrieval / grading
    min_entity_score: float = 0.55                  # cosine floor for entity-keyed hits
    min_chunk_score: float = 0.0                    # fused-score floor for chunk hits
    max_evidence: int = Field(40, ge=1, le=400)
    grader_min_coverage: float = 0.5                # share of positive entities with evidence
    grader_min_evidence: int = 3
    max_attempts: int = Field(2, ge=0, le=5)        # corrective re-retrievals (grader and verifier share it)
    # generation / verification
    differential_k: int = Field(5, ge=1, le=20)
    verify_confidence: float = 0.75
    verify_max_partial: float = 0.10
    max_presentation_chars: int = 20000             # per message; a thread keeps its latest turns within it
    max_entities: int = Field(40, ge=1, le=500)     # clinical entities used for retrieval (first ones in the text)
    max_llm_calls: int = Field(4, ge=0, le=20)      # logical LLM calls per case; past it agents go deterministic
    # the LLM path: which agents may call the model (the rest take their deterministic path; "verify" adds the LLM
    # judge to the deterministic verifier, "mee" and "knl" an LLM pass each), and how the model's
    # own differential (the "propose" call) is fused with the knowledge-based rankings
    llm_agents: list[Literal["propose", "alternatives", "mee", "hyde", "knl", "generate", "verify"]] = Field(
        default_factory=lambda: ["propose", "alternatives"])
    # the proposal's prompt: "differential" (presentation + extracted findings, names and short reasons) or "direct"
    # (the model-alone baseline's own request and answer, reused as the proposal). Defaults chosen on the dev halves
    # with Qwen2.5-Coder-1.5B (docs/results.md, "The LLM path"): the direct prompt as the one proposal call, the
    # deterministic generator ranking with the evidence, model_weight 1.5 (2 >= 4 >= 8 on every dev set; with the
    # cardinal-findings table the knowledge-based ranking is stronger and 1.5 beat 1 and 2 on the dev halves)
    propose_prompt: Literal["differential", "direct"] = "direct"
    # diagnoses the model-alone request (``--mode direct``, and the "direct" proposal) asks for at least (up to
    # differential_k; 1: "at most differential_k", which a small model answers with one)
    direct_min_diagnoses: int = Field(1, ge=1, le=20)
    model_weight: float = Field(1.5, ge=0.0, le=20.0)       # the proposal ranking's weight (KG ranking = 1)
    # "alternatives" in llm_agents: a second call asks the model for diagnoses beside its first answer (2 to
    # alternatives_k); they join the rank fusion with this weight, at their rank after the first answer's (on by
    # default and weight 1 chosen on the dev halves with Qwen2.5-Coder-1.5B among 0.25, 0.5, 1, 1.5 and off)
    alternatives_k: int = Field(4, ge=1, le=10)
    alternative_weight: float = Field(1.0, ge=0.0, le=20.0)
    generator_weight: float = Field(1.0, ge=0.0, le=20.0)   # the generator's own ordering, fused after it answers
    # the model's first choice stays first when a knowledge ranking also puts it within this rank and no expected
    # finding is missing (0: fused like every candidate; agents/hki.py keep_model_first)
    model_first_support: int = Field(0, ge=0, le=100)
    contradiction_penalty: float = Field(0.35, ge=0.0, le=1.0)  # score factor lost per finding a candidate
    #                                                           expects and the patient does not have
    recursion_limit: int = 50
    # diagnostic confidence (agents/confidence.py): escalate when the leading candidates explain few findings, or
    # when the calibrated probability that the top candidate is the diagnosis is under a floor (0: never)
    explained_top_n: int = Field(3, ge=1, le=20)           # how many leading differential items are counted
    min_explained_findings: float = Field(0.5, ge=0.0, le=1.0)   # share of the current findings they must explain
    min_top_confidence: float = Field(0.05, ge=0.0, le=1.0)   # calibrated P(top candidate is right): 1 in 20

    @field_validator("sources")
    @classmethod
    def _nonempty(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("at least one source (G, B, O) is required")
        return sorted(set(v), key="GBO".index)

    def digest(self) -> str:
        blob = json.dumps(self.model_dump(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

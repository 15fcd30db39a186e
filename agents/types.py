"""Typed records shared by the agents (pydantic v2)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Category = Literal["symptom", "disease", "drug", "test", "anatomy", "demographic"]
SourceRole = Literal["G", "B", "O"]
Verdict = Literal["SUPPORTED", "CONTRADICTED", "INSUFFICIENT"]


class Entity(BaseModel):
    """A medical entity mentioned in the presentation (paper Eq. 1: (e_i, c_i))."""

    text: str
    category: Category
    start: int = -1
    end: int = -1
    concept_id: str | None = None      # KG concept id (DOID:…, SYMP:…, HP:…, DB…, UBERON:…)
    concept_name: str | None = None
    link_score: float = 0.0
    negated: bool = False
    historical: bool = False
    family: bool = False
    hypothetical: bool = False
    uncertain: bool = False            # hedged ("possible", "suspicious for"): ConText's possible existence
    section: str | None = None
    origin: Literal["rules", "llm", "both"] = "rules"
    measured: bool = False             # read from a measured value (a vital sign, a laboratory number)

    @property
    def positive(self) -> bool:
        """Said of the patient and not denied: not negated, not a relative's, not hypothetical (past history
        included: it is context for retrieval)."""
        return not (self.negated or self.family or self.hypothetical)

    @property
    def current(self) -> bool:
        """A positive mention that belongs to the present illness, i.e. not past history. Only these are findings
        for the differential: a disease the patient had (or has) as history is not what the presentation is
        about."""
        return self.positive and not self.historical


class Duration(BaseModel):
    text: str
    days: float
    start: int = -1
    end: int = -1


class Place(BaseModel):
    """A place the presentation says the patient has been in or comes from ("back from Thailand"), with the broad
    world regions it lies in (``knowledge.kg.endemic.REGIONS``)."""

    text: str
    start: int = -1
    end: int = -1
    regions: list[str] = Field(default_factory=list)


class Extraction(BaseModel):
    """MEE output."""

    entities: list[Entity] = Field(default_factory=list)
    age_years: float | None = None
    sex: Literal["female", "male"] | None = None
    durations: list[Duration] = Field(default_factory=list)
    # how long the presenting complaints have lasted: "acute" (every stated duration of the illness is 14 days or
    # less), "chronic" (one is 8 weeks or more), None (not said, or in between); see agents.mee.demographics
    course: Literal["acute", "chronic"] | None = None
    places: list[Place] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def regions(self) -> list[str]:
        """The world regions of every place the patient has been in or comes from (sorted; [] when none is said)."""
        return sorted({r for p in self.places for r in p.regions})

    def positive(self) -> list[Entity]:
        """Positive clinical entities, past history included (see :attr:`Entity.positive`)."""
        return [e for e in self.entities if e.positive and e.category != "demographic"]

    def current(self) -> list[Entity]:
        """Positive clinical entities of the present illness (past history left out)."""
        return [e for e in self.entities if e.current and e.category != "demographic"]

    def negated(self) -> list[Entity]:
        return [e for e in self.entities if e.negated]

    def capped(self, max_entities: int) -> tuple["Extraction", str | None]:
        """At most ``max_entities`` clinical entities (the first ones as the extractor lists them, i.e. in text
        order; demographics are always kept), and a warning when some were dropped. Caps the retrieval work of
        one run."""
        clinical = [e for e in self.entities if e.category != "demographic"]
        if len(clinical) <= max_entities:
            return self, None
        keep = {id(e) for e in clinical[:max_entities]}
        kept = [e for e in self.entities if e.category == "demographic" or id(e) in keep]
        note = (f"the presentation mentions {len(clinical)} clinical entities; only the first {max_entities} "
                "are used (max_entities)")
        return self.model_copy(update={"entities": kept}), note


class Evidence(BaseModel):
    """One piece of retrieved knowledge with a stable id (paper Eq. 3: an element of K)."""

    id: str                              # stable: "G:DOID:2841|has_symptom|SYMP:0000xxx", "B:0000123-2#0"
    role: SourceRole
    kind: Literal["triple", "chunk", "concept"]
    text: str                            # the knowledge piece as stored (triple rendered, chunk text)
    score: float = 0.0
    query: str | None = None             # the entity / query that retrieved it
    title: str | None = None
    url: str | None = None
    organisation: str | None = None
    license: str | None = None
    source: str | None = None            # source name (e.g. "Disease Ontology", "MedQuAD/GARD")
    doc_id: str | None = None
    span: tuple[int, int] | None = None  # character span into the source document text
    concept_ids: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class Candidate(BaseModel):
    """A disease in the KG differential with its explanation path."""

    concept_id: str
    name: str
    score: float
    matched: list[str] = Field(default_factory=list)       # finding concept ids that support it
    contradicted: list[str] = Field(default_factory=list)  # findings it expects: negated, or the opposite present
    supporting: list[str] = Field(default_factory=list)    # evidence ids (triples)
    contradicting: list[str] = Field(default_factory=list)
    explanation: str = ""
    origins: list[str] = Field(default_factory=list)   # who put it forward: kg, text, page, site, sign, model
    ranks: dict[str, int] = Field(default_factory=dict)      # its rank in each fused ranking (same keys)
    demoted: str = ""                                        # why it was moved down (evidence against it)
    knowledge_score: float = 0.0     # the fused score without the language model's part (the knowledge-based rank)
    model_reason: str = ""           # the model's reason, when it proposed the disease (not checked)
    subtype_of: str = ""             # the parent disease it was named before (subtypes.name_subtypes_first): not a rival
    # how it relates to a disease ranked before it ("a broader term for hemorrhagic stroke"; subtypes.mark_relatives)
    relative_of: str = ""
    # with folding, the other names, kinds and broader terms folded into it: id -> "stroke (a broader term)"
    also: dict[str, str] = Field(default_factory=dict)
    # a condition the patient is known to have ("a known condition of the patient (type 1 diabetes)";
    # subtypes.demote_known): context of the present illness rather than its diagnosis
    known_condition: str = ""


class Sentence(BaseModel):
    """KNL output: a natural-language sentence tied to one evidence id (paper Eq. 4)."""

    evidence_id: str
    text: str                            # template sentence T(k_i) (for chunks: the quoted sentences)
    generated: str | None = None         # LLM sentence G(k_i), when an LLM is present
    span: tuple[int, int] | None = None  # for chunks: span of the quoted sentences in the document
    lead: str | None = None              # for chunks: "<source> on <topic> (<section>)"

    @property
    def full(self) -> str:
        head = f"{self.lead}: {self.text}" if self.lead else self.text
        return f"{head} {self.generated}".strip() if self.generated else head


class DifferentialItem(BaseModel):
    rank: int
    diagnosis: str
    concept_id: str | None = None
    likelihood: Literal["high", "moderate", "low"] = "moderate"
    rationale: str = ""
    citations: list[str] = Field(default_factory=list)
    origins: list[str] = Field(default_factory=list)   # "model", "kg", "text", "page", "site", "sign": who proposed it
    support: str = ""        # after verification: "supported", "partly supported", "not supported", "no evidence"
    note: str = ""           # e.g. why it was demoted, or "model only, no evidence"


class ProposedDiagnosis(BaseModel):
    """One diagnosis the language model proposed before retrieval, linked to the KG where its name resolves."""

    rank: int
    name: str
    reason: str = ""
    concept_id: str | None = None        # KG disease id (None: the KG does not know the name)
    concept_name: str | None = None
    alternative: bool = False            # named in the second, widening call (not the model's own first answer)


class Disagreement(BaseModel):
    """The model's first choice and the knowledge-based ranking's first choice differ."""

    model_first: str
    model_concept_id: str | None = None
    model_evidence: list[str] = Field(default_factory=list)     # evidence ids about the model's choice
    kg_first: str
    kg_concept_id: str | None = None
    kg_evidence: list[str] = Field(default_factory=list)
    final_first: str = ""


class MustNotMissItem(BaseModel):
    """A dangerous diagnosis compatible with the findings (the "must not miss" line beside the differential), from
    the curated rules in ``agents/data/must_not_miss.yaml``. Listed whether or not the differential has it."""

    concept_id: str                      # KG id of the diagnosis (a Disease Ontology id where DO has the disease)
    name: str                            # as shown ("aortic dissection")
    reason: str                          # why it must be excluded here (from the most specific rule that fired)
    triggers: list[str] = Field(default_factory=list)      # the findings as written ("chest pain")
    trigger_ids: list[str] = Field(default_factory=list)   # their concept ids
    conditions: list[str] = Field(default_factory=list)    # rule conditions the presentation does not settle
    citation: str = ""                   # the published source(s) of the rule(s), "; "-joined
    rules: list[str] = Field(default_factory=list)         # ids of the rules that fired
    in_differential: bool = False
    rank: int | None = None              # its rank in the differential, when it is there
    ruled_out: str | None = None         # a stated result that excludes it ('a negative pregnancy test ("...")')


class Draft(BaseModel):
    """Generator output."""

    differential: list[DifferentialItem] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    text: str = ""                       # the answer with inline [evidence_id] citations
    insufficient: bool = False
    origin: Literal["llm", "extractive", "direct"] = "extractive"
    disagreement: Disagreement | None = None   # the model's first choice vs the knowledge-based ranking's


class ClaimCheck(BaseModel):
    claim: str
    citations: list[str] = Field(default_factory=list)
    verdict: Verdict = "INSUFFICIENT"
    confidence: float = 0.0
    method: str = "deterministic"
    note: str = ""


class Verification(BaseModel):
    claims: list[ClaimCheck] = Field(default_factory=list)
    fabricated_citations: list[str] = Field(default_factory=list)
    passed: bool = False
    supported_ratio: float = 0.0
    reasons: list[str] = Field(default_factory=list)
    cleaned_text: str = ""               # the answer with fabricated citations removed
    cleaned_draft: Draft | None = None   # the draft with fabricated citations removed everywhere
    notes: list[str] = Field(default_factory=list)  # informational (not failures): removed citations, fallbacks


class Reference(BaseModel):
    n: int
    evidence_ids: list[str]
    source: str
    title: str
    organisation: str | None = None
    url: str | None = None
    license: str | None = None
    span: tuple[int, int] | None = None
    score: float = 0.0

    def format(self) -> str:
        parts = [f"[{self.n}] {self.title}", self.source]
        if self.organisation and self.source not in (self.organisation, f"MedQuAD/{self.organisation}"):
            parts.append(self.organisation)
        if self.span:
            parts.append(f"chars {self.span[0]}-{self.span[1]}")
        if self.url:
            parts.append(self.url)
        if self.license:
            parts.append(f"license: {self.license}")
        return ". ".join(parts) + "."

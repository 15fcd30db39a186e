"""A tiny hand-written turn for unit tests: a presentation, its extraction, evidence (KG triples, a definition, a
reference chunk) and the KG candidates. Real agent types, no data."""
from __future__ import annotations

from agents.hki import RetrievalParams
from agents.types import Candidate, Entity, Evidence, Extraction

PRESENTATION = "19-year-old man with recurrent wheezing and cough at night. No fever."
WHEEZE = "G:DOID:2841|has_symptom|SYMP:0000604"
COUGH = "G:DOID:2841|has_symptom|SYMP:0000614"
DEFINITION = "G:DOID:2841#definition"
CHUNK = "B:0000010_1#0"


def _triple(eid: str, obj: str, score: float) -> Evidence:
    sid, rel, oid = eid[2:].split("|")
    return Evidence(id=eid, role="G", kind="triple", text=f"Asthma can present with {obj}.", score=score,
                    title=f"asthma — has symptom — {obj}", source="Disease Ontology (disease–symptom)",
                    concept_ids=[sid, oid], meta={"relation": rel, "subject_name": "asthma", "object_name": obj})


def asthma_state() -> dict:
    extraction = Extraction(entities=[
        Entity(text="wheezing", category="symptom", start=31, end=39, concept_id="SYMP:0000604",
               concept_name="wheezing", link_score=1.0),
        Entity(text="cough", category="symptom", start=44, end=49, concept_id="SYMP:0000614", concept_name="cough",
               link_score=1.0),
        Entity(text="fever", category="symptom", start=63, end=68, concept_id="SYMP:0000613", concept_name="fever",
               negated=True, link_score=1.0),
    ], age_years=19, sex="male")
    evidence = [
        _triple(WHEEZE, "wheezing", 0.95),
        _triple(COUGH, "cough", 0.9),
        Evidence(id=DEFINITION, role="G", kind="concept", score=0.85, title="asthma",
                 text="A bronchial disease characterized by airway inflammation and recurrent wheezing.",
                 concept_ids=["DOID:2841"], meta={"category": "disease", "focus": "asthma"}),
        Evidence(id=CHUNK, role="B", kind="chunk", score=0.8, title="Asthma", organisation="NHLBI",
                 source="MedQuAD/NHLBI", doc_id="0000010_1", span=(0, 120), concept_ids=["DOID:2841"],
                 text="Asthma causes recurring periods of wheezing, chest tightness, shortness of breath and "
                      "coughing, often at night.",
                 meta={"focus": "asthma", "section": "symptoms"}),
    ]
    candidates = [Candidate(concept_id="DOID:2841", name="asthma", score=1.0, matched=["SYMP:0000604"],
                            supporting=[WHEEZE[2:], COUGH[2:]], explanation="wheezing, cough")]
    return {"message": PRESENTATION, "presentation": PRESENTATION, "history": [PRESENTATION],
            "extraction": extraction, "evidence": evidence, "candidates": candidates,
            "coverage": {"wheezing": [WHEEZE], "cough": [COUGH]}, "params": RetrievalParams(), "attempts": 0,
            "escalation": [], "warnings": [], "events": [], "started_at": 0.0}

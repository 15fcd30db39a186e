"""Knowledge in prose: Disease Ontology definitions without relation names, and question headings that are never
quoted or checked as claims. The strings are real ones (Disease Ontology definitions, MedQuAD answers)."""
from __future__ import annotations

import re

import pytest

from agents.generator import _cite_each
from agents.hki import chunk_evidence, concept_evidence
from agents.knl import DEFINITION_RELATIONS, prose_definition, template, triple_sentence
from agents.textutil import is_boilerplate, is_question
from agents.types import Evidence
from agents.verifier import split_claims

RELATION = re.compile(r"\b[a-z]+_[a-z_]+\b|\bhas (?:symptom|material basis)\b")

# (Disease Ontology id, definition as in the knowledge graph, the prose expected)
DEFINITIONS = [
    ("DOID:13189",
     "An arthritis that has_material_basis_in uric acid crystal deposits located_in joint.",
     "An arthritis caused by uric acid crystal deposits in the joint."),
    ("DOID:0040085",
     "A bacterial infectious disease has_material_basis_in Bacteria.",
     "A bacterial infectious disease caused by Bacteria."),
    ("DOID:0050517",
     ("A viral infectious disease that results_in infection located_in joint, has_material_basis_in Barmah Forest "
      "virus (Alphavirus barmah), which is transmitted_by mosquito bite. The infection has_symptom fever, has_symptom "
      "arthralgia, and has_symptom rash."),
     ("A viral infectious disease that results in infection in the joint, caused by Barmah Forest virus (Alphavirus "
      "barmah), which is transmitted by mosquito bite. The infection presents with fever, arthralgia, and rash.")),
    ("DOID:0050383",
     ("A tularemia that results_in bacteremia and has_symptom fever, has_symptom chills, has_symptom myalgia, "
      "has_symptom malaise, and has_symptom weight loss."),
     "A tularemia that results in bacteremia and presents with fever, chills, myalgia, malaise, and weight loss."),
    ("DOID:4007",
     ("A urinary bladder cancer that has_material_basis_in abnormally proliferating cells derives_from epithelial "
      "cells."),
     "A urinary bladder cancer made up of abnormally proliferating cells derived from epithelial cells."),
    ("DOID:5124",
     "A fallopian tube benign neoplasm that has_material_basis_in smooth muscle cells.",
     "A fallopian tube benign neoplasm made up of smooth muscle cells."),
    ("DOID:0040058",
     "An allergic contact dermatitis that has_allergic_trigger 1,4-phenylenediamine.",
     "An allergic contact dermatitis triggered by 1,4-phenylenediamine."),
    ("DOID:3011",
     "A breast cancer that is believed to arises_from Schwann cells.",
     "A breast cancer that is believed to arise from Schwann cells."),
    ("DOID:0080054",
     ("An achondrogenesis that results_in abnormal ossification of the located_in vertebral column or located_in "
      "spine."),
     "An achondrogenesis that results in abnormal ossification of the vertebral column or in the spine."),
    ("DOID:0060358",
     "It has_material_basis_in mutations in the ETFA, ETFB and ETFDH genes.",
     "It is caused by mutations in the ETFA, ETFB and ETFDH genes."),
    ("DOID:0061216",
     ("A paraganglioma characterized by the development of neuroendocrine tumors, usually in adulthood that has "
      "material_basis_in heterozygous mutation in the SDHD gene."),
     ("A paraganglioma characterized by the development of neuroendocrine tumors, usually in adulthood caused by "
      "heterozygous mutation in the SDHD gene.")),
    ("DOID:0110355",
     "A retinitis pigmentosa that has_material_basis_inhomozygous mutation in the CLCC1 gene on chromosome 1p13.",
     "A retinitis pigmentosa caused by homozygous mutation in the CLCC1 gene on chromosome 1p13."),
    ("DOID:1339",
     ("A pure red-cell aplasia that is characterized by anemia (low red blood cell counts) with decreased erythroid "
      "progenitors in the bone marrow and has_material_basis_insufficient levels of red blood cells due to bone "
      "marrow dysfunction."),
     ("A pure red-cell aplasia that is characterized by anemia (low red blood cell counts) with decreased erythroid "
      "progenitors in the bone marrow and is caused by insufficient levels of red blood cells due to bone marrow "
      "dysfunction.")),
    ("DOID:7632",
     ("A male reproductive organ cancer that has_material_basis_in abnormally proliferating cells derives_from "
      "epithelial cells and is_located_in the Cowper's gland."),
     ("A male reproductive organ cancer made up of abnormally proliferating cells derived from epithelial cells and "
      "is located in the Cowper's gland.")),
    ("DOID:6838",
     "A rete ovarii benign neoplasm that is derives_from epithelial and stromal cells.",
     "A rete ovarii benign neoplasm that is derived from epithelial and stromal cells."),
    ("DOID:4969",
     ("A nervous system disease that results_from damage located_in left parietal lobe, has_symptom agraphia, "
      "has_symptom acalculia, has_symptom finger agnosia."),
     ("A nervous system disease that results from damage in the left parietal lobe, presenting with agraphia, "
      "acalculia, finger agnosia.")),
    ("DOID:0060217",
     ("An eye disease characterized by variable iris atrophy, pigmented and pedunculated nodules located_in iris and "
      "attachment of the iris to the cornea (peripheral anterior synechiae) and characterized_by glaucoma."),
     ("An eye disease characterized by variable iris atrophy, pigmented and pedunculated nodules in the iris and "
      "attachment of the iris to the cornea (peripheral anterior synechiae) and characterized by glaucoma.")),
    ("DOID:0060182",
     "A colitis that can only be diagnosed_by the examination of colon tissue under a microscope.",
     "A colitis that can only be diagnosed by the examination of colon tissue under a microscope."),
    ("DOID:4022",
     ("A ureteral disease that is characterized_as a congenital anomaly in which the distal end of the ureter swells "
      "as it enters the bladder."),
     ("A ureteral disease that is characterized as a congenital anomaly in which the distal end of the ureter swells "
      "as it enters the bladder.")),
    ("DOID:1965",
     "A fallopian tube cancer that dervies_from smooth muscle cells.",
     "A fallopian tube cancer that derives from smooth muscle cells."),
    ("DOID:10264",
     ("A viral infectious disease that results in inflammation located in salivary gland, has_material_basis_in Mumps "
      "rubulavirus (Orthorubulavirus parotitidis). The infection has symptom fever, has symptom headache, has symptom "
      "muscle aches, has symptom tiredness, has symptom loss of appetite."),
     ("A viral infectious disease that results in inflammation located in salivary gland, caused by Mumps rubulavirus "
      "(Orthorubulavirus parotitidis). The infection presents with fever, headache, muscle aches, tiredness, loss of "
      "appetite.")),
    ("DOID:0070540",
     ("A mitochondrial metabolism disease characterized by a spectrum of phenotypes including delayed psychomotor "
      "development, neurodegeneration, increased lactic acid, brain lesions in the basal ganglia, and dystonia that "
      "has material basis in homozygous or compound heterozygous mutation in the ECHS1 gene."),
     ("A mitochondrial metabolism disease characterized by a spectrum of phenotypes including delayed psychomotor "
      "development, neurodegeneration, increased lactic acid, brain lesions in the basal ganglia, and dystonia caused "
      "by homozygous or compound heterozygous mutation in the ECHS1 gene.")),
    ("DOID:9965",
     ("Animals are infected by eating infected meat, by ingestion of feces of a cat that has itself recently been "
      "infected, or transmission_by mother to fetus."),
     ("Animals are infected by eating infected meat, by ingestion of feces of a cat that has itself recently been "
      "infected, or transmission from mother to fetus.")),
]


@pytest.mark.parametrize("doid, raw, expected", DEFINITIONS, ids=[d[0] for d in DEFINITIONS])
def test_definitions_read_as_prose(doid, raw, expected):
    out = prose_definition(raw)
    assert out == expected
    assert not RELATION.search(out)
    assert prose_definition(out) == out            # idempotent: evidence rewritten twice stays the same


def test_text_without_relation_names_is_unchanged():
    for text in ["", "A coronary artery disease characterized by myocardial cell death.", "IL-12 and TNF_alpha"]:
        assert prose_definition(text) == text


def test_an_unknown_relation_name_at_least_loses_its_underscores():
    assert prose_definition("A disease that has_onset_in childhood.") == "A disease that has onset in childhood."


def test_every_relation_of_the_definitions_has_a_prose_form():
    """The relation names the brief calls out, and the misspellings found in the graph's definitions."""
    for name in ["has_material_basis_in", "has_symptom", "located_in", "derives_from", "results_in", "transmitted_by",
                 "has_allergic_trigger", "results_in_formation_of", "composed_of", "develops_from", "arises_from",
                 "caused_by", "characterized_by", "results_from", "diagnosed_by", "characterized_as", "derive_from",
                 "dervies_from", "transmission_by"]:
        rel = DEFINITION_RELATIONS[name]
        assert "_" not in rel.finite + rel.participle + rel.base


def test_triples_with_other_relations_read_as_prose():
    assert triple_sentence("gout", "has_material_basis_in", "uric acid") == "Gout is caused by uric acid."
    assert triple_sentence("asthma", "has_symptom", "wheezing") == "Asthma can present with wheezing."
    assert not RELATION.search(triple_sentence("x", "some_new_relation", "y"))


def test_reference_titles_use_the_graph_verb_phrases_not_relation_names():
    from agents.krg import KRG

    ev = Evidence(id="G:HP:0009926|xref|SYMP:0000736", role="G", kind="triple", text="x", title="t",
                  meta={"relation": "xref", "subject_name": "Epiphora", "object_name": "excessive tearing"})
    refs, _ = KRG().references([ev])
    assert refs[0].title == "Epiphora: is equivalent to excessive tearing"


class _Concept:
    id = "DOID:13189"
    name = "gout"
    category = "disease"
    sources = ("do-humando",)
    definition = "An arthritis that has_material_basis_in uric acid crystal deposits located_in joint."


def test_definition_evidence_and_its_sentence_are_prose():
    ev = concept_evidence(_Concept(), 0.8)
    assert ev.text == "An arthritis caused by uric acid crystal deposits in the joint."
    assert template(ev).text == "gout: An arthritis caused by uric acid crystal deposits in the joint."
    # a KG card from the index (source G) is rewritten too; a reference page (B, O) is quoted as published
    card = {"chunk_id": "DOID:13189", "role": "G", "text": "gout. " + _Concept.definition, "metadata": {}}
    assert chunk_evidence(card, 0.5).text == "gout. An arthritis caused by uric acid crystal deposits in the joint."
    page = {"chunk_id": "x#0", "role": "B", "text": "It has_symptom nothing.", "metadata": {}}
    assert chunk_evidence(page, 0.5).text == "It has_symptom nothing."


# ---- question headings -----------------------------------------------------------------------------------------

GARD = ("What are the signs and symptoms of Spinocerebellar ataxia 12? The Human Phenotype Ontology provides the "
        "following list of signs and symptoms for Spinocerebellar ataxia 12. If the information is available, the "
        "table below includes how often the symptom is seen in people with this condition.")


@pytest.mark.parametrize("sentence", [
    "What are the signs and symptoms of Spinocerebellar ataxia 12?",
    "How is prothrombin thrombophilia inherited?",
    "- Why am I taking this medicine?",
    "Is the Disease Fatal?",
    "When Do Symptoms Occur?",
    "\"What is diabetes?\"",
    "But how would you know, for example, whether you have proteinuria?",
    "For example, even with your regular glasses, do you have difficulty - recognizing faces of friends and relatives?",
])
def test_questions(sentence):
    assert is_question(sentence)


@pytest.mark.parametrize("sentence", [
    "The Human Phenotype Ontology provides the following list of signs and symptoms for Spinocerebellar ataxia 12.",
    ("These resources address the diagnosis or management of ARVC: - Brigham and Women's Hospital - Cleveland Clinic: "
     "How Are Arrhythmias Treated?"),
    "More information on COPD is available at: What is COPD?",
    "Asthma can present with wheezing.",
    "",
])
def test_statements(sentence):
    assert not is_question(sentence)


def _gard_chunk(text: str = GARD) -> Evidence:
    return Evidence(id="B:GARD_0000001-2#0", role="B", kind="chunk", text=text, span=(0, len(text)),
                    organisation="GARD", meta={"focus": "Spinocerebellar ataxia 12", "section": "symptoms"})


STATEMENT = "Signs and symptoms include hoarseness, cough, and odynophagia."   # an NCIt definition's sentence


def test_a_question_heading_and_page_furniture_are_not_quoted_but_the_lead_still_names_the_page():
    text = f"{GARD} {STATEMENT}"
    s = template(_gard_chunk(text), {"symptom", "ataxia", "cough"}, max_sentences=2)
    assert s.text == STATEMENT
    assert s.lead == "GARD on Spinocerebellar ataxia 12 (symptoms)"
    assert s.span[0] == text.index(STATEMENT)          # the quote's span starts after the heading and furniture
    only = template(_gard_chunk(), {"symptom", "ataxia"}, max_sentences=2)
    assert only.text == "" and only.lead             # a heading and furniture only: nothing to quote


@pytest.mark.parametrize("sentence, furniture", [
    ("The Human Phenotype Ontology provides the following list of signs and symptoms for Malaria.", True),
    ("If the information is available, the table below includes how often the symptom is seen in people with this "
     "condition.", True),
    ("You can use the MedlinePlus Medical Dictionary to look up the definitions for these medical terms.", True),
    ("To enlarge the video, click the brackets in the lower right-hand corner.", True),
    ("Much of this information comes from Orphanet, a European rare disease database.", True),
    ("The first number of the fraction is how many people had the symptom, and the second number is the total number "
     "of people who were examined in one study.", True),
    ("For example, a frequency of 25/25 means that in a study of 25 people all patients were found to have that "
     "symptom.", True),
    ("In these cases, the sign or symptom may be rare or common.", True),
    ("General information about clinical trials is available from the NCI website.", True),
    (STATEMENT, False),
    ("The frequency of attacks rises in winter.", False),
    ("The Human Phenotype Ontology lists ataxia for this condition.", False),
])
def test_page_furniture(sentence, furniture):
    assert is_boilerplate(sentence) is furniture


def test_a_passage_of_questions_only_has_nothing_to_quote():
    s = template(_gard_chunk("What is diabetes? Why take care of your diabetes?"))
    assert s.text == "" and s.lead


def test_a_question_is_never_a_claim():
    known = {"B:GARD_0000001-2#0"}
    text = ("- What are the signs and symptoms of Spinocerebellar ataxia 12? [B:GARD_0000001-2#0] The Human Phenotype "
            "Ontology provides the following list of signs and symptoms for Spinocerebellar ataxia 12. "
            "[B:GARD_0000001-2#0]")
    claims, skipped = split_claims(text, known)
    assert [c.clean for c in claims] == [
        "The Human Phenotype Ontology provides the following list of signs and symptoms for Spinocerebellar ataxia 12."]
    assert skipped == ["question: What are the signs and symptoms of Spinocerebellar ataxia 12?"]


def test_the_extractive_answer_cites_statements_only():
    assert _cite_each(f"{GARD} {STATEMENT}", "[B:x#0]") == f"{STATEMENT} [B:x#0]"


def test_space_split_relation_names_are_mended():
    """Seen in the Disease Ontology: "has _symptom" (a stray space before the underscore)."""
    out = prose_definition("A viral infectious disease. The infection has _symptom fever, muscle pain and cough.")
    assert "_" not in out and "presents with fever, muscle pain and cough" in out


# the NHLBI bronchitis page's symptoms answer (MedQuAD NHLBI_0000021-5), as the index holds it
NHLBI_BRONCHITIS = (
    "Acute Bronchitis\n\nAcute bronchitis caused by an infection usually develops after you already have a cold or the "
    "flu. Symptoms of a cold or the flu include sore throat, fatigue (tiredness), fever, body aches, stuffy or runny "
    "nose, vomiting, and diarrhea.\n\nThe main symptom of acute bronchitis is a persistent cough, which may last 10 to "
    "20 days. The cough may produce clear mucus (a slimy substance). If the mucus is yellow or green, you may have a "
    "bacterial infection as well. Even after the infection clears up, you may still have a dry cough for days or "
    "weeks.\n\nOther symptoms of acute bronchitis include wheezing (a whistling or squeaky sound when you breathe), low "
    "fever, and chest tightness or pain.")


def test_a_sentence_listing_another_conditions_signs_is_not_quoted_for_the_pages_disease():
    """The bronchitis page lists the signs of a cold or the flu: they are no evidence of bronchitis, however well they
    match the presentation; the page's own symptom sentences are quoted instead. On the flu's own page, or for a
    query about a cold, the sentence is the topic's."""
    def chunk(focus):
        return Evidence(id="B:NHLBI_0000021-5#0", role="B", kind="chunk", text=NHLBI_BRONCHITIS,
                        span=(0, len(NHLBI_BRONCHITIS)), organisation="NHLBI",
                        meta={"focus": focus, "section": "symptoms"})

    query = {"fever", "cough", "bodi", "ach", "fatigu", "sore", "throat", "dry", "body", "aches"}
    s = template(chunk("Bronchitis"), query, max_sentences=2)
    assert "cold or the flu include" not in s.text and "dry cough" in s.text
    assert s.lead == "NHLBI on Bronchitis (symptoms)"
    assert "cold or the flu include" in template(chunk("Common cold"), query, max_sentences=2).text

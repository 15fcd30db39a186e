"""DDXPlus rendering and the MedQA diagnosis-question rule on hand-made inputs (no data)."""
from __future__ import annotations

import pytest

from clinicalrag.bench.datasets import is_diagnosis_question, question_sentence
from clinicalrag.bench.ddxplus import Evidence, Renderer, demographics, parse_features, places, statement

PLACES = {"V_123": "nowhere", "V_20": "tonsil(R)", "V_21": "tonsil(L)", "V_33": "thyroid cartilage",
          "V_67": "finger (index)(R)", "V_163": "under the jaw"}


def ev(code, question, data_type="B", antecedent=False, parent=None, default=None, values=None):
    return Evidence(code, question, data_type, antecedent, parent, default, values or {})


TABLE = {e.code: e for e in [
    ev("E_53", "Do you have pain somewhere, related to your reason for consulting?", default="0"),
    ev("E_54", "Characterize your pain:", "M", parent="E_53", default="V_11",
       values={"V_11": "NA", "V_161": "sensitive", "V_183": "heavy", "V_179": "a knife stroke"}),
    ev("E_55", "Do you feel pain somewhere?", "M", parent="E_53", default="V_123", values=PLACES),
    ev("E_56", "How intense is the pain?", "C", parent="E_53", default="0"),
    ev("E_57", "Does the pain radiate to another location?", "M", parent="E_53", default="V_123", values=PLACES),
    ev("E_91", "Do you have a fever (either felt or measured with a thermometer)?"),
    ev("E_79", "Do you smoke cigarettes?", antecedent=True),
    ev("E_201", "Do you have a cough?"),
    ev("E_204", "Have you traveled out of the country in the last 4 weeks?", "M", antecedent=True,
       default="V_10", values={"V_10": "N", "V_4": "North America", "V_8": "Caraibes"}),
]}


@pytest.mark.parametrize("question, expected", [
    ("Do you have a fever (either felt or measured with a thermometer)?",
     "fever (either felt or measured with a thermometer)"),
    ("Have you ever had a pericarditis?", "history of pericarditis"),
    ("Have you recently had a viral infection?", "recent viral infection"),
    ("Have you been diagnosed with hyperthyroidism?", "known hyperthyroidism"),
    ("Do you regularly drink coffee or tea?", "regularly drinks coffee or tea"),
    ("Do you currently undergo dialysis?", "currently undergoes dialysis"),
    ("Do you live in in a big city?", "lives in a big city"),
    ("Are you a former smoker?", "former smoker"),
    ("Is your skin much paler than usual?", "skin much paler than usual"),
    ("Have you been in contact with a person with similar symptoms in the past 2 weeks?",
     "contact with a person with similar symptoms in the past 2 weeks"),
    ("Do you have any family members who have been diagnosed with anemia?", "family history of anemia"),
    ("Are there any members of your family who have been diagnosed myasthenia gravis?",
     "family history of myasthenia gravis"),
    ("Do you suffer from Crohn\u2019s disease or ulcerative colitis (UC)?",
     "Crohn's disease or ulcerative colitis (UC)"),
    ("Have you noticed any unusual bleeding or bruising related to your consultation today?",
     "unusual bleeding or bruising related to the current complaint"),
])
def test_questions_become_statements(question, expected):
    assert statement(ev("E_999", question)) == expected


def test_places_merge_sides_and_rename():
    assert places(["tonsil(R)", "thyroid cartilage", "tonsil(L)"]) == ["the right and left tonsil",
                                                                       "the thyroid cartilage"]
    assert places(["finger (index)(R)", "under the jaw", "palace"]) == ["the right index finger",
                                                                        "the area under the jaw", "the palate"]


@pytest.mark.parametrize("age, sex, expected", [
    (31, "M", "A 31-year-old man."), (8, "F", "An 8-year-old girl."), (18, "F", "An 18-year-old woman."),
    (11, "M", "An 11-year-old boy."), (83, "M", "An 83-year-old man."), (0, "F", "A baby girl under 1 year old.")])
def test_demographics(age, sex, expected):
    assert demographics(age, sex) == expected


def test_parse_features():
    assert parse_features(["E_53", "E_54_@_V_179", "E_56_@_7"]) == [("E_53", None), ("E_54", "V_179"),
                                                                      ("E_56", "7")]


def test_a_patient_reads_in_order_with_defaults_left_out():
    r = Renderer(TABLE)
    text = r.render(31, "M", "E_91", ["E_53", "E_54_@_V_161", "E_54_@_V_11", "E_55_@_V_20", "E_55_@_V_21",
                                      "E_55_@_V_33", "E_56_@_7", "E_57_@_V_123", "E_79", "E_91", "E_201",
                                      "E_204_@_V_10"])
    assert text.splitlines() == [
        "A 31-year-old man. Chief complaint: fever (either felt or measured with a thermometer).",
        "Pain (tender) in the right and left tonsil and the thyroid cartilage; intensity 7/10. Cough.",
        "History: smokes cigarettes.",
    ]
    text = r.render(40, "F", "E_53", ["E_53", "E_54_@_V_179", "E_57_@_V_67", "E_56_@_0", "E_204_@_V_8"])
    assert text.splitlines() == [
        "A 40-year-old woman. Chief complaint: pain (stabbing) radiating to the right index finger.",
        "History: traveled out of the country in the last 4 weeks: the Caribbean.",
    ]
    with pytest.raises(ValueError, match="unknown evidence code 'E_1000'"):
        r.render(40, "F", "E_91", ["E_1000"])


@pytest.mark.parametrize("stem, keep", [
    ("A man has a rash. Which of the following is the most likely diagnosis?", True),
    ("A man has a rash. What is the most likely diagnosis in this patient?", True),
    ("Labs show:\nSodium 120 mEq/L\nWhich of the following is the most likely diagnosis?\"", True),
    ("A woman faints. What is the patient\u2019s most likely diagnosis?", True),
    ("A boy wheezes. Which of the following diagnoses is most likely in this patient?", True),
    ("A girl limps. The findings are most consistent with which diagnosis?", True),
    ("A rash. This patient's presentation can best be explained by which of the following diagnoses?", True),
    ("Results: X. According to these results, what is the most likely diagnosis?", True),
    ("A man has a rash. Which of the following is most likely to confirm the diagnosis?", False),
    ("A man has a rash. Which of the following is the best treatment for this patient's most likely diagnosis?",
     False),
    ("A man has a rash. Which of the following is associated with the most likely diagnosis?", False),
    ("A man has a rash. Which of the following is the most likely cause of this patient's symptoms?", False),
    ("Which of the following is the most likely diagnosis? He then asks about treatment options.", False),
])
def test_medqa_diagnosis_rule(stem, keep):
    assert is_diagnosis_question(stem) is keep


def test_question_sentence():
    assert question_sentence("A 3-year-old boy. Temp 38.5\u00b0C.\n\nWhat is it?\"\n") == "What is it?"

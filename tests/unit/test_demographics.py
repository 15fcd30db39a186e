"""agents.mee.demographics: age, sex and durations from free text."""
from __future__ import annotations

import pytest

from agents.mee import find_age_sex, find_durations
from agents.mee.demographics import illness_course
from agents.types import Entity


@pytest.mark.parametrize("text,age,sex", [
    ("A 34-year-old woman with fever", 34, "female"),
    ("62 y/o F with dizziness", 62, "female"),
    ("M/58, chest pain", 58, "male"),
    ("a 6-week-old infant, she feeds poorly", 6 * 7 / 365, "female"),
    ("18 month old boy", 1.5, "male"),
    ("Age: 71. He reports cough.", 71, "male"),
    ("She has had a cough", None, "female"),
    ("The man's wife says he is confused", None, "male"),      # the first strong word wins over pronouns
    ("His mother, a woman of 80", None, "female"),              # "woman" is strong; "his" is not
    ("250-year-old tree", None, None),                          # impossible ages are ignored
    ("Food sticks when I swallow. I am 67 and smoked for 40 years.", 67, None),   # an age in the patient's words
    ("I'm 45, and my knees hurt", 45, None),
    ("She is 3. She has a rash", 3, "female"),
    ("I am 5 days into a cough", None, None),                   # a number that is no age
])
def test_age_and_sex(text, age, sex):
    got_age, got_sex, _ = find_age_sex(text)
    assert got_sex == sex
    assert (got_age is None and age is None) or got_age == pytest.approx(age, abs=1e-3)


def test_spans_point_at_the_words():
    text = "Patient is a 45 yo gentleman with cough"
    _, _, spans = find_age_sex(text)
    assert [text[s:e] for s, e in spans] == ["45 yo", "gentleman"]


@pytest.mark.parametrize("text,expected", [
    ("fever for 3 days and cough for two weeks", [("for 3 days", 3.0), ("for two weeks", 14.0)]),
    ("headache x 6h", [("x 6h", 0.25)]),
    ("diarrhoea over the past week", [("over the past week", 7.0)]),
    ("chest pain for 30 minutes", [("for 30 minutes", 30 / 1440)]),
    ("5 days ago he fell", [("5 days ago", 5.0)]),
    ("seen last year at d 3", []),
    # clinical shorthand: N/7 days, N/52 weeks, N/12 months, N/24 hours
    ("25F, 2/7 burning on micturition", [("2/7", 2.0)]),
    ("productive cough 3/52, weight loss 6/12", [("3/52", 21.0), ("6/12", 180.0)]),
    ("chest pain 4/24", [("4/24", 4 / 24)]),
    # ... and not a pressure, a score, a date or "all the time"
    ("BP 120/80, power 4/5, GCS 14/15, seen 1/12/2024, carer 24/7", []),
])
def test_durations(text, expected):
    got = [(d.text, d.days) for d in find_durations(text)]
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert [d for _, d in got] == pytest.approx([d for _, d in expected], abs=1e-4)


@pytest.mark.parametrize("text,course", [
    ("72M, 3 days of cough productive of rusty sputum, fevers and rigors.", "acute"),
    ("Since yesterday she has had fever and a sore throat.", "acute"),
    ("A 45-year-old woman has had fatigue and joint pain for 6 months.", "chronic"),
    ("Fever for 2 days; cough and weight loss over the past 3 months.", "chronic"),   # the longest illness wins
    ("A 60-year-old man who has smoked for 40 years has had a cough for 5 days.", "acute"),   # a habit is no illness
    ("At 32 weeks of gestation she has had a headache for 2 days.", "acute"),            # nor is a pregnancy
    ("Back from Ghana 3 months ago, she has had fever for 4 days.", "acute"),           # nor a journey
    ("Her last menstrual period was 16 years ago. Fever for 2 days.", "acute"),        # nor a last period
    ("He woke up with crushing chest pain.", "acute"),
    ("25F, 2/7 burning on micturition, suprapubic ache.", "acute"),                    # clinical shorthand
    ("I woke up this morning and found a rash all over my skin.", None),                # when it was seen, not began
    ("Cough for 12 hours. She underwent an abdominal hysterectomy 16 years ago.", "acute"),   # an event's date
    ("The cough began 3 months ago.", "chronic"),                                       # an illness's onset
    ("He has had a cough for 3 weeks.", None),                                          # in between
    ("I have a persistent cough and feel tired.", None),                                 # no duration said
    # a long-standing complaint added beside the presenting one is its background ...
    ("She has left lower quadrant pain. She also says she has suffered from constipation for the past few years.",
     None),
    ("Fever for 2 days. In addition, he has had back pain for 10 years.", "acute"),
    # ... a short one added is part of this illness, and a long one not marked as added is its course
    ("Cough for 3 months. She also has had a fever for 2 days.", "chronic"),
    ("She has suffered from constipation for the past few years.", "chronic"),
])
def test_the_course_of_the_illness_reads_how_long_its_complaints_have_lasted(text, course):
    assert illness_course(text, find_durations(text)) == course


def test_a_duration_that_dates_a_disease_of_the_history_is_not_the_illness():
    text = "A 65-year-old man with a 10-year history of hypertension presents with 2 days of chest pain."
    ents = [Entity(text=w, category=c, start=text.index(w), end=text.index(w) + len(w))
            for w, c in (("hypertension", "disease"), ("chest pain", "symptom"))]
    assert illness_course(text, find_durations(text), ents) == "acute"
    assert illness_course(text, find_durations(text), []) == "chronic"   # without the entities it cannot tell
    # a disease named later in the clause is no history of the duration: "every day for 2 years ... chest infections"
    text = "He has coughed up sputum every day for 2 years and has had several chest infections."
    ents = [Entity(text="chest infections", category="disease", start=text.index("chest infections"),
                   end=text.index("chest infections") + 16)]
    assert illness_course(text, find_durations(text), ents) == "chronic"
    # a disease just before "for": "type 2 diabetes for 15 years" dates the diabetes, not the fever of 3 days
    text = "A 62-year-old woman with type 2 diabetes for 15 years presents with 3 days of fever and flank pain."
    ents = [Entity(text=w, category=c, start=text.index(w), end=text.index(w) + len(w))
            for w, c in (("type 2 diabetes", "disease"), ("fever", "symptom"), ("flank pain", "symptom"))]
    assert illness_course(text, find_durations(text), ents) == "acute"
    # ... while a symptom there is this illness: "a cough for 3 months"
    text = "A 62-year-old woman with a cough for 3 months presents with 3 days of fever."
    ents = [Entity(text=w, category="symptom", start=text.index(w), end=text.index(w) + len(w))
            for w in ("cough", "fever")]
    assert illness_course(text, find_durations(text), ents) == "chronic"


def test_weight_lost_means_the_illness_is_not_acute():
    """Two weeks of dysphagia with 4 kg lost: the weight says the illness is older than the complaint dated, so the
    course is not called acute (no course); a denied or past weight loss leaves it acute."""
    text = "For two weeks swallowing has become hard, and I have lost 4 kg."

    def ents(**flags):
        return [Entity(text="swallowing has become hard", category="symptom", concept_name="dysphagia",
                       start=text.index("swallowing"), end=text.index("swallowing") + 26),
                Entity(text="lost 4 kg", category="symptom", concept_name="weight loss",
                       start=text.index("lost 4 kg"), end=text.index("lost 4 kg") + 9, **flags)]

    assert illness_course(text, find_durations(text), ents()) is None
    assert illness_course(text, find_durations(text), ents(negated=True)) == "acute"
    assert illness_course(text, find_durations(text), ents(historical=True)) == "acute"
    assert illness_course(text, find_durations(text), ents()[:1]) == "acute"

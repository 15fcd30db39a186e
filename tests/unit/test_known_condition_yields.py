"""A known condition yields first place to a complication of it that the findings describe (agents/subtypes.py
yield_to_fit), and to nothing else."""
from agents.subtypes import yield_to_fit
from agents.types import Candidate

T1DM, DKA, MIGRAINE, GASTRO = "DOID:9744", "DOID:1837", "DOID:6364", "DOID:2326"


def _list() -> list[Candidate]:
    return [Candidate(concept_id=T1DM, name="type 1 diabetes mellitus", score=0.6,
                      known_condition="a known condition of the patient (type 1 diabetes)"),
            Candidate(concept_id=GASTRO, name="gastroenteritis", score=0.1),
            Candidate(concept_id=MIGRAINE, name="migraine", score=0.05),
            Candidate(concept_id=DKA, name="diabetic ketoacidosis", score=0.04, explanation="matches acidosis")]


def test_the_complication_the_findings_fit_moves_before_the_known_condition():
    out = yield_to_fit(_list(), {T1DM: 7.5, DKA: 7.0, MIGRAINE: 5.0}, {DKA}, ratio=0.5)
    assert [c.concept_id for c in out] == [DKA, T1DM, GASTRO, MIGRAINE]
    assert out[0].score == 0.6 and out[1].score == 0.6          # it takes the known condition's score: still sorted
    assert out[0].explanation.startswith("matches acidosis; named before the known condition type 1 diabetes")


def test_a_disease_that_is_no_complication_never_moves_however_well_it_fits():
    out = yield_to_fit(_list(), {T1DM: 2.0, MIGRAINE: 9.0}, {DKA}, ratio=0.5)
    assert [c.concept_id for c in out] == [T1DM, GASTRO, MIGRAINE, DKA]


def test_a_complication_the_findings_fit_too_little_or_not_at_all_stays():
    assert yield_to_fit(_list(), {T1DM: 7.5, DKA: 3.0}, {DKA}, ratio=0.5)[0].concept_id == T1DM
    assert yield_to_fit(_list(), {T1DM: 7.5}, {DKA}, ratio=0.5)[0].concept_id == T1DM     # word search found it
    assert yield_to_fit(_list(), {T1DM: 7.5, DKA: 3.0}, {DKA}, ratio=0.4)[0].concept_id == DKA


def test_a_ruled_out_complication_stays_where_it_fell():
    cands = _list()
    cands[3] = cands[3].model_copy(update={"demoted": "ruled out by ketones negative"})
    assert yield_to_fit(cands, {T1DM: 7.5, DKA: 7.0}, {DKA})[0].concept_id == T1DM

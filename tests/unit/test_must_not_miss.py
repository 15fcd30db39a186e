"""The must-not-miss rule engine on a small in-memory knowledge graph (real :class:`KnowledgeGraph` look-ups over a
handful of concepts) and a small rule file; the graph node, the result, the audit record and the CLI line."""
from __future__ import annotations

import networkx as nx
import pytest
import yaml

from agents.curated import union_pattern
from agents.must_not_miss import MustNotMiss, MustNotMissError, load_rules
from agents.types import Candidate, DifferentialItem, Draft, Entity, Extraction, MustNotMissItem, Place
from clinicalrag.commands.ask import must_not_miss_lines, render
from graph import nodes
from graph.result import audit_record
from knowledge.kg.graph import KnowledgeGraph

CONCEPTS = {
    # id: (name, category, synonyms)
    "SYMP:1": ("chest pain", "symptom", []),
    "HP:1": ("Chest pain", "phenotype", []),
    "SYMP:2": ("pleuritic chest pain", "symptom", []),
    "SYMP:3": ("headache", "symptom", ["cephalalgia"]),
    "SYMP:4": ("back pain", "symptom", ["backache"]),
    "SYMP:5": ("abdominal pain", "symptom", []),
    "SYMP:6": ("fever", "symptom", []),
    "DOID:1": ("aortic dissection", "disease", []),
    "DOID:2": ("pulmonary embolism", "disease", []),
    "DOID:3": ("myocardial infarction", "disease", ["heart attack"]),
    "DOID:4": ("acute myocardial infarction", "disease", []),
    "DOID:5": ("temporal arteritis", "disease", ["giant cell arteritis"]),
    "DOID:6": ("ectopic pregnancy", "disease", []),
    "DOID:7": ("intermediate coronary syndrome", "disease", []),
    "HP:9": ("Anaphylactic shock", "phenotype", ["Anaphylaxis"]),
}
EDGES = [("SYMP:1", "HP:1", "xref"), ("HP:1", "SYMP:1", "xref"), ("SYMP:2", "SYMP:1", "is_a"),
         ("DOID:4", "DOID:3", "is_a")]

RULES = {"version": 1, "rules": [
    {"id": "chest-pain", "complaint": "chest pain", "findings": ["chest pain"],
     "reason": "acute chest pain", "citation": "Chest pain guideline 2021.",
     "diagnoses": [{"id": "DOID:3", "name": "myocardial infarction", "label": "acute coronary syndrome",
                    "also": ["DOID:7"]},
                   {"id": "DOID:2", "name": "pulmonary embolism"},
                   {"id": "DOID:1", "name": "aortic dissection"}]},
    {"id": "chest-and-back", "complaint": "chest pain with back pain", "findings": ["SYMP:1"], "with": ["backache"],
     "reason": "pain through to the back", "citation": "Aortic guideline 2022.",
     "diagnoses": [{"id": "DOID:1", "name": "aortic dissection"}]},
    {"id": "headache-over-50", "complaint": "headache after 50", "findings": ["cephalalgia"], "age_min": 50,
     "reason": "new headache after 50", "citation": "Arteritis guideline 2020.",
     "diagnoses": [{"id": "DOID:5", "name": "temporal arteritis", "label": "giant cell arteritis"}]},
    {"id": "abdominal-pain-woman", "complaint": "abdominal pain in a woman", "findings": ["abdominal pain"],
     "sex": "female", "age_min": 12, "age_max": 52, "reason": "childbearing age", "citation": "Ectopic guideline 2019.",
     "diagnoses": [{"id": "DOID:6", "name": "ectopic pregnancy",
                    "ruled_out_by": {"result": "a negative pregnancy test",
                                     "patterns": [r"pregnancy\s+test\s+(?:is\s+)?negative"]}}]},
    {"id": "anaphylaxis", "complaint": "x", "findings": ["fever"], "reason": "r", "citation": "c 2021.",
     "diagnoses": [{"id": "HP:9", "name": "Anaphylactic shock", "label": "anaphylaxis", "kg_category": "phenotype"}]},
]}


@pytest.fixture(scope="module")
def kg() -> KnowledgeGraph:
    g = nx.MultiDiGraph()
    for cid, (name, cat, syns) in CONCEPTS.items():
        g.add_node(cid, name=name, category=cat, synonyms=syns, synonym_scopes=["EXACT"] * len(syns), definition=None,
                   xrefs={}, sources=["test"])
    for u, v, rel in EDGES:
        g.add_edge(u, v, key=rel, relation=rel, source="test", license="CC0-1.0")
    return KnowledgeGraph(g, "test")


def _rules_file(tmp_path, data=RULES):
    p = tmp_path / "rules.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")
    return p


@pytest.fixture
def mnm(kg, tmp_path) -> MustNotMiss:
    m = MustNotMiss.from_kg(kg, _rules_file(tmp_path))
    assert m.problems == []
    return m


def _ex(*findings: tuple[str, str], age: float | None = None, sex: str | None = None, **flags) -> Extraction:
    ents = [Entity(text=t, category="symptom", concept_id=cid, **flags) for t, cid in findings]
    return Extraction(entities=ents, age_years=age, sex=sex)


def _names(items: list[MustNotMissItem]) -> list[str]:
    return [i.name for i in items]


def test_a_finding_fires_its_rule(mnm):
    items = mnm.check(_ex(("chest pain", "SYMP:1"), age=58, sex="male"))
    assert _names(items) == ["acute coronary syndrome", "pulmonary embolism", "aortic dissection"]
    ad = items[2]
    assert ad.concept_id == "DOID:1" and ad.triggers == ["chest pain"] and ad.trigger_ids == ["SYMP:1"]
    assert ad.reason == "acute chest pain" and ad.citation == "Chest pain guideline 2021."
    assert ad.rules == ["chest-pain"] and not ad.in_differential and ad.rank is None and ad.conditions == []


def test_findings_match_through_cross_references_and_parents(mnm):
    assert "aortic dissection" in _names(mnm.check(_ex(("chest pain", "HP:1"))))              # xref
    assert "aortic dissection" in _names(mnm.check(_ex(("pleuritic chest pain", "SYMP:2"))))  # is_a chest pain


@pytest.mark.parametrize("flag", ["negated", "historical", "family", "hypothetical"])
def test_findings_that_are_not_current_and_positive_fire_nothing(mnm, flag):
    assert mnm.check(_ex(("chest pain", "SYMP:1"), **{flag: True})) == []


def test_no_findings_no_items(mnm):
    assert mnm.check(None) == [] and mnm.check(Extraction()) == []
    assert mnm.check(Extraction(entities=[Entity(text="chest pain", category="symptom")])) == []   # no concept id


def test_a_second_finding_group_makes_a_rule_more_specific(mnm):
    items = mnm.check(_ex(("chest pain", "SYMP:1"), ("back pain", "SYMP:4"), age=58))
    first = items[0]
    assert first.name == "aortic dissection"                           # the more specific rule comes first
    assert first.rules == ["chest-pain", "chest-and-back"]
    assert first.triggers == ["chest pain", "back pain"] and first.reason == "pain through to the back"
    assert first.citation == "Aortic guideline 2022.; Chest pain guideline 2021."
    assert _names(items).count("aortic dissection") == 1               # one item per diagnosis


def test_age_and_sex_conditions(mnm):
    assert _names(mnm.check(_ex(("headache", "SYMP:3"), age=72))) == ["giant cell arteritis"]
    assert mnm.check(_ex(("headache", "SYMP:3"), age=25)) == []
    unknown = mnm.check(_ex(("headache", "SYMP:3")))
    assert _names(unknown) == ["giant cell arteritis"] and unknown[0].conditions == ["if age >= 50"]
    assert _names(mnm.check(_ex(("abdominal pain", "SYMP:5"), age=28, sex="female"))) == ["ectopic pregnancy"]
    assert mnm.check(_ex(("abdominal pain", "SYMP:5"), age=28, sex="male")) == []
    assert mnm.check(_ex(("abdominal pain", "SYMP:5"), age=70, sex="female")) == []
    who = mnm.check(_ex(("abdominal pain", "SYMP:5")))
    assert who[0].conditions == ["if age 12-52", "if female"]


def test_a_stated_result_that_excludes_a_diagnosis_marks_it_and_keeps_it_listed(mnm):
    ex = _ex(("abdominal pain", "SYMP:5"), ("chest pain", "SYMP:1"), age=28, sex="female")
    open_items = mnm.check(ex, text="Abdominal and chest pain.")
    assert open_items[0].name == "ectopic pregnancy" and open_items[0].ruled_out is None   # the most specific rule
    items = mnm.check(ex, text="Abdominal and chest pain. Urine pregnancy test is negative.")
    assert _names(items)[-1] == "ectopic pregnancy"                   # still listed, after the open items
    assert items[-1].ruled_out == 'a negative pregnancy test ("pregnancy test is negative")'
    assert all(i.ruled_out is None for i in items[:-1])
    assert mnm.check(ex, text="Pregnancy test is positive.")[0].ruled_out is None
    assert mnm.check(ex)[0].ruled_out is None                         # no text given: nothing is settled


def _cand(cid: str, name: str, score: float):
    return Candidate(concept_id=cid, name=name, score=score)


def test_a_stated_rule_out_moves_the_diagnosis_and_its_kinds_down_the_ranking(kg, tmp_path):
    rules = yaml.safe_load(yaml.safe_dump(RULES))
    rules["rules"][0]["diagnoses"][0]["ruled_out_by"] = {"result": "a normal angiogram",
                                                         "patterns": [r"\bnormal\s+coronary\s+angiogram"]}
    mnm = MustNotMiss.from_kg(kg, _rules_file(tmp_path, rules))
    ranked = [_cand("DOID:4", "acute myocardial infarction", 0.9), _cand("DOID:2", "pulmonary embolism", 0.5),
              _cand("DOID:7", "intermediate coronary syndrome", 0.4), _cand("model:pericarditis", "pericarditis", 0.3)]
    text = "Chest pain; a normal coronary angiogram yesterday."
    assert mnm.excluded(text) == {"DOID:3": 'a normal angiogram ("normal coronary angiogram")'}
    out = mnm.demote(ranked, text, 0.1)
    # the diagnosis's kind (is_a) and its other id (also) fall below the open ones, marked, never dropped
    assert [c.name for c in out] == ["pulmonary embolism", "pericarditis", "acute myocardial infarction",
                                     "intermediate coronary syndrome"]
    assert out[2].score == pytest.approx(0.09) and out[3].score == pytest.approx(0.04)
    assert out[2].demoted == 'ruled out by a normal angiogram ("normal coronary angiogram")'
    assert out[0].demoted == "" and out[0].score == 0.5
    # a settled diagnosis that fitted far better than the rest still goes after every open candidate
    strong = [_cand("DOID:3", "myocardial infarction", 0.95), _cand("DOID:2", "pulmonary embolism", 0.03)]
    assert [c.concept_id for c in mnm.demote(strong, text, 0.1)] == ["DOID:2", "DOID:3"]
    marked = mnm.demote(ranked, text, 1.0)                              # factor 1: marked only, order kept
    assert [c.concept_id for c in marked] == [c.concept_id for c in ranked] and marked[0].demoted
    assert mnm.demote(ranked, "Chest pain; an abnormal coronary angiogram.", 0.1) == ranked   # nothing settled
    # a result can exclude more than the item it is written for (also_excludes, with its kinds)
    rules["rules"][0]["diagnoses"][0]["ruled_out_by"]["also_excludes"] = ["DOID:2"]
    wider = MustNotMiss.from_kg(kg, _rules_file(tmp_path, rules))
    assert wider.problems == []
    out = wider.demote(ranked, text, 0.1)
    assert [c.name for c in out][:1] == ["pericarditis"] and out[1].demoted.startswith("ruled out by a normal angiogram")
    rules["rules"][0]["diagnoses"][0]["ruled_out_by"]["also_excludes"] = ["DOID:404"]
    assert any("DOID:404" in p for p in MustNotMiss.from_kg(kg, _rules_file(tmp_path, rules)).problems)
    assert mnm.demote(ranked, "", 0.1) == ranked


ECTOPIC, PE, DISSECTION, MENINGITIS, APPENDICITIS = "DOID:0060329", "DOID:9477", "DOID:0080685", "DOID:9470", "DOID:8337"
DKA, HHS, MALARIA = "DOID:1837", "MESH:D006944", "DOID:12365"


@pytest.mark.parametrize("dx, text, excluded", [
    (ECTOPIC, "Urine pregnancy test is negative.", True),
    (ECTOPIC, "urine pregnancy test negative", True),
    (ECTOPIC, "Serum beta-hCG: negative.", True),
    (ECTOPIC, "Her pregnancy test came back negative yesterday.", True),
    (ECTOPIC, "A negative urine pregnancy test.", True),
    (ECTOPIC, "negative β-hCG", True),
    (ECTOPIC, "Pregnancy test is positive.", False),
    (ECTOPIC, "Pregnancy test is not negative.", False),
    (ECTOPIC, "A pregnancy test is pending; ECG is negative for ischaemia.", False),
    (ECTOPIC, "BCG vaccination; tuberculin test negative.", False),
    (ECTOPIC, "She is not pregnant.", False),                          # a statement, not a test result
    (PE, "CTPA was negative.", True),
    (PE, "CT pulmonary angiogram showed no pulmonary embolism.", True),
    (PE, "A normal CTPA yesterday.", True),
    (PE, "CT pulmonary angiography: no filling defects.", True),
    (PE, "CTPA showed a saddle embolus.", False),
    (PE, "CTPA is planned; D-dimer negative.", False),                # a negative D-dimer alone does not settle it
    (PE, "CT head was normal.", False),
    (DISSECTION, "CT angiography of the chest showed no aortic dissection.", True),
    (DISSECTION, "A normal CT aortogram.", True),
    (DISSECTION, "Transoesophageal echocardiogram: no evidence of dissection.", True),
    (DISSECTION, "Aortic dissection was excluded.", True),
    (DISSECTION, "CT angiography shows a Stanford type A dissection.", False),
    (DISSECTION, "Chest X-ray: no dissection flap seen; CTPA was negative.", False),   # neither images the aorta well
    (DISSECTION, "CT is planned to look for a dissection.", False),
    (MENINGITIS, "CSF analysis was normal.", True),
    (MENINGITIS, "Lumbar puncture showed normal CSF.", True),
    (MENINGITIS, "A normal cerebrospinal fluid examination.", True),
    (MENINGITIS, "LP was unremarkable.", True),
    (MENINGITIS, "CSF shows 1,200 neutrophils and a low glucose.", False),
    (MENINGITIS, "CSF opening pressure was normal.", False),           # one value of the examination
    (MENINGITIS, "Normal CSF glucose, raised protein.", False),
    (MENINGITIS, "Lumbar puncture was deferred.", False),
    (APPENDICITIS, "CT shows a normal appendix.", True),
    (APPENDICITIS, "The appendix was normal on ultrasound.", True),
    (APPENDICITIS, "CT abdomen: no evidence of appendicitis.", True),
    (APPENDICITIS, "She had an appendicectomy at 12.", True),
    (APPENDICITIS, "Previous laparoscopic appendectomy.", True),
    (APPENDICITIS, "Ultrasound: the appendix was not visualised.", False),   # not seen is not normal
    (APPENDICITIS, "CT shows an abnormal appendix with fat stranding.", False),
    (APPENDICITIS, "Appendicitis is suspected; appendicectomy is planned.", False),
    (APPENDICITIS, "Appendicectomy at 12 years of age; now RLQ pain.", True),
    (APPENDICITIS, "History of appendectomy.", True),
    (APPENDICITIS, "Booked for appendicectomy at 3 pm today.", False),
    (APPENDICITIS, "Listed for appendicectomy in the morning.", False),
    (DKA, "Fingerstick glucose 38 mg/dL.", True),
    (DKA, "Her blood sugar was 2.8 mmol/L.", True),
    (HHS, "Capillary glucose of 45 mg/dl on arrival.", True),
    (DKA, "Glucose 540 mg/dL, pH 7.12.", False),
    (DKA, "Glucose 70 mg/dL.", False),                                  # the threshold itself is not low
    (HHS, "Glucose 33 mmol/L, osmolality 340.", False),
    (DKA, "Glucose 520 mg/dL; repeat 60 minutes later.", False),         # a time, not a glucose
    (MALARIA, "Three thick and thin blood films were negative.", True),
    (MALARIA, "3 malaria smears came back negative.", True),
    (MALARIA, "Serial negative blood films over 72 hours.", True),
    (MALARIA, "Malaria was excluded.", True),
    (MALARIA, "A blood film for malaria was negative.", False),       # one film does not exclude it
    (MALARIA, "Malaria rapid diagnostic test negative.", False),
    (MALARIA, "Three blood films showed Plasmodium falciparum.", False),
    (MALARIA, "Malaria is suspected; films are pending.", False),
])
def test_the_shipped_rule_outs(dx, text, excluded):
    specs = [d for r in load_rules() for d in r.diagnoses if d.id == dx]
    assert specs and all(d.ruled_out_by == specs[0].ruled_out_by for d in specs)   # every rule's line alike
    assert bool(union_pattern(specs[0].ruled_out_by.patterns).search(text)) is excluded


MALARIA_RULES = {"version": 1, "rules": [
    {"id": "fever-travel", "complaint": "fever after a stay where malaria is acquired", "findings": ["fever"],
     "where_acquired": True, "reason": "fever after a malarious area", "citation": "Malaria guideline 2016.",
     "diagnoses": [{"id": "DOID:8", "name": "malaria"}]},
    {"id": "fever-meningism", "complaint": "fever with headache", "findings": ["fever"], "with": ["headache"],
     "reason": "meningitis", "citation": "Meningitis guideline 2024.",
     "diagnoses": [{"id": "DOID:8", "name": "malaria"}]}]}


def _malaria_kg(regions):
    g = nx.MultiDiGraph()
    for cid, (name, cat) in {"SYMP:6": ("fever", "symptom"), "SYMP:3": ("headache", "symptom"),
                             "DOID:8": ("malaria", "disease")}.items():
        g.add_node(cid, name=name, category=cat, synonyms=[], synonym_scopes=[], definition=None, xrefs={},
                   sources=["test"])
    if regions:
        g.nodes["DOID:8"]["endemic_regions"] = regions
    return KnowledgeGraph(g, "test")


def test_a_where_acquired_rule_needs_a_place_where_the_diagnosis_is_acquired(tmp_path):
    m = MustNotMiss(load_rules(_rules_file(tmp_path, {"version": 1, "rules": MALARIA_RULES["rules"][:1]})),
                    _malaria_kg(["africa", "asia"]))
    assert m.problems == []
    fever = [("fever", "SYMP:6")]
    assert m.check(_ex(*fever)) == []                                          # no place stated
    away = _ex(*fever)
    away.places = [Place(text="Lagos", regions=["africa"]), Place(text="Paris", regions=["europe"])]
    items = m.check(away)
    assert _names(items) == ["malaria"] and items[0].triggers == ["fever", "been in Lagos"]
    assert items[0].trigger_ids == ["SYMP:6"]                                   # a place is not a concept
    home = _ex(*fever)
    home.places = [Place(text="Canada", regions=["north_america"])]
    assert m.check(home) == []                                                 # been only where it is not acquired


def test_a_where_acquired_rule_does_not_stop_another_rule_naming_the_diagnosis(tmp_path):
    m = MustNotMiss(load_rules(_rules_file(tmp_path, MALARIA_RULES)), _malaria_kg(["africa"]))
    items = m.check(_ex(("fever", "SYMP:6"), ("headache", "SYMP:3")))
    assert _names(items) == ["malaria"] and items[0].rules == ["fever-meningism"]


def test_a_where_acquired_diagnosis_without_regions_is_a_problem(tmp_path):
    m = MustNotMiss(load_rules(_rules_file(tmp_path, MALARIA_RULES)), _malaria_kg(None))
    assert m.problems == ["rule fever-travel: DOID:8 (malaria) has no endemic regions in the knowledge graph, so no "
                          "place can make it fire"]


def test_items_with_unsettled_conditions_come_last(mnm):
    items = mnm.check(_ex(("headache", "SYMP:3"), ("chest pain", "SYMP:1")))
    assert items[-1].name == "giant cell arteritis" and items[-1].conditions


def test_items_in_the_differential_are_still_listed_with_their_rank(mnm):
    ex = _ex(("chest pain", "SYMP:1"))
    dd = [DifferentialItem(rank=1, diagnosis="pericarditis", concept_id="DOID:99"),
          DifferentialItem(rank=2, diagnosis="acute myocardial infarction", concept_id="DOID:4"),   # a kind of MI
          DifferentialItem(rank=3, diagnosis="Pulmonary embolism")]                                # LLM, no id
    items = {i.concept_id: i for i in mnm.check(ex, dd)}
    assert set(items) == {"DOID:3", "DOID:2", "DOID:1"}
    assert (items["DOID:3"].in_differential, items["DOID:3"].rank) == (True, 2)
    assert (items["DOID:2"].in_differential, items["DOID:2"].rank) == (True, 3)
    assert (items["DOID:1"].in_differential, items["DOID:1"].rank) == (False, None)
    # the same clinical entity under another id ("also")
    also = mnm.check(ex, [DifferentialItem(rank=4, diagnosis="unstable angina", concept_id="DOID:7")])
    assert next(i for i in also if i.concept_id == "DOID:3").rank == 4


def test_problems_are_reported_and_left_out(kg, tmp_path):
    bad = {"version": 1, "rules": [
        {"id": "r", "complaint": "c", "findings": ["no such finding", "chest pain"], "reason": "r", "citation": "c.",
         "diagnoses": [{"id": "DOID:1", "name": "dissection of the aorta"},
                       {"id": "DOID:404", "name": "missing"},
                       {"id": "HP:9", "name": "Anaphylactic shock"},
                       {"id": "DOID:2", "name": "pulmonary embolism", "also": ["DOID:405"]}]}]}
    m = MustNotMiss(load_rules(_rules_file(tmp_path, bad)), kg)
    assert m.problems == [
        "rule r: trigger 'no such finding' matches no concept of the knowledge graph",
        "rule r: DOID:1 is named 'aortic dissection' in the knowledge graph, not 'dissection of the aorta'",
        "rule r: diagnosis DOID:404 (missing) is not in the knowledge graph",
        "rule r: HP:9 (Anaphylactic shock) is a phenotype, not a disease",
        "rule r: DOID:405 (also of DOID:2) is not in the knowledge graph"]
    # the trigger that resolved still fires; the diagnoses are listed as written (never silently dropped)
    assert _names(m.check(_ex(("chest pain", "SYMP:1")))) == ["dissection of the aorta", "missing",
                                                              "Anaphylactic shock", "pulmonary embolism"]


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("citation"), "citation"),
    (lambda r: r.update(reason="  "), "must not be empty"),
    (lambda r: r.update(diagnoses=[]), "diagnoses"),
    (lambda r: r.update(findings=[]), "findings"),
    (lambda r: r.update(colour="red"), "colour"),
    (lambda r: r.update(age_min=60, age_max=50), "age_min"),
    (lambda r: r.update(sex="other"), "sex"),
    (lambda r: r["diagnoses"][0].update(ruled_out_by={"result": "x", "patterns": ["(unclosed"]}), "does not compile"),
    (lambda r: r["diagnoses"][0].update(ruled_out_by={"result": "x", "patterns": []}), "patterns"),
])
def test_the_file_format_is_checked(tmp_path, change, message):
    data = yaml.safe_load(yaml.safe_dump(RULES))
    change(data["rules"][0])
    with pytest.raises(MustNotMissError, match=message):
        load_rules(_rules_file(tmp_path, data))


def test_rule_ids_are_unique_and_the_file_must_exist(tmp_path):
    data = yaml.safe_load(yaml.safe_dump(RULES))
    data["rules"].append(data["rules"][0])
    with pytest.raises(MustNotMissError, match="used twice"):
        load_rules(_rules_file(tmp_path, data))
    with pytest.raises(MustNotMissError, match="cannot read"):
        load_rules(tmp_path / "missing.yaml")


def test_the_packaged_file_follows_the_format():
    rules = load_rules()
    assert 25 <= len(rules) <= 50
    assert all(r.citation and r.reason and r.diagnoses for r in rules)


# ---- the graph node, the result, the audit record, the CLI ------------------------------------------------------

def test_the_node_lists_the_items_beside_the_differential(mnm, resources, runtime):
    resources.__dict__["must_not_miss"] = mnm            # the cached resource, without loading a real graph
    draft = Draft(differential=[DifferentialItem(rank=1, diagnosis="aortic dissection", concept_id="DOID:1")],
                  text=("### Differential diagnosis\n#### 1. aortic dissection\n"
                        "### Suggested next steps\n- CT angiogram"))
    state = {"message": "m", "presentation": "58-year-old man with chest pain", "draft": draft,
             "extraction": _ex(("chest pain", "SYMP:1"), age=58, sex="male"), "evidence": [], "events": []}
    up = nodes.must_not_miss(state, runtime())
    items = up["must_not_miss"]
    assert [(i.name, i.rank) for i in items] == [("acute coronary syndrome", None), ("pulmonary embolism", None),
                                                 ("aortic dissection", 1)]
    assert up["events"][0]["node"] == "must_not_miss"
    assert up["events"][0]["summary"]["in_differential"] == 1
    state.update(must_not_miss=items)
    result = nodes.finalize(state, runtime(use_verifier=False))["result"]
    assert [i["name"] for i in result["must_not_miss"]][-1] == "aortic dissection"
    record = audit_record(state, result, [], "test")
    assert record["must_not_miss"][-1] == {"id": "DOID:1", "name": "aortic dissection", "triggers": ["chest pain"],
                                           "rules": ["chest-pain"], "conditions": [], "rank": 1,
                                           "ruled_out": None}
    text = render(result)
    line = next(x for x in text.splitlines() if x.startswith("Must not miss: "))
    assert line == ("Must not miss: acute coronary syndrome (chest pain); pulmonary embolism (chest pain); "
                    "aortic dissection (chest pain; #1 in the differential)")
    assert text.index("Must not miss:") < text.index("Suggested next steps")   # under the differential


def test_a_broken_rule_file_is_a_warning_not_a_failed_run(resources, runtime):
    class Broken:
        def check(self, *_, **__):
            raise MustNotMissError("must-not-miss rules: rules.yaml does not follow the format")

    resources.__dict__["must_not_miss"] = Broken()
    up = nodes.must_not_miss({"extraction": _ex(("chest pain", "SYMP:1")), "events": []}, runtime())
    assert up["must_not_miss"] == [] and "must-not-miss list unavailable" in up["warnings"][0]


def test_the_cli_lines_group_reasons_and_show_conditions():
    items = [MustNotMissItem(concept_id="DOID:1", name="aortic dissection", reason="r1", citation="c1",
                             triggers=["chest pain", "back pain"], rank=3, in_differential=True),
             MustNotMissItem(concept_id="DOID:2", name="pulmonary embolism", reason="r1", citation="c1",
                             triggers=["chest pain"]),
             MustNotMissItem(concept_id="DOID:5", name="giant cell arteritis", reason="r2", citation="c2",
                             triggers=["headache"], conditions=["if age >= 50"])]
    assert must_not_miss_lines([i.model_dump() for i in items]) == [
        "",
        ("Must not miss: aortic dissection (chest pain, back pain; #3 in the differential); pulmonary embolism "
         "(chest pain); giant cell arteritis (headache; if age >= 50)"),
        "  - aortic dissection, pulmonary embolism: r1 [c1]",
        "  - giant cell arteritis: r2 [c2]"]
    assert must_not_miss_lines([]) == []
    out = MustNotMissItem(concept_id="DOID:6", name="ectopic pregnancy", reason="r3", citation="c3",
                          triggers=["abdominal pain"], ruled_out='a negative pregnancy test ("pregnancy test negative")')
    assert must_not_miss_lines([out.model_dump()])[1] == (
        'Must not miss: ectopic pregnancy (abdominal pain; ruled out by a negative pregnancy test ("pregnancy test '
        'negative"))')


def test_on_a_tie_the_item_a_rarer_finding_fired_comes_first(tmp_path):
    """Two rules equally specific: the one written second comes first when its finding points at fewer diseases
    (orthopnoea, few; breathlessness, many) — and names and explains an item both rules give."""
    g = nx.MultiDiGraph()
    for cid, name, cat in [("SYMP:10", "dyspnea", "symptom"), ("SYMP:11", "orthopnea", "symptom"),
                           ("DOID:10", "pulmonary embolism", "disease"), ("DOID:11", "pulmonary edema", "disease"),
                           ("DOID:12", "asthma", "disease"), ("DOID:13", "pneumonia", "disease")]:
        g.add_node(cid, name=name, category=cat, synonyms=[], synonym_scopes=[], definition=None, xrefs={},
                   sources=["test"])
    for d, f in [("DOID:10", "SYMP:10"), ("DOID:11", "SYMP:10"), ("DOID:12", "SYMP:10"), ("DOID:13", "SYMP:10"),
                 ("DOID:11", "SYMP:11")]:
        g.add_edge(d, f, key="has_symptom", relation="has_symptom", source="test", license="CC0-1.0")
    rules = {"version": 1, "rules": [
        {"id": "breathless", "complaint": "breathlessness", "findings": ["dyspnea"], "reason": "breathless",
         "citation": "Breathlessness guideline 2020.",
         "diagnoses": [{"id": "DOID:10", "name": "pulmonary embolism"}, {"id": "DOID:11", "name": "pulmonary edema"}]},
        {"id": "lying-flat", "complaint": "cannot lie flat", "findings": ["orthopnea"], "reason": "lying flat",
         "citation": "Heart failure guideline 2021.",
         "diagnoses": [{"id": "DOID:11", "name": "pulmonary edema", "label": "acute pulmonary oedema"}]}]}
    mnm = MustNotMiss.from_kg(KnowledgeGraph(g, "test"), _rules_file(tmp_path, rules))
    items = mnm.check(_ex(("short of breath", "SYMP:10"), ("cannot lie flat", "SYMP:11")))
    assert _names(items) == ["acute pulmonary oedema", "pulmonary embolism"]
    assert items[0].reason == "lying flat" and items[0].rules == ["breathless", "lying-flat"]
    only = mnm.check(_ex(("short of breath", "SYMP:10")))                 # without the rarer finding: file order
    assert _names(only) == ["pulmonary embolism", "pulmonary edema"]

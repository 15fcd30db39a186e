"""agents.mee.vitals and agents.mee.labs: vital signs and test results read from text, checked against their
limits and turned into findings with knowledge-graph concept ids."""
from __future__ import annotations

import pytest

from agents.mee.findings import FINDING_CONCEPTS, Finding, denials, mask, parse_number, resolve_overlaps
from agents.mee.labs import find_lab_phrases, find_labs, lab_finding, load_phrase_table, read_lab_values
from agents.mee.sections import section_scope_end
from agents.mee.vitals import find_vitals, read_vitals, vital_finding, vital_limits


def keys(findings) -> list:
    return [f.key for f in findings]


# ------------------------------------------------------------------------------------------------- vital signs

@pytest.mark.parametrize("text, analyte, value, span", [
    ("T 38.9 °C", "temperature", 38.9, "T 38.9 °C"),
    ("temperature of 39.2°C (102.6°F) since", "temperature", 39.2, "temperature of 39.2°C (102.6°F)"),
    ("temp 101.5 F", "temperature", 38.61, "temp 101.5 F"),
    ("His temperature is 102.2°F.", "temperature", 39.0, "temperature is 102.2°F"),
    ("Tmax 39", "temperature", 39.0, "Tmax 39"),
    ("febrile, 39.5 ℃ at home", "temperature", 39.5, "39.5 ℃"),
    ("temperature 38,5 °C", "temperature", 38.5, "temperature 38,5 °C"),
    ("HR 120", "pulse", 120, "HR 120"),
    ("pulse is 112/min and regular", "pulse", 112, "pulse is 112/min"),
    ("heart rate 48 bpm", "pulse", 48, "heart rate 48 bpm"),
    ("P 130/min", "pulse", 130, "P 130/min"),
    ("tachycardic at 125 beats per minute", "pulse", 125, "125 beats per minute"),
    ("RR 28", "respirations", 28, "RR 28"),
    ("respirations are 24/min", "respirations", 24, "respirations are 24/min"),
    ("respiratory rate of 30 breaths per minute", "respirations", 30, "respiratory rate of 30 breaths per minute"),
    ("BP 80/50 mm Hg", "blood pressure", 80, "BP 80/50 mm Hg"),
    ("blood pressure is 165/100", "blood pressure", 165, "blood pressure is 165/100"),
    ("systolic blood pressure of 82 mm Hg", "blood pressure", 82, "systolic blood pressure of 82 mm Hg"),
    ("SpO2 88%", "oxygen saturation", 88, "SpO2 88%"),
    ("oxygen saturation of 86% on room air.", "oxygen saturation", 86, "oxygen saturation of 86% on room air"),
    ("O2 sat 91% RA", "oxygen saturation", 91, "O2 sat 91% RA"),
    ("pulse oximetry shows an oxygen saturation of 89% on 2 L of oxygen via nasal cannula.", "oxygen saturation",
     89, "pulse oximetry shows an oxygen saturation of 89% on 2 L of oxygen via nasal cannula"),
    ("PaO2 55 mm Hg", "PaO2", 55, "PaO2 55 mm Hg"),
    ("BMI 34 kg/m2", "BMI", 34, "BMI 34 kg/m2"),
    ("body mass index (BMI) is 17.5 kg/m²", "BMI", 17.5, "body mass index (BMI) is 17.5 kg/m²"),
])
def test_reads_vital_signs_as_written(text, analyte, value, span):
    [r] = read_vitals(text)
    assert (r.analyte, r.text, text[r.start:r.end]) == (analyte, span, span)
    assert r.value == pytest.approx(value, abs=0.01)


def test_usmle_sentence():
    text = ("Her temperature is 38.9°C (102°F), pulse is 120/min, respirations are 22/min, and blood pressure is "
            "85/50 mm Hg.")
    found = find_vitals(text)
    assert keys(found) == ["fever", "tachycardia", "tachypnea", "hypotension"]
    assert [f.text for f in found] == ["temperature is 38.9°C (102°F)", "pulse is 120/min",
                                       "respirations are 22/min", "blood pressure is 85/50 mm Hg"]
    assert all(f.measured and not f.negated for f in found)
    assert found[0].concept_ids[0] == "SYMP:0000613"


@pytest.mark.parametrize("text, key", [
    ("T 38.0 °C", "fever"), ("T 37.9 °C", "low-grade fever"), ("temp 100.4 F", "fever"),
    ("temp 100.2 F", "low-grade fever"), ("T 37.8 °C", "low-grade fever"), ("T 37.7 °C", None),
    ("T 34.5 °C", "hypothermia"), ("T 35.0 °C", None), ("temperature 94 °F", "hypothermia"),
    ("HR 101", "tachycardia"), ("HR 100", None), ("HR 59", "bradycardia"), ("HR 60", None),
    ("RR 21", "tachypnea"), ("RR 20", None), ("RR 12", None), ("RR 10", None), ("RR 9", "bradypnea"),
    ("BP 89/60 mm Hg", "hypotension"), ("BP 90/60 mm Hg", None), ("BP 139/89 mm Hg", None),
    ("BP 140/80 mm Hg", "elevated blood pressure"), ("BP 130/90 mm Hg", "elevated blood pressure"),
    ("SpO2 91%", "hypoxemia"), ("SpO2 92%", None), ("PaO2 70 mm Hg", "hypoxemia"), ("PaO2 90 mm Hg", None),
    ("BMI 30 kg/m2", "obesity"), ("BMI 29.9 kg/m2", None), ("BMI 17 kg/m2", "underweight"),
])
def test_thresholds(text, key):
    [f] = find_vitals(text)
    assert f.key == key
    assert f.abnormal == (key is not None)
    assert f.concept_ids == (FINDING_CONCEPTS[key].ids if key else ())


def test_normal_vitals_are_readings_without_findings():
    found = find_vitals("Vitals: T 37.0, P 80/min, R 16/min, BP 120/80 mm Hg, SpO2 98% RA. BMI 24 kg/m2.")
    assert [f.analyte for f in found] == ["temperature", "pulse", "respirations", "blood pressure",
                                          "oxygen saturation", "BMI"]
    assert not any(f.abnormal for f in found)


def test_paediatric_limits():
    infant = vital_limits(0.5)
    assert (infant.pulse_high, infant.respirations_high, infant.adult_pressure) == (160, 50, False)
    [r] = read_vitals("pulse is 140/min")
    assert vital_finding(r, age_years=0.5).key is None
    assert vital_finding(r, age_years=30).key == "tachycardia"
    assert vital_finding(r).key == "tachycardia"             # unknown age: adult limits
    [rr] = read_vitals("respirations are 8/min")
    assert vital_finding(rr, age_years=30).key == "bradypnea"
    assert vital_finding(rr, age_years=5).key is None         # no slow-breathing limit for a child
    [bmi] = read_vitals("BMI 17 kg/m2")
    assert vital_finding(bmi, age_years=10).key is None      # no adult underweight limit for a child


@pytest.mark.parametrize("text", [
    "T-cell count 400", "RR 1.5 for smoking", "vitamin K 10 mg", "pulse oximetry was normal",
    "transferrin saturation 8%", "a 3/4 inch laceration", "temperature is normal", "take 2 tablets/min",
])
def test_not_vital_signs(text):
    assert read_vitals(text) == []


def test_temperature_units_inferred_from_the_value():
    assert [r.value for r in read_vitals("temperature 39")] == [39.0]
    assert [round(r.value, 1) for r in read_vitals("temperature 102")] == [38.9]
    assert read_vitals("temperature 60") == []


# ------------------------------------------------------------------------------------------------ laboratory

@pytest.mark.parametrize("text, analyte, value, key", [
    ("hemoglobin 7.2 g/dL", "hemoglobin", 7.2, "anemia"),
    ("Hb 72 g/L", "hemoglobin", 7.2, "anemia"),
    ("a hemoglobin concentration of 13.5 g/dL", "hemoglobin", 13.5, None),
    ("serum sodium 125 mEq/L", "sodium", 125, "hyponatremia"),
    ("Na+ 152 mmol/L", "sodium", 152, "hypernatremia"),
    ("Na 125 today", "sodium", 125, "hyponatremia"),
    ("K+ 5.9 mEq/L", "potassium", 5.9, "hyperkalemia"),
    ("potassium of 2.9 mEq/L", "potassium", 2.9, "hypokalemia"),
    ("glucose 450 mg/dL", "glucose", 450, "hyperglycemia"),
    ("blood glucose 2.8 mmol/L", "glucose", 50.4, "hypoglycemia"),
    ("glucose 5.2 mmol/L", "glucose", 93.7, None),
    ("Leukocyte count 18,000/mm3", "wbc", 18000, "leukocytosis"),
    ("leukocyte count is 18 000/mm3", "wbc", 18000, "leukocytosis"),
    ("WBC 18.5 x 10^9/L", "wbc", 18500, "leukocytosis"),
    ("white blood cell count of 2,500/mm3", "wbc", 2500, "leukopenia"),
    ("Platelet count 45,000/mm3", "platelets", 45000, "thrombocytopenia"),
    ("platelets 650 × 10⁹/L", "platelets", 650000, "thrombocytosis"),
    ("Creatinine 2.1 mg/dL", "creatinine", 2.1, "elevated creatinine"),
    ("serum creatinine 180 µmol/L", "creatinine", 2.04, "elevated creatinine"),
    ("Urea nitrogen 40 mg/dL", "urea nitrogen", 40, "elevated urea nitrogen"),
    ("Ca2+ 11.5 mg/dL", "calcium", 11.5, "hypercalcemia"),
    ("calcium 1.8 mmol/L", "calcium", 7.21, "hypocalcemia"),
    ("Hemoglobin A1c 8.2%", "hba1c", 8.2, "elevated hba1c"),
    ("ESR 80 mm/h", "esr", 80, "elevated esr"),
    ("ALT 1200 U/L", "alt", 1200, "elevated alt"),
    ("aspartate aminotransferase 35 IU/L", "ast", 35, None),
    ("alkaline phosphatase 320 U/L", "alp", 320, "elevated alp"),
    ("total bilirubin 5.2 mg/dL", "bilirubin", 5.2, "hyperbilirubinemia"),
    ("bilirubin 85 umol/L", "bilirubin", 4.97, "hyperbilirubinemia"),
    ("albumin 21 g/L", "albumin", 2.1, "hypoalbuminemia"),
    ("MCV is 68 fL", "mcv", 68, "decreased mcv"),
    ("MCV 112 fL", "mcv", 112, "increased mcv"),
    ("TSH 0.01 mU/L", "tsh", 0.01, "decreased tsh"),
    ("TSH of 8.2 mIU/L", "tsh", 8.2, "elevated tsh"),
    ("free T4 3.2 ng/dL", "free t4", 3.2, "increased free t4"),
    ("free T4 9 pmol/L", "free t4", 0.7, "decreased free t4"),
    ("creatine kinase 12,000 U/L", "ck", 12000, "elevated ck"),
    ("ferritin 8 ng/mL", "ferritin", 8, "decreased ferritin"),
    ("Lipase 900 U/L", "lipase", 900, "elevated lipase"),
    ("serum amylase of 60 U/L", "amylase", 60, None),
    ("lactate dehydrogenase is 1,200 U/L", "ldh", 1200, "elevated ldh"),
    ("CRP 85 mg/L", "crp", 85, "elevated crp"),
    ("C-reactive protein 0.4 mg/dL", "crp", 4, None),
    ("lactate 4.2 mmol/L", "lactate", 4.2, "elevated lactate"),
    ("Neutrophils 89%", "neutrophils %", 89, "neutrophilia"),
    ("Segmented neutrophils 60%", "neutrophils %", 60, None),
    ("Eosinophils 12%", "eosinophils %", 12, "eosinophilia"),
    ("Lymphocytes 62%", "lymphocytes %", 62, "lymphocytosis"),
    ("Neutrophile 70%", "neutrophils %", 70, None),
    ("absolute neutrophil count 400/mm3", "neutrophil count", 400, "neutropenia"),
    ("ANC 0.8 x 10^9/L", "neutrophil count", 800, "neutropenia"),
    ("an absolute lymphocyte count of 50,000/mm3", "lymphocyte count", 50000, "lymphocytosis"),
    ("eosinophil count 1,200/mm3", "eosinophil count", 1200, "eosinophilia"),
    ("Prothrombin time (PT) 12 sec", "pt", 12, None),
    ("PT 18 s", "pt", 18, "prolonged pt"),
    ("INR 2.8", "inr", 2.8, "prolonged pt"),
    ("INR of 1.0", "inr", 1.0, None),
    ("Activated partial thromboplastin time (aPTT) 60 sec", "aptt", 60, "prolonged ptt"),
    ("aPTT 32 seconds", "aptt", 32, None),
    ("Mg2+ 1.2 mEq/L", "magnesium", 1.46, "hypomagnesemia"),
    ("magnesium 3.4 mg/dL", "magnesium", 3.4, "hypermagnesemia"),
    ("phosphorus 1.8 mg/dL", "phosphate", 1.8, "hypophosphatemia"),
    ("serum phosphate 2.1 mmol/L", "phosphate", 6.5, "hyperphosphatemia"),
    ("Uric acid 9.2 mg/dL", "uric acid", 9.2, "hyperuricemia"),
    ("urate 420 umol/L", "uric acid", 7.06, "hyperuricemia"),
    ("triglycerides 450 mg/dL", "triglycerides", 450, "hypertriglyceridemia"),
    ("total cholesterol 290 mg/dL", "total cholesterol", 290, "hypercholesterolemia"),
    ("LDL-C 4.9 mmol/L", "ldl cholesterol", 189.5, "hypercholesterolemia"),
    ("Cl\u2212 90 mEq/L", "chloride", 90, "hypochloremia"),
    ("HCO3- 12 mEq/L", "bicarbonate", 12, "decreased bicarbonate"),
    ("serum bicarbonate 34 mEq/L", "bicarbonate", 34, "elevated bicarbonate"),
    ("arterial pH 7.21", "ph", 7.21, "acidosis"),
    ("pH: 7.50", "ph", 7.5, "alkalosis"),
    ("PCO2 28 mm Hg", "paco2", 28, "hypocapnia"),
    ("PaCO2 of 62 mm Hg", "paco2", 62, "hypercapnia"),
    ("PaCO2 8.0 kPa", "paco2", 60, "hypercapnia"),
    # a change over time: the value it reached
    ("creatinine has risen from 90 to 310", "creatinine", 3.51, "elevated creatinine"),
    ("haemoglobin has fallen from 13.2 to 8.1 g/dL", "hemoglobin", 8.1, "anemia"),
    ("her glucose has been 250 mg/dL", "glucose", 250, "hyperglycemia"),
])
def test_reads_laboratory_values(text, analyte, value, key):
    [r] = read_lab_values(text)
    assert r.analyte == analyte and r.value == pytest.approx(value, abs=0.05)
    assert text[r.start:r.end] == r.text
    assert lab_finding(r).key == key


@pytest.mark.parametrize("text", [
    "potassium chloride 20 mEq", "sodium bicarbonate 50 mEq/L", "vitamin K 10 mg", "K 4", "Ca 9",
    "creatinine clearance 45 mL/min", "urine sodium 10 mEq/L", "ionized calcium 1.1 mmol/L",
    "oral glucose tolerance test", "low sodium diet", "CA 125 of 300 U/mL", "Ca-125 45", "Hb electrophoresis",
    "a grade 3/6 systolic murmur", "pain 8/10", "urine albumin 300 mg", "albumin-to-creatinine ratio 40",
    "CK-MB 25 U/L", "ALT 35 U/L", "LD 300", "lactate dehydrogenase 200 U/L",
    "Ringer's lactate 20 mL/kg", "a bolus of Ringer lactate 30 mL/kg", "neutrophils 9000", "Eosinophils 3%",
    "sodium bicarbonate 50 mEq/L", "potassium chloride 20 mEq/L", "sodium phosphate 3 mmol/L", "urine pH 5.5",
    "vaginal pH 5.0", "PT 14", "Mg 1.2", "HDL cholesterol 35 mg/dL", "HDL 30 mg/dL", "alkaline phosphatase 120 U/L",
])
def test_not_laboratory_values(text):
    assert [f for f in find_labs(text) if f.abnormal] == []


def test_sex_and_age_dependent_limits():
    [hb] = read_lab_values("hemoglobin 12.5 g/dL")
    assert lab_finding(hb, sex="male").key == "anemia"
    assert lab_finding(hb, sex="female").key is None
    assert lab_finding(hb, sex="female", age_years=3).key is None
    [cr] = read_lab_values("creatinine 1.2 mg/dL")
    assert lab_finding(cr, sex="female").key == "elevated creatinine"
    assert lab_finding(cr, sex="male").key is None


def test_childrens_alkaline_phosphatase_is_not_read_by_the_adult_limit():
    [alp] = read_lab_values("ALP 300 U/L")
    assert lab_finding(alp, age_years=10).key is None
    assert lab_finding(alp, age_years=40).key == lab_finding(alp).key == "elevated alp"
    [fe] = read_lab_values("ferritin 250 ng/mL")
    assert lab_finding(fe, sex="female").key == "increased ferritin" and lab_finding(fe, sex="male").key is None


def test_usmle_lab_table():
    text = ("Laboratory studies show:\nHemoglobin 9.1 g/dL\nLeukocyte count 12,500/mm3\nPlatelet count 210,000/mm3\n"
            "Serum\nNa+ 125 mEq/L\nK+ 4.1 mEq/L\nGlucose 90 mg/dL\nCreatinine 0.8 mg/dL")
    found = find_labs(text, sex="female")
    assert keys(found) == ["anemia", "leukocytosis", None, "hyponatremia", None, None, None]
    assert all(text[f.start:f.end] == f.text for f in found)


@pytest.mark.parametrize("text, concept, negated, span", [
    ("elevated troponin", "HP:0500020", False, "elevated troponin"),
    ("Troponin I is elevated.", "HP:0410173", False, "Troponin I is elevated"),
    ("a positive troponin T", "HP:0410174", False, "positive troponin T"),
    ("troponin is normal", "HP:0500020", True, "troponin is normal"),
    ("troponin levels were not elevated", "HP:0500020", True, "troponin levels were not elevated"),
    ("ST elevation in leads II, III and aVF", "HP:0012251", False, "ST elevation"),
    ("ST-segment elevation", "HP:0012251", False, "ST-segment elevation"),
    ("elevation of the ST segments", "HP:0012251", False, "elevation of the ST segments"),
    ("ST depression in V4-V6", "HP:0012250", False, "ST depression"),
    ("inverted T waves", "HP:0010872", False, "inverted T waves"),
    ("anti-dsDNA antibodies are positive", "HP:0020151", False, "anti-dsDNA antibodies are positive"),
    ("serology is negative for anti-dsDNA antibodies", "HP:0020151", True, "negative for anti-dsDNA antibodies"),
    ("positive ANA", "HP:0003493", False, "positive ANA"),
    ("ANA titer of 1:640", "HP:0003493", False, "ANA titer of 1:640"),
    ("ANA negative", "HP:0003493", True, "ANA negative"),
    ("elevated lipase", "HP:0032932", False, "elevated lipase"),
    ("serum lipase is markedly elevated", "HP:0032932", False, "serum lipase is markedly elevated"),
    ("elevated liver enzymes", "HP:0002910", False, "elevated liver enzymes"),
    ("LFTs are mildly elevated", "HP:0002910", False, "LFTs are mildly elevated"),
    ("elevated serum creatinine", "HP:0003259", False, "elevated serum creatinine"),
    ("prolonged PT", "HP:0008151", False, "prolonged PT"),
    ("low platelets", "SYMP:0000114", False, "low platelets"),
    ("high blood sugar", "HP:0003074", False, "high blood sugar"),
    ("raised blood pressure readings", "HP:0032263", False, "raised blood pressure readings"),
    ("Serum complement levels are decreased.", "HP:0004431", False, "Serum complement levels are decreased"),
    ("urine protein is positive", "SYMP:0000367", False, "urine protein is positive"),
    ("the urine dip showed blood", "SYMP:0000040", False, "urine dip showed blood"),
    ("Urinalysis shows leukocytes", "HP:0012085", False, "Urinalysis shows leukocytes"),
    ("nitrites are negative", "HP:0031812", True, "nitrites are negative"),
    ("Serum lipase is three times the upper limit of normal", "HP:0032932", False,
     "Serum lipase is three times the upper limit of normal"),
    ("amylase is 5x ULN", "HP:0410288", False, "amylase is 5x ULN"),
    ("free T4 is high", "HP:0033077", False, "free T4 is high"),
    ("radioactive iodine uptake is low", "HP:0031219", False, "radioactive iodine uptake is low"),
    ("increased radioiodine uptake", "HP:0031220", False, "increased radioiodine uptake"),
    ("Hb 9.8 with a low MCV", "HP:0025066", False, "low MCV"),
    ("the mean corpuscular volume is raised", "HP:0005518", False, "mean corpuscular volume is raised"),
    ("Urine pregnancy test is positive.", "HP:6000485", False, "Urine pregnancy test is positive"),
    ("a positive pregnancy test", "HP:6000485", False, "positive pregnancy test"),
    ("serum beta-hCG is elevated", "HP:6000485", False, "serum beta-hCG is elevated"),
    ("pregnancy test negative", "HP:6000485", True, "pregnancy test negative"),
    ("Urine dipstick shows 3+ protein.", "SYMP:0000367", False, "Urine dipstick shows 3+ protein"),
    ("Urine shows protein.", "SYMP:0000367", False, "Urine shows protein"),
    ("protein 2+ on the dipstick", "SYMP:0000367", False, "protein 2+"),
    ("Her urine shows ketones.", "HP:0002919", False, "urine shows ketones"),
    ("Urine dipstick shows 3+ ketones.", "HP:0002919", False, "Urine dipstick shows 3+ ketones"),
])
def test_results_in_words(text, concept, negated, span):
    [f] = find_lab_phrases(text)
    assert (f.concept_ids, f.negated, f.text) == ((concept,), negated, span)
    assert not f.measured and f.abnormal


@pytest.mark.parametrize("text, expected", [
    ("A complete blood count is normal.", {("SYMP:0000208", True), ("SYMP:0000634", True), ("HP:0001882", True),
                                           ("SYMP:0000114", True), ("HP:0001894", True)}),
    ("CBC within normal limits", {("SYMP:0000208", True), ("SYMP:0000634", True), ("HP:0001882", True),
                                  ("SYMP:0000114", True), ("HP:0001894", True)}),
    ("He has low blood counts.", {("SYMP:0000208", False), ("HP:0001882", False), ("SYMP:0000114", False)}),
    # the white cell count alone says nothing of the red cells or the platelets
    ("White blood count is normal.", {("SYMP:0000634", True), ("HP:0001882", True)}),
])
def test_a_normal_blood_count_denies_each_of_its_abnormalities(text, expected):
    assert {(f.concept_ids[0], f.negated) for f in find_lab_phrases(text)} == expected


def test_one_phrase_two_findings():
    found = find_lab_phrases("Sodium is normal.")
    assert sorted(f.concept_ids[0] for f in found) == ["HP:0003228", "SYMP:0019146"]
    assert all(f.negated and f.text == "Sodium is normal" for f in found)


@pytest.mark.parametrize("text", [
    "no ST changes", "ANA titer of 1:40", "low-dose aspirin", "a high potassium diet", "troponin was sent",
    "high-sensitivity troponin assay ordered", "an RF ablation", "Ana reports", "PT twice a week",
    # a dipstick that shows nothing states no result (and the word before a denial is no filler of a finding)
    "Urinalysis shows no protein.", "Urine dipstick shows no blood.", "Urinalysis shows no white cells.",
])
def test_no_result_in_words(text):
    assert find_lab_phrases(text) == []


@pytest.mark.parametrize("text, expected", [
    # the result word after the list
    ("Urine dipstick: leukocyte esterase and nitrites positive.", {("HP:0012085", False), ("HP:0031812", False)}),
    ("ALT and AST are elevated", {("HP:0031964", False), ("HP:0031956", False)}),
    ("ANA, anti-dsDNA and rheumatoid factor were negative",
     {("HP:0003493", True), ("HP:0020151", True), ("HP:0002923", True)}),
    # the result word before the list
    ("elevated ALT and AST", {("HP:0031964", False), ("HP:0031956", False)}),
    ("positive ANA and anti-dsDNA antibodies", {("HP:0003493", False), ("HP:0020151", False)}),
    ("low C3 and C4", {("HP:0005421", False), ("HP:0045042", False)}),
    # each analyte with its own word: nothing shared
    ("ANA is positive and rheumatoid factor is negative", {("HP:0003493", False), ("HP:0002923", True)}),
])
def test_analytes_listed_together_share_the_result_word(text, expected):
    assert {(f.concept_ids[0], f.negated) for f in find_lab_phrases(text)} == expected


@pytest.mark.parametrize("text, expected", [
    ("ALT and a history of hepatitis", set()),                       # no result word at all
    ("troponin, and his AST is elevated", {"HP:0031956"}),           # "and his": not a list of analytes
    ("elevated ALT; AST was not measured", {"HP:0031964"}),          # a semicolon ends the list
    ("ALT and hemoglobin are low", {"SYMP:0000208"}),                # ALT is read "high" only: not its kind
])
def test_a_list_shares_only_a_result_of_its_own_kind(text, expected):
    assert {f.concept_ids[0] for f in find_lab_phrases(text) if not f.negated} == expected


def test_numeric_value_and_words_overlap_once():
    found = find_labs("potassium was elevated at 6.1 mEq/L")
    assert len(found) == 1 and found[0].concept_ids[0] == "HP:0002153"


def test_phrase_table_rows_are_well_formed(tmp_path):
    rules = load_phrase_table()
    assert len(rules) > 30
    assert all(r.concept_id.split(":")[0] in ("HP", "SYMP") for r in rules)
    bad = tmp_path / "bad.tsv"
    bad.write_text("HP:1\tname\tsideways\tx\n")
    with pytest.raises(ValueError, match="form high"):
        load_phrase_table(bad)


# --------------------------------------------------------------------------------------------------- helpers

def test_parse_number_and_mask():
    assert parse_number("18,000") == 18000 and parse_number("38,9") == 38.9 and parse_number("7.2") == 7.2
    assert mask("temp 101 F today", [(0, 10)]) == "           today"


def test_resolve_overlaps_keeps_the_longest_and_shared_spans():
    def f(start: int, end: int, key: str) -> Finding:
        return Finding(start=start, end=end, text="", analyte="x", key=key)

    long_a, long_b, inner, apart = f(0, 10, "a"), f(0, 10, "b"), f(2, 5, "c"), f(12, 14, "d")
    assert resolve_overlaps([inner, apart, long_a, long_b, long_a]) == [long_a, long_b, apart]


@pytest.mark.parametrize("text, header_end, expected_end", [
    ("History: obesity; smokes cigarettes; heart failure.", 8, None),
    ("Past medical history: hypertension. She presents with chest pain.", 21, 35),
    ("PMH: HTN. DM2. CAD.\nHPI: cough", 4, 19),
    ("PMH:\n- heart failure\n- asthma\n\nHPI: wheezing", 4, 29),
])
def test_section_scope(text, header_end, expected_end):
    end = section_scope_end(text, header_end, len(text))
    assert end == (len(text) if expected_end is None else expected_end)


def test_every_analyte_has_limits_and_every_limit_a_concept():
    from agents.mee.findings import FINDING_CONCEPTS
    from agents.mee.labs import _ANALYTES, _LIMITS

    read_apart = {"hemoglobin", "creatinine", "hba1c", "esr", "alp", "ferritin"}   # sex-, age-dependent, inclusive
    assert {a.key for a in _ANALYTES} == set(_LIMITS) | read_apart
    keys = {k for low, _, high, _ in _LIMITS.values() for k in (low, high) if k}
    assert keys <= set(FINDING_CONCEPTS)


# ------------------------------------------------------------------------------------------ in-range values deny

@pytest.mark.parametrize("text, rules_out", [
    ("platelets 250,000/mm3", ("thrombocytopenia", "thrombocytosis")),
    ("sodium 140 mEq/L", ("hyponatremia", "hypernatremia")),
    ("creatinine 0.9 mg/dL", ("elevated creatinine",)),
    ("hemoglobin 14 g/dL", ("anemia", "increased hemoglobin")),
    ("aPTT 30 s", ("prolonged ptt",)),
])
def test_an_in_range_lab_value_rules_its_findings_out(text, rules_out):
    (r,) = read_lab_values(text)
    f = lab_finding(r)
    assert f.key is None and f.rules_out == rules_out
    got = denials(f)
    assert [g.key for g in got] == list(rules_out)
    assert all(g.negated and g.in_range and g.measured and (g.start, g.end) == (f.start, f.end) for g in got)
    assert all(g.concept_ids == FINDING_CONCEPTS[g.key].ids for g in got)


def test_an_abnormal_value_rules_nothing_out():
    (r,) = read_lab_values("platelets 45,000/mm3")
    f = lab_finding(r)
    assert f.key == "thrombocytopenia" and f.rules_out == () and denials(f) == [f]


def test_a_child_alkaline_phosphatase_rules_nothing_out():
    (r,) = read_lab_values("alkaline phosphatase 120 U/L")
    assert lab_finding(r, age_years=10).rules_out == ()
    assert lab_finding(r, age_years=40).rules_out == ("elevated alp",)


@pytest.mark.parametrize("text, age, rules_out", [
    ("temperature 36.8 °C", None, ("fever",)),
    ("temperature 37.9 °C", None, ()),                      # low-grade fever: a finding, nothing denied
    ("pulse 80/min", None, ("tachycardia", "bradycardia")),
    ("blood pressure 118/76 mm Hg", 40, ("hypotension", "elevated blood pressure")),
    ("blood pressure 118/76 mm Hg", 8, ("hypotension",)),   # no adult hypertension limit for a child
    ("blood pressure 92/58 mm Hg", 27, ("elevated blood pressure",)),  # grey zone: low for her, not ruled out
    ("respirations 14/min", 30, ("tachypnea", "bradypnea")),
    ("respirations 14/min", 4, ("tachypnea",)),             # no slow-breathing limit for a child
    ("oxygen saturation 98%", None, ("hypoxemia",)),
    ("oxygen saturation 93%", None, ()),                    # grey zone: neither hypoxaemia nor its denial
])
def test_an_in_range_vital_sign_rules_its_findings_out(text, age, rules_out):
    (r,) = read_vitals(text)
    assert vital_finding(r, age_years=age).rules_out == rules_out

"""The classic-sign table (agents/signs.py) without the knowledge graph: the file's format, what counts as a stated
sign (denials in both positions), and the order of the sign ranking."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.signs import ClassicSigns, SignsError, load_signs


@pytest.fixture(scope="module")
def signs() -> ClassicSigns:
    return ClassicSigns(load_signs())


def test_the_table_is_well_formed(tmp_path):
    specs = load_signs()
    assert len(specs) >= 60
    assert len({s.id for s in specs}) == len(specs)
    for s in specs:
        assert re.search(r"\b(19|20)\d\d\b", s.citation), f"{s.id}: a citation names its year"
    dup = tmp_path / "dup.yaml"
    dup.write_text("version: 1\nsigns:\n" + "".join(
        f"  - {{id: x, sign: s, patterns: [a], diagnoses: [{{id: 'DOID:1', name: n}}], citation: c{i}}}\n"
        for i in range(2)))
    with pytest.raises(SignsError, match="used twice"):
        load_signs(dup)
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nsigns:\n  - {id: x, sign: s, patterns: ['(open'], "
                   "diagnoses: [{id: 'DOID:1', name: n}], citation: c}\n")
    with pytest.raises(SignsError, match="does not compile"):
        load_signs(bad)
    silent = tmp_path / "silent.yaml"      # neither patterns nor a vital range: nothing could state it
    silent.write_text("version: 1\nsigns:\n  - {id: x, sign: s, diagnoses: [{id: 'DOID:1', name: n}], citation: c}\n")
    with pytest.raises(SignsError, match="needs patterns or a vital range"):
        load_signs(silent)


@pytest.mark.parametrize("text, sign", [
    ("Small white spots on the buccal mucosa (Koplik spots).", "koplik-spots"),
    ("Slit-lamp examination shows Kayser-Fleischer rings.", "kayser-fleischer-rings"),
    ("Painless erythematous macules on the palms (Janeway lesions).", "janeway-lesions"),
    ("Lymph node biopsy shows Reed-Sternberg cells.", "reed-sternberg"),
    ("Rebound tenderness at McBurney's point.", "mcburney-rovsing-psoas"),
    ("Murphy's sign positive.", "murphy-sign"),
    ("Inspiratory arrest on deep palpation of the right upper quadrant.", "murphy-sign"),
    ("A palpable olive-shaped mass in the epigastrium.", "olive-mass"),
    ("Chest x-ray shows a boot-shaped heart.", "boot-shaped-heart"),
    ("Peripheral smear shows giant cytoplasmic granules in neutrophils.", "giant-granules"),
    ("Anti-dsDNA antibodies are positive.", "anti-dsdna"),
    ("Anti-mitochondrial antibodies are found.", "anti-mitochondrial"),
    ("Lung biopsy shows non-caseating granulomas.", "noncaseating"),
    ("Biopsy shows caseating granulomas.", "caseating"),
    ("The ECG shows a short PR interval and delta waves.", "delta-wave"),
    ("Cytogenetics show t(9;22).", "bcr-abl"),
    ("X-ray of the femur shows an onion-skin periosteal reaction.", "onion-skin"),
    ("An opening snap follows S2.", "opening-snap"),
    ("The Dix-Hallpike maneuver reproduces the vertigo.", "dix-hallpike"),
    ("There is fixed splitting of S2.", "fixed-split-s2"),
    ("Urinary 5-HIAA is elevated.", "5-hiaa"),
    ("Serum ceruloplasmin is low.", "ceruloplasmin"),
    ("HBsAg positive, IgM anti-HBc positive.", "hbsag"),
    ("CSF shows albuminocytologic dissociation.", "albuminocytologic"),
    ("Linear IgG deposits along the glomerular basement membrane.", "linear-igg"),
    ("A dome-shaped plaque with a central keratin plug.", "keratin-plug"),
    ("When the lesion is squeezed, the surface retracts inwards.", "dimple-sign"),
    ("A pearly papule with rolled borders and telangiectasias.", "pearly-papule"),
    ("Greasy brown plaques that appear stuck-on.", "stuck-on"),
    ("Three dome-shaped papules with central umbilication.", "umbilicated-papules"),
    ("An early diastolic blowing, decrescendo murmur at the left sternal border.", "early-diastolic-murmur"),
    ("A late diastolic rumbling murmur heard best at the apex.", "mid-diastolic-rumble"),
    ("A holosystolic murmur at the apex radiating to the axilla.", "holosystolic-murmur-axilla"),
    ("A crescendo-decrescendo systolic murmur radiating to both carotids.", "ejection-murmur-carotids"),
    ("Sudden tearing chest pain radiating to the back.", "tearing-pain"),
    ("He describes the pain as ripping.", "tearing-pain"),
    ("Unequal blood pressures between the two arms.", "tearing-pain"),
    ("She calls it the worst headache of her life.", "thunderclap-headache"),
    ("Colicky right flank pain radiating to the groin.", "renal-colic"),
])
def test_a_stated_sign_is_found(signs, text, sign):
    got = [m.spec.id for m in signs.find(text)]
    assert sign in got, got


@pytest.mark.parametrize("text", [
    "No Kernig sign.",
    "Murphy's sign is negative.",
    "Kernig sign: absent.",
    "The abdomen is soft, without asterixis or caput medusae.",
    "She denies a malar rash.",
    "His whooping cough vaccination is up to date.",
    "Trousseau sign of malignancy was considered",     # not the hypocalcaemia sign
    "Anti-dsDNA antibodies were negative.",
    "Negative for anti-centromere antibodies.",
    "The EEG shows diffuse delta waves.",              # sleep or encephalopathy, not pre-excitation
    "Ortolani maneuver negative.",
    "A pleural friction rub is heard.",                # pleural, not pericardial
    "Direct Coombs test was negative.",
    "HBsAg negative.",
    "No tearing chest pain.",
    "A holosystolic murmur at the left lower sternal border.",        # not the apex or the axilla
    "Flank pain without radiation.",
])
def test_a_denied_or_absent_sign_is_not(signs, text):
    got = [m.spec.id for m in signs.find(text)]
    assert not got or got == ["trousseau-malignancy"], got


def test_a_denial_ends_at_but_or_with(signs):
    assert [m.spec.id for m in signs.find("No Kernig sign but a positive Brudzinski sign.")] == ["kernig-brudzinski"]
    assert [m.spec.id for m in signs.find("No rash, with Koplik spots on the buccal mucosa.")] == ["koplik-spots"]
    assert signs.find("No Kernig or Brudzinski sign.") == []


def test_a_denial_on_the_line_above_does_not_reach_the_next_line(signs):
    panel = "Hepatitis panel:\nAnti-HAV IgM negative\nHBsAg positive\nAnti-HCV negative\n"
    assert [m.spec.id for m in signs.find(panel)] == ["hbsag"]
    assert signs.find("Hepatitis panel:\nHBsAg negative\n") == []          # its own line's denial still counts


def test_the_skin_basement_membrane_is_not_the_glomerular_one(signs):
    got = [m.spec.id for m in signs.find("Skin biopsy shows linear IgG deposits along the basement membrane zone.")]
    assert got == ["bullous-pemphigoid-bmz"], got     # pemphigoid, not anti-GBM disease


def test_non_caseating_is_not_caseating(signs):
    assert [m.spec.id for m in signs.find("Lung biopsy shows non-caseating granulomas.")] == ["noncaseating"]
    assert [m.spec.id for m in signs.find("Lung biopsy shows noncaseating granulomas.")] == ["noncaseating"]


def test_a_disease_two_signs_name_ranks_first(signs):
    hits = signs.rank("He has asterixis. There are spider angiomas and caput medusae.")
    assert hits[0].concept_id == "DOID:5082"                      # liver cirrhosis: spider angiomas + caput medusae
    assert hits[0].signs == ("spider angiomas", "caput medusae")
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert {"DOID:13413", "DOID:10762"} <= {h.concept_id for h in hits}


def test_a_named_sign_ranks_before_everyday_symptoms(signs):
    """Koplik spots after a runny nose and a cough: measles (a named sign) before the cold (everyday symptoms), though
    the cold's words come first; without the spots the cold is the sign ranking's first."""
    text = "Three days of fever, cough, a runny nose and red eyes. Small white spots on the buccal mucosa (Koplik spots)."
    assert [h.concept_id for h in signs.rank(text)][:2] == ["DOID:8622", "DOID:10459"]   # measles, common cold
    assert signs.rank("Three days of fever, cough and a runny nose.")[0].concept_id == "DOID:10459"


def _examples() -> list[tuple[str, str]]:
    """The example sentences of tests/cases/classic_sign_examples.tsv: (sentence, sign id that must be found, or "-"
    for a look-alike that must find none of the signs written beside the examples)."""
    path = Path(__file__).parents[1] / "cases" / "classic_sign_examples.tsv"
    rows = [line.split("\t")[:2] for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]
    return [(s.strip(), e.strip()) for s, e in rows]


_EXAMPLE_SIGNS = {e for _, e in _examples() if e != "-"}


@pytest.mark.parametrize("text, expected", _examples())
def test_the_example_sentences_of_the_table(signs, text, expected):
    """Signs of the later passes read the wording a vignette uses; their look-alikes stay unread."""
    got = [m.spec.id for m in signs.find(text)]
    if expected == "-":
        assert not set(got) & _EXAMPLE_SIGNS, got
    else:
        assert expected in got, got


def test_a_denial_ends_at_and_has(signs):
    """"and has" starts a new statement: the denial before it does not reach the sign after it, and a denial after it
    still counts."""
    assert [m.spec.id for m in signs.find("She has no fever and has Koplik spots on the buccal mucosa.")] == \
        ["koplik-spots"]
    assert not signs.find("He has a cough and has no Koplik spots.")
    assert not signs.find("No fever, no Koplik spots.")

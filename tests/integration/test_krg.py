"""KRG: de-duplicated, ordered, formatted references from real MedQuAD answers and Disease Ontology triples."""
from __future__ import annotations

import csv
import html
import tarfile
import xml.etree.ElementTree as ET
from functools import lru_cache

import pytest

from agents.krg import KRG, jaccard, shingles
from agents.types import Evidence


try:
    from support.data import mirror_file as _mirror_file
except ImportError:  # pragma: no cover - run from the repository root
    from tests.support.data import mirror_file as _mirror_file


@lru_cache(maxsize=None)
def _medquad_doc(member_suffix: str) -> tuple[str, str, list[str]]:
    """(focus, url, answers) of one MedQuAD XML file of the tarball."""
    with tarfile.open(_mirror_file("medquad")) as tf:
        for m in tf:
            if m.name.endswith(member_suffix):
                root = ET.fromstring(tf.extractfile(m).read())
                answers = [" ".join(html.unescape(a.text or "").split()) for a in root.iter("Answer")]
                return root.findtext("Focus") or "", root.get("url") or "", answers
    raise AssertionError(f"{member_suffix} not in MedQuAD")


def _do_triples(disease: str) -> list[tuple[str, str, str, str]]:
    p = _mirror_file("do-disease-symptom")
    with open(p, newline="", encoding="utf-8") as f:
        return [(r["disease_id"], r["disease_label"], r["symptom_id"], r["symptom_label"])
                for r in csv.DictReader(f, delimiter="\t") if r["disease_label"] == disease]


def _chunk(doc: str, answer_no: int, text: str, start: int, end: int, score: float, role: str = "B",
           focus: str = "", url: str = "", org: str = "NHLBI") -> Evidence:
    return Evidence(id=f"{role}:{doc}_{answer_no}#{start}", role=role, kind="chunk", text=text[start:end],
                    score=score, title=focus, url=url, organisation=org, license="CC-BY-4.0",
                    source=f"MedQuAD/{org}", doc_id=f"{doc}_{answer_no}", span=(start, end))


def _triple(row, score: float) -> Evidence:
    did, dname, sid, sname = row
    return Evidence(id=f"G:{did}|has_symptom|{sid}", role="G", kind="triple", text=f"{dname} has symptom {sname}",
                    score=score, title=dname, source="Disease Ontology", organisation="Disease Ontology project",
                    license="CC0-1.0", concept_ids=[did, sid])


@pytest.fixture(scope="module")
def asthma():
    return _medquad_doc("8_NHLBI_QA_XML/0000010.xml")


@pytest.fixture(scope="module")
def copd():
    focus, url, answers = _medquad_doc("8_NHLBI_QA_XML/0000021.xml")
    return focus, url, answers


def test_duplicates_collapse(asthma, copd):
    focus, url, ans = asthma
    text = ans[0]
    assert len(text) > 1200
    a = _chunk("0000010", 1, text, 0, 600, 0.8, focus=focus, url=url)
    a_overlap = _chunk("0000010", 1, text, 450, 1100, 0.7, focus=focus, url=url)      # same doc, overlapping
    a_copy = Evidence(**{**a.model_dump(), "id": "O:copy_of_0000010_1#0", "role": "O", "doc_id": "elsewhere",
                         "span": None, "score": 0.5})                                 # same text, other source
    words = a.text.split()
    words[40] = "considerably" if words[40] != "considerably" else "notably"
    near = Evidence(**{**a.model_dump(), "id": "O:near_0000010#0", "role": "O", "doc_id": "near",
                       "text": " ".join(words), "span": None, "score": 0.4})        # near-duplicate
    assert 0.9 <= jaccard(shingles(a.text), shingles(near.text)) < 1.0
    cfocus, curl, cans = copd
    other = _chunk("0000021", 1, cans[0], 0, 500, 0.6, focus=cfocus, url=curl)
    later = _chunk("0000010", 1, text, 1100, 1200, 0.3, focus=focus, url=url)         # same doc, no overlap

    refs, mapping = KRG().references([a, a_overlap, a_copy, near, other, later])
    assert len(refs) == 3
    first = refs[0]
    assert set(first.evidence_ids) == {a.id, a_overlap.id, a_copy.id, near.id}
    assert first.span == (0, 1100)               # union of the overlapping spans of the same document
    assert {mapping[x] for x in first.evidence_ids} == {1}
    assert mapping[other.id] == 2 and mapping[later.id] == 3
    assert [r.n for r in refs] == [1, 2, 3]


def test_near_duplicate_threshold_respected(asthma):
    focus, url, ans = asthma
    a = _chunk("0000010", 1, ans[0], 0, 600, 0.8, focus=focus, url=url)
    words = a.text.split()
    half = " ".join(words[: len(words) // 2] + ["different"] * (len(words) - len(words) // 2))
    b = Evidence(**{**a.model_dump(), "id": "O:half#0", "doc_id": "x", "text": half, "span": None})
    refs, _ = KRG().references([a, b], near_dup_threshold=0.9)
    assert len(refs) == 2
    refs, _ = KRG().references([a, b], near_dup_threshold=0.3)
    assert len(refs) == 1


def test_order_by_score_then_cited_first(asthma, copd):
    focus, url, ans = asthma
    cfocus, curl, cans = copd
    e1 = _chunk("0000010", 1, ans[0], 0, 400, 0.2, focus=focus, url=url)
    e2 = _chunk("0000021", 1, cans[0], 0, 400, 0.9, focus=cfocus, url=curl)
    e3 = _chunk("0000010", 2, ans[1], 0, 300, 0.5, focus=focus, url=url)
    refs, mapping = KRG().references([e1, e2, e3])
    assert [r.evidence_ids[0] for r in refs] == [e2.id, e3.id, e1.id]
    assert [r.score for r in refs] == sorted((r.score for r in refs), reverse=True)
    # cited first (span-suffixed citation resolves to its evidence), then by score
    refs, mapping = KRG().references([e1, e2, e3], cited_ids=[f"{e1.id}:10-80", "B:unknown#0"])
    assert refs[0].evidence_ids == [e1.id]
    assert mapping[e1.id] == 1 and mapping[f"{e1.id}:10-80"] == 1
    assert mapping[e2.id] == 2 and mapping[e3.id] == 3
    assert "B:unknown#0" not in mapping


def test_kg_triples_group_by_source_and_subject(asthma):
    rows = _do_triples("asthma")
    assert len(rows) >= 3
    trip = [_triple(r, 0.9 - 0.1 * i) for i, r in enumerate(rows[:3])]
    focus, url, ans = asthma
    chunk = _chunk("0000010", 1, ans[0], 0, 400, 0.5, focus=focus, url=url)
    refs, mapping = KRG().references([chunk] + trip)
    assert len(refs) == 2
    kg = refs[0]
    assert set(kg.evidence_ids) == {t.id for t in trip}
    assert kg.source == "Disease Ontology"
    assert kg.title.startswith("asthma: has symptom ")
    for r in rows[:3]:
        assert f"has symptom {r[3]}" in kg.title
    assert kg.url == "https://disease-ontology.org/?id=DOID:2841"
    line = kg.format()
    assert line.startswith("[1] asthma: has symptom") and "Disease Ontology" in line and "CC0-1.0" in line
    assert {mapping[t.id] for t in trip} == {1} and mapping[chunk.id] == 2


def test_formatting_has_source_title_url_license(asthma):
    focus, url, ans = asthma
    e = _chunk("0000010", 1, ans[0], 120, 480, 0.7, focus=focus, url=url)
    refs, _ = KRG().references([e])
    line = refs[0].format()
    assert line.startswith("[1] Asthma.")
    for part in ("MedQuAD/NHLBI", "NHLBI", url, "license: CC-BY-4.0", "chars 120-480"):
        assert part in line, part
    assert url.startswith("http")


def test_missing_metadata_falls_back(asthma):
    _, _, ans = asthma
    bare = Evidence(id="O:bare#0", role="O", kind="chunk", text=ans[2][:300], score=0.1)
    refs, mapping = KRG().references([bare, bare])          # the same evidence twice: one reference
    assert len(refs) == 1 and mapping == {"O:bare#0": 1}
    assert refs[0].source == "Web source" and refs[0].title.endswith("...")
    assert KRG().references([]) == ([], {})

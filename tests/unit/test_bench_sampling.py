"""Benchmark datasets without data: seeded stratified sampling, user JSONL/CSV files, the loader's errors."""
from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from types import SimpleNamespace

import networkx as nx
import pytest

from clinicalrag.bench.datasets import (
    DATASETS,
    DatasetError,
    allocate,
    ddxplus_conditions_in_kg,
    load_dataset,
    read_user_file,
    sample,
    stratifiable,
)
from clinicalrag.bench.records import Case


def make(*groups: tuple[str, int]) -> list[Case]:
    """Cases with the given label counts, interleaved so that no label sits in one block."""
    labels = [lab for lab, n in groups for _ in range(n)]
    random.Random(99).shuffle(labels)
    return [Case(id=f"c{i}", text=f"case {i}", label=lab) for i, lab in enumerate(labels)]


def counts(cases: list[Case]) -> Counter:
    return Counter(c.label for c in cases)


# ---------------------------------------------------------------------------------------------- sampling
@pytest.mark.parametrize("limit", [None, 100, 101, 10_000])
def test_no_limit_or_limit_at_least_n_returns_all_cases_unchanged(limit):
    cases = make(("a", 60), ("b", 40))
    assert sample(cases, limit, seed=5) == cases


def test_same_seed_same_sample_and_other_seeds_differ():
    cases = make(("a", 50), ("b", 30), ("c", 20))
    first = sample(cases, 20, seed=1)
    assert sample(cases, 20, seed=1) == first
    assert sample(list(cases), 20, seed=1) == first
    others = {tuple(c.id for c in sample(cases, 20, seed=s)) for s in range(2, 8)}
    assert len(others | {tuple(c.id for c in first)}) > 1


def test_output_keeps_the_original_order():
    cases = make(("a", 50), ("b", 30), ("c", 20))
    for seed in range(5):
        positions = [int(c.id[1:]) for c in sample(cases, 17, seed=seed)]
        assert positions == sorted(positions)


@pytest.mark.parametrize("limit, expected", [(10, {"a": 6, "b": 3, "c": 1}), (20, {"a": 12, "b": 6, "c": 2}),
                                             (50, {"a": 30, "b": 15, "c": 5})])
def test_allocation_is_proportional(limit, expected):
    cases = make(("a", 60), ("b", 30), ("c", 10))
    for seed in range(3):
        assert counts(sample(cases, limit, seed=seed)) == expected


def test_largest_remainder_rounding_and_seeded_ties():
    # quotas 2.5 / 1.5 / 1.0: the one case left goes to a or b, by the seed; the total is exact
    seen = set()
    for seed in range(20):
        alloc = allocate([5, 3, 2], 5, random.Random(seed))
        assert sum(alloc) == 5 and alloc[2] == 1 and alloc in ([3, 1, 1], [2, 2, 1])
        seen.add(tuple(alloc))
    assert len(seen) == 2
    # quotas 4.2 / 2.4 / 1.4 / 1.0 -> 4 / 2 / 1 / 1, and the ninth to b or c (remainders .4), never to a (.2)
    for seed in range(10):
        alloc = allocate([42, 24, 14, 10], 9, random.Random(seed))
        assert alloc[0] == 4 and alloc[3] == 1 and alloc[1:3] in ([3, 1], [2, 2])


def test_every_label_gets_a_case_when_the_limit_allows():
    cases = make(("a", 97), ("b", 1), ("c", 1), ("d", 1))
    for seed in range(5):
        assert counts(sample(cases, 10, seed=seed)) == {"a": 7, "b": 1, "c": 1, "d": 1}
    # quotas 3.5 / 1.0 / 0.5: rounding may give c nothing; the minimum of one takes it from a
    for seed in range(10):
        assert allocate([7, 2, 1], 5, random.Random(seed)) == [3, 1, 1]


def test_limit_below_the_number_of_labels():
    cases = make(*[(lab, 10) for lab in "abcde"])
    got = sample(cases, 3, seed=4)
    assert len(got) == 3 and len(counts(got)) == 3
    assert sample(cases, 3, seed=4) == got


@pytest.mark.parametrize("seed", range(10))
def test_sample_size_is_always_the_limit(seed):
    rng = random.Random(seed)
    groups = [(f"l{i}", rng.randint(1, 40)) for i in range(rng.randint(2, 12))]
    cases = make(*groups)
    if not stratifiable(cases):
        return
    for limit in (1, 2, len(groups), len(cases) // 2, len(cases) - 1):
        got = sample(cases, limit, seed=seed)
        assert len(got) == limit and len({c.id for c in got}) == limit
        if limit >= len(groups):
            assert set(counts(got)) == {lab for lab, _ in groups}


def test_distinct_labels_give_a_simple_random_sample():
    cases = [Case(id=f"q{i}", text="t", label=f"answer {i}") for i in range(50)]
    assert not stratifiable(cases)
    got = sample(cases, 7, seed=3)
    assert len(got) == 7 and got == sample(cases, 7, seed=3)
    assert [c.id for c in got] == sorted((c.id for c in got), key=lambda x: int(x[1:]))


@pytest.mark.parametrize("limit", [0, -3, 2.5, True, "3"])
def test_bad_limits_are_refused(limit):
    with pytest.raises(DatasetError, match="limit"):
        sample(make(("a", 5), ("b", 5)), limit, seed=0)


# -------------------------------------------------------------------------------------------- user files
def write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_jsonl_user_file(tmp_path):
    rows = [
        {"text": "Fever and cough for 3 days.", "label": "pneumonia", "id": "p1", "differential": ["bronchitis"]},
        {"text": "Which is it?", "label": "Asthma", "options": {"A": "COPD", "B": "Asthma"}, "answer": "B"},
        {"text": "Which one?", "label": "Gout", "options": ["Gout", "Pseudogout"], "answer": "gout", "src": "x"},
        {"text": "And this?", "label": "Migraine", "options": ["Tension headache", "Migraine"]},
    ]
    lines = [json.dumps(rows[0]), "", "   ", *map(json.dumps, rows[1:])]
    cases = read_user_file(write(tmp_path, "mine.jsonl", "\n".join(lines) + "\n"))
    assert [c.id for c in cases] == ["p1", "mine-4", "mine-5", "mine-6"]       # default id: the line number
    assert cases[0].differential == ("bronchitis",) and cases[0].options is None and cases[0].answer is None
    assert cases[1].options == {"A": "COPD", "B": "Asthma"} and cases[1].answer == "B"
    assert cases[2].options == {"A": "Gout", "B": "Pseudogout"} and cases[2].answer == "A"   # answer by text
    assert cases[2].meta == {"src": "x"}
    assert cases[3].answer == "B"                                             # inferred from the label


@pytest.mark.parametrize("line, msg", [
    ('{"text": "fever"}', "line 2: missing 'label'"),
    ('{"label": "flu", "text": "  "}', "line 2: missing 'text'"),
    ("{not json", "line 2: not JSON"),
    ('["a", "b"]', "line 2: expected a JSON object"),
    ('{"text": "t", "label": "x", "options": {"A": "a", "B": "b"}, "answer": "C"}', "line 2: answer 'C'"),
    ('{"text": "t", "label": "x", "options": ["a", "b"]}', "line 2: options given without an 'answer'"),
    ('{"text": "t", "label": "x", "answer": "A"}', "line 2: 'answer' given without 'options'"),
    ('{"text": "t", "label": "x", "options": "A) a B) b", "answer": "A"}', "line 2: 'options' must be"),
    ('{"text": "t", "label": "x", "differential": [1, 2]}', "line 2: 'differential' must be"),
])
def test_bad_jsonl_rows_name_the_line(tmp_path, line, msg):
    path = write(tmp_path, "bad.jsonl", '{"text": "ok", "label": "ok"}\n' + line + "\n")
    with pytest.raises(DatasetError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        read_user_file(path)


def test_csv_user_file(tmp_path):
    text = ('text,label,id,options,answer\n'
            '"Fever, cough",pneumonia,,,\n'
            '\n'
            '"Chest pain\nradiating to the arm",MI,mi-1,"{""A"": ""MI"", ""B"": ""GERD""}",A\n')
    cases = read_user_file(write(tmp_path, "mine.csv", text))
    assert [c.id for c in cases] == ["mine-1", "mi-1"]
    assert cases[0].text == "Fever, cough" and cases[0].options is None
    assert cases[1].text == "Chest pain\nradiating to the arm" and cases[1].answer == "A"


@pytest.mark.parametrize("text, msg", [
    ("text,diagnosis\nfever,flu\n", r"missing column\(s\) \['label'\]"),
    ("text,label\nfever,flu\n,flu\n", r"row 2 \(line 3\): missing 'text'"),
    ('text,label,options,answer\nfever,flu,{"A": oops},A\n', r"row 1 \(line 2\): column 'options' is not JSON"),
    ("text,label\nfever,flu,extra\n", r"row 1 \(line 2\): more fields than columns"),
])
def test_bad_csv_rows_name_the_row(tmp_path, text, msg):
    with pytest.raises(DatasetError, match=msg):
        read_user_file(write(tmp_path, "bad.csv", text))


def test_load_dataset_from_a_user_file(tmp_path):
    lines = [json.dumps({"text": f"case {i}", "label": "ab"[i % 2], "options": ["x", "y"], "answer": "A"})
             for i in range(10)]
    path = write(tmp_path, "mcq.jsonl", "\n".join(lines))
    for ref in (str(path), f"file:{path}"):
        ds = load_dataset(ref, limit=4, seed=2)
        assert ds.name == "file:mcq.jsonl" and ds.kind == "mcq" and ds.source_ids == []
        assert ds.total == 10 and ds.sampled and len(ds.cases) == 4 and ds.labels == ["a", "b"]
        assert ds.sha256 == {"mcq.jsonl": hashlib.sha256(path.read_bytes()).hexdigest()}
        assert ds.case_ids_sha256 == hashlib.sha256("\n".join(c.id for c in ds.cases).encode()).hexdigest()
        assert counts(ds.cases) == {"a": 2, "b": 2}
    full = load_dataset(str(path))
    assert not full.sampled and len(full.cases) == 10 and full.manifest()["size"] == 10


@pytest.mark.parametrize("ref, msg", [
    ("no-such-dataset", "unknown dataset 'no-such-dataset'; known: ddxplus"),
    ("missing.jsonl", "not found"),
    ("file:missing.txt", "not found"),
])
def test_unknown_names_and_missing_files(tmp_path, ref, msg):
    with pytest.raises(DatasetError, match=msg):
        load_dataset(str(tmp_path / ref) if ref.endswith(".jsonl") else ref)


def test_file_prefix_with_an_unsupported_type_and_other_file_errors(tmp_path):
    with pytest.raises(DatasetError, match=r"unsupported file type '\.txt'"):
        load_dataset(f"file:{write(tmp_path, 'cases.txt', 'x')}")
    with pytest.raises(DatasetError, match="no cases"):
        load_dataset(str(write(tmp_path, "empty.jsonl", "\n\n")))
    dup = "\n".join(json.dumps({"id": "same", "text": "t", "label": "l"}) for _ in range(2))
    with pytest.raises(DatasetError, match="duplicate case id 'same'"):
        load_dataset(str(write(tmp_path, "dup.jsonl", dup)))
    mixed = [json.dumps({"text": "t", "label": "x"}), json.dumps({"text": "t", "label": "x", "options": ["x"]})]
    with pytest.raises(DatasetError, match="some cases have options"):
        load_dataset(str(write(tmp_path, "mixed.jsonl", "\n".join(mixed))))
    with pytest.raises(DatasetError, match="limit"):
        load_dataset("ddxplus", limit=0)


def test_registry_entries_are_complete():
    assert set(DATASETS) == {"ddxplus", "symptom2disease", "medqa-mcq", "medqa-free", "cases"}
    for name, spec in DATASETS.items():
        assert spec.name == name and spec.kind in ("free", "mcq") and spec.description and spec.label_space
        assert callable(spec.loader)


def test_ddxplus_conditions_in_kg():
    g = nx.MultiDiGraph()
    g.add_node("DOID:2841", name="asthma", category="disease", sources=["do-humando"])
    assert not ddxplus_conditions_in_kg(SimpleNamespace(graph=g, report={"sources": ["do-humando"]}))
    g.add_node("DDX:asthma", name="Asthma", category="disease", sources=["ddxplus-conditions"])
    assert ddxplus_conditions_in_kg(SimpleNamespace(graph=g, report={}))
    assert ddxplus_conditions_in_kg(SimpleNamespace(graph=nx.MultiDiGraph(),
                                                    report={"sources": ["do-humando", "ddxplus-conditions"]}))

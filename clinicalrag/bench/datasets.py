"""Benchmark datasets: the registry, the loaders, sampling and user files.

Every dataset is read through the data layer (``knowledge.sources``: the catalogued source file, fetched from the
mirror or its URL when missing) and becomes a list of :class:`~clinicalrag.bench.records.Case`. Adding a dataset
is one loader function plus one line in ``DATASETS``.

=================  =====  ==================================================================================
name               kind   what
=================  =====  ==================================================================================
ddxplus            free   DDXPlus test sample: 2,611 synthetic patients rendered to English (49 conditions)
symptom2disease    free   1,200 first-person symptom descriptions, 24 diseases
medqa-mcq          mcq    MedQA-USMLE 4-option test questions that ask for the most likely diagnosis
medqa-free         free   the same questions without their options (the answer text is the label)
cases              free   the project's hand-written clinical vignettes (gold DOIDs in ``meta["gold_concepts"]``)
=================  =====  ==================================================================================

A user file (``*.jsonl``, ``*.csv`` or any path prefixed with ``file:``) is a dataset too; see
:func:`read_user_file` for the format.

MedQA diagnosis questions
    A MedQA question is kept when its *question sentence* -- the last sentence of the stem's last non-empty
    line, surrounding quotes removed -- asks for the most likely diagnosis itself (:data:`MEDQA_DIAGNOSIS`):
    "Which of the following is the most likely diagnosis?", "What is the most likely diagnosis in this
    patient?", "Which of the following diagnoses is most likely?", "The findings are most consistent with which
    diagnosis?", "This patient's presentation can best be explained by which of the following diagnoses?".
    Questions that name the diagnosis but ask for something else (the test that confirms it, its treatment,
    its mechanism, an associated finding) are left out, and so are "most likely cause of ..." questions, whose
    options are as often mechanisms, organisms or drugs as diagnoses. Of the 1,273 test questions, 123 qualify.
    The stem is kept exactly as given, question sentence included: a system sees what an examinee sees.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .matching import KIND_OF
from .records import Case

Kind = Literal["free", "mcq"]


class DatasetError(ValueError):
    """A dataset cannot be loaded: unknown name, missing file, malformed row (the message says which)."""


# ------------------------------------------------------------------------------------------------ shapes
@dataclass(frozen=True)
class DatasetSpec:
    name: str
    description: str
    source_ids: tuple[str, ...]          # catalog ids (knowledge.sources) the loader reads
    kind: Kind                           # "free": name the diagnosis; "mcq": pick an option
    label_space: str                     # what the labels are
    loader: Callable[[], list[Case]]
    files: Callable[[], list[Path]] | None = None   # files read besides the catalog sources

    def load(self) -> list[Case]:
        return self.loader()

    def paths(self) -> list[Path]:
        """Every file the loader reads (catalog sources fetched when missing)."""
        out = [source_path(sid) for sid in self.source_ids]
        return out + (self.files() if self.files else [])


@dataclass
class Dataset:
    name: str
    cases: list[Case]
    kind: Kind
    source_ids: list[str]
    sha256: dict[str, str]               # file name -> sha256 of each file read
    total: int                           # cases before sampling
    sampled: bool
    seed: int
    case_ids_sha256: str                 # sha256 of the (sampled) case ids joined by "\n"
    labels: list[str]                    # the label space (of the whole dataset), sorted
    warnings: list[str] = field(default_factory=list)

    def manifest(self) -> dict[str, Any]:
        """What a run manifest records about its dataset."""
        return {"name": self.name, "kind": self.kind, "source_ids": list(self.source_ids),
                "sha256": dict(self.sha256), "size": len(self.cases), "total": self.total,
                "sampled": self.sampled, "seed": self.seed, "case_ids_sha256": self.case_ids_sha256,
                "labels": len(self.labels)}


# ------------------------------------------------------------------------------------------ data layer
def source_path(source_id: str) -> Path:
    """The local path of a catalogued source file, fetched (mirror or download) when missing."""
    from knowledge import sources  # noqa: PLC0415  (the data layer; imported when a dataset is read)

    try:
        return Path(sources.ensure(source_id))
    except KeyError as exc:
        raise DatasetError(str(exc.args[0]) if exc.args else str(exc)) from None
    except (FileNotFoundError, OSError) as exc:
        raise DatasetError(f"source {source_id!r} is not available: {exc}") from None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------- loaders
def _load_ddxplus() -> list[Case]:
    from . import ddxplus  # noqa: PLC0415

    ev_path = source_path("ddxplus-evidences")
    try:
        evidences = ddxplus.read_evidences(ev_path)
    except (ValueError, OSError) as exc:
        raise DatasetError(f"{ev_path.name}: {exc}") from None
    path = source_path("ddxplus-test")
    try:
        return ddxplus.read_patients(path, evidences)
    except (ValueError, OSError) as exc:
        raise DatasetError(f"{path.name}: {exc}") from None


def _load_symptom2disease() -> list[Case]:
    path = source_path("symptom2disease")
    cases: list[Case] = []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        missing = {"index", "label", "text"} - set(reader.fieldnames or ())
        if missing:
            raise DatasetError(f"{path.name}: missing column(s) {sorted(missing)}")
        for i, row in enumerate(reader):
            # ids by row position: the file's own "index" restarts at 0 in each of its four parts
            label, text = (row.get(k) or "" for k in ("label", "text"))
            if not (label.strip() and text.strip()):
                raise DatasetError(f"{path.name} row {i} (line {reader.line_num}): empty label or text")
            cases.append(Case(id=f"s2d-{i}", text=text.strip(), label=label.strip(),
                              meta={"index": (row.get("index") or "").strip(), "row": i}))
    return cases


_Q = r"(?:which|what)(?: of the following)?"
MEDQA_DIAGNOSIS = re.compile(
    r"^(?:according to [^,]+, )?(?:"
    rf"{_Q} (?:is|was|would be) (?:the )?(?:(?:this |the )?patient's )?most (?:likely|probable) diagnosis\b"
    rf"|{_Q} diagnos[ie]s (?:is|are) (?:the )?most (?:likely|probable)\b"
    rf"|.*\b(?:consistent with|explained by) {_Q} diagnos[ie]s\?$"
    r")", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=\S)")


def question_sentence(stem: str) -> str:
    """The question an MCQ stem ends with: the last sentence of its last non-empty line, quotes removed."""
    lines = [ln.strip() for ln in stem.replace("\u2019", "'").splitlines() if ln.strip(" \t\"'")]
    last = lines[-1].strip(" \t\"'") if lines else ""
    return _SENTENCE_END.split(last)[-1].strip(" \"'")


def is_diagnosis_question(stem: str) -> bool:
    """Does the stem ask for the most likely diagnosis (the module's MedQA rule)?"""
    return bool(MEDQA_DIAGNOSIS.match(question_sentence(stem)))


@functools.lru_cache(maxsize=2)
def _medqa_rows(path: Path, mtime_ns: int) -> tuple[dict, ...]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DatasetError(f"{path.name} line {n}: not JSON ({exc})") from None
            q, options, idx = row.get("question"), row.get("options"), row.get("answer_idx")
            if not isinstance(q, str) or not isinstance(options, dict) or idx not in options:
                raise DatasetError(f"{path.name} line {n}: needs 'question', 'options' and an 'answer_idx' "
                                   "naming one of the options")
            row["_line"] = n
            rows.append(row)
    return tuple(rows)


def _medqa(mcq: bool) -> list[Case]:
    path = source_path("medqa")
    cases = []
    for row in _medqa_rows(path, path.stat().st_mtime_ns):
        if not is_diagnosis_question(row["question"]):
            continue
        letter = str(row["answer_idx"])
        options = {str(k): str(v).strip() for k, v in row["options"].items()}
        rid = row.get("realidx", row["_line"])
        cases.append(Case(id=f"medqa-{rid}", text=row["question"], label=options[letter],
                          options=options if mcq else None, answer=letter if mcq else None,
                          meta={"step": row.get("meta_info"), "line": row["_line"]}))
    return cases


def _cases_file() -> Path:
    path = Path(__file__).resolve().parents[2] / "tests" / "cases" / "clinical_cases.yaml"
    if not path.is_file():
        raise DatasetError("the hand-written cases (tests/cases/clinical_cases.yaml) ship with the source "
                           "repository, not with the installed package; run from a checkout of the repository")
    return path


def _load_cases() -> list[Case]:
    import yaml  # noqa: PLC0415

    path = _cases_file()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DatasetError(f"{path.name}: not valid YAML ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise DatasetError(f"{path.name}: expected a mapping with a 'cases' list")
    cases = []
    for n, c in enumerate(data["cases"], start=1):
        if not isinstance(c, dict) or not c.get("id") or not str(c.get("presentation") or "").strip():
            raise DatasetError(f"{path.name} case {n}: needs 'id' and 'presentation'")
        gold = c.get("gold")
        if gold is None:
            continue                      # a question that is not a clinical presentation
        if not isinstance(gold, dict) or not gold.get("name"):
            raise DatasetError(f"{path.name} case {c['id']!r}: 'gold' needs a 'name'")
        concepts = [str(gold["doid"])] if gold.get("doid") else []
        concepts += [str(d) for d in c.get("acceptable") or [] if str(d) not in concepts]
        cases.append(Case(id=f"cases-{c['id']}", text=" ".join(str(c["presentation"]).split()),
                          label=str(gold["name"]),
                          meta={"gold_concepts": concepts, "tags": list(c.get("tags") or []),
                                "findings": list(c.get("findings") or [])}))
    return cases


DATASETS: dict[str, DatasetSpec] = {s.name: s for s in [
    DatasetSpec("ddxplus", "DDXPlus test sample: 2,611 synthetic patients rendered to English presentations",
                ("ddxplus-test", "ddxplus-evidences"), "free", "49 DDXPlus conditions", _load_ddxplus),
    DatasetSpec("symptom2disease", "Symptom2Disease: 1,200 first-person symptom descriptions",
                ("symptom2disease",), "free", "24 diseases", _load_symptom2disease),
    DatasetSpec("medqa-mcq", "MedQA-USMLE test questions asking for the most likely diagnosis, with 4 options",
                ("medqa",), "mcq", "the correct option's text (one of 4 options)", lambda: _medqa(mcq=True)),
    DatasetSpec("medqa-free", "MedQA-USMLE diagnosis questions without their options",
                ("medqa",), "free", "the correct option's text (open answer)", lambda: _medqa(mcq=False)),
    DatasetSpec("cases", "hand-written clinical vignettes of the project's tests (gold Disease Ontology ids)",
                (), "free", "Disease Ontology concepts (gold and acceptable DOIDs)", _load_cases,
                files=lambda: [_cases_file()]),
]}


# ---------------------------------------------------------------------------------------------- sampling
def _check_limit(limit: Any) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise DatasetError(f"limit must be a whole number, got {limit!r}")
    if limit < 1:
        raise DatasetError(f"limit must be at least 1, got {limit}")


def stratifiable(cases: Sequence[Case]) -> bool:
    """Do the labels allow a stratified sample: at least 2 labels and, on average, 2 cases or more per label?
    (Labels that are nearly all distinct, e.g. MedQA answers, give no strata: a simple random sample is drawn.)"""
    n_labels = len({c.label for c in cases})
    return n_labels >= 2 and 2 * n_labels <= len(cases)


def allocate(sizes: Sequence[int], limit: int, rng: random.Random) -> list[int]:
    """How many to draw from each stratum: proportional to its size, rounded by largest remainder (ties broken
    by ``rng``), and at least one per stratum when ``limit`` is at least the number of strata (taken from the
    strata that were rounded up the most). ``0 < limit <= sum(sizes)``."""
    n = sum(sizes)
    tiebreak = [rng.random() for _ in sizes]
    alloc = [limit * s // n for s in sizes]
    remainder = [limit * s % n for s in sizes]           # exact: quota = alloc + remainder / n
    left = limit - sum(alloc)
    for g in sorted(range(len(sizes)), key=lambda g: (-remainder[g], tiebreak[g]))[:left]:
        alloc[g] += 1
    if limit >= len(sizes):
        for g in sorted((g for g in range(len(sizes)) if alloc[g] == 0), key=lambda g: (-sizes[g], tiebreak[g])):
            # the donor: the stratum whose allocation most exceeds its exact quota (alloc * n - limit * size)
            donor = max((d for d in range(len(sizes)) if alloc[d] >= 2),
                        key=lambda d: (alloc[d] * n - limit * sizes[d], -tiebreak[d]))
            alloc[donor] -= 1
            alloc[g] += 1
    return alloc


def sample(cases: Sequence[Case], limit: int | None, seed: int = 0) -> list[Case]:
    """``limit`` cases drawn with ``seed``: stratified by label when the labels allow it (:func:`stratifiable`,
    :func:`allocate`), else a simple random sample. The same (cases, limit, seed) always gives the same sample,
    in the cases' original order. ``limit`` None or at least ``len(cases)``: all cases, unchanged."""
    if limit is None:
        return list(cases)
    _check_limit(limit)
    if limit >= len(cases):
        return list(cases)
    rng = random.Random(seed)
    if not stratifiable(cases):
        return [cases[i] for i in sorted(rng.sample(range(len(cases)), limit))]
    strata: dict[str, list[int]] = {}
    for i, c in enumerate(cases):
        strata.setdefault(c.label, []).append(i)
    labels = sorted(strata)
    alloc = allocate([len(strata[lab]) for lab in labels], limit, rng)
    chosen: list[int] = []
    for lab, k in zip(labels, alloc, strict=True):
        chosen.extend(rng.sample(strata[lab], k))
    return [cases[i] for i in sorted(chosen)]


# -------------------------------------------------------------------------------------------- user files
def _options(raw: Any, where: str) -> dict[str, str] | None:
    if raw is None or (isinstance(raw, (str, list, dict)) and not raw):
        return None
    if isinstance(raw, list):
        if len(raw) > 26:
            raise DatasetError(f"{where}: more than 26 options")
        raw = {chr(ord("A") + i): v for i, v in enumerate(raw)}
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: 'options' must be an object (letter -> text) or a list of texts")
    out = {}
    for k, v in raw.items():
        if not isinstance(v, (str, int, float)) or not str(v).strip() or not str(k).strip():
            raise DatasetError(f"{where}: option {k!r} must be a non-empty text")
        out[str(k).strip()] = str(v).strip()
    return out


def _answer_letter(options: dict[str, str], answer: Any, label: str, where: str) -> str:
    """The gold option letter from ``answer`` (a letter or an option's text), else from the label's text."""
    by_text = {v.casefold(): k for k, v in options.items()}
    if answer is not None and str(answer).strip():
        a = str(answer).strip()
        if a in options:
            return a
        if a.upper() in options:
            return a.upper()
        if a.casefold() in by_text:
            return by_text[a.casefold()]
        raise DatasetError(f"{where}: answer {a!r} is neither an option letter ({', '.join(options)}) "
                           "nor an option's text")
    if label.casefold() in by_text:
        return by_text[label.casefold()]
    raise DatasetError(f"{where}: options given without an 'answer', and the label matches no option")


def _user_case(obj: dict[str, Any], where: str, default_id: str) -> Case:
    text, label = obj.get("text"), obj.get("label")
    for key, value in (("text", text), ("label", label)):
        if value is None or (isinstance(value, str) and not value.strip()):
            raise DatasetError(f"{where}: missing '{key}'")
        if not isinstance(value, (str, int, float)):
            raise DatasetError(f"{where}: '{key}' must be a text")
    text, label = str(text).strip(), str(label).strip()
    cid = obj.get("id")
    cid = default_id if cid is None or not str(cid).strip() else str(cid).strip()
    options = _options(obj.get("options"), where)
    answer = obj.get("answer")
    if options is None and answer is not None and str(answer).strip():
        raise DatasetError(f"{where}: 'answer' given without 'options'")
    letter = _answer_letter(options, answer, label, where) if options else None
    diff = obj.get("differential") or []
    if isinstance(diff, str):
        diff = [diff]
    if not isinstance(diff, list) or not all(isinstance(d, str) for d in diff):
        raise DatasetError(f"{where}: 'differential' must be a list of names")
    meta = {k: v for k, v in obj.items()
            if k not in ("id", "text", "label", "options", "answer", "differential") and v not in (None, "")}
    return Case(id=cid, text=text, label=label, options=options, answer=letter,
                differential=tuple(d.strip() for d in diff if d.strip()), meta=meta)


def _read_jsonl(path: Path) -> list[Case]:
    cases = []
    with open(path, encoding="utf-8-sig") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path.name} line {n}"
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise DatasetError(f"{where}: not JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise DatasetError(f"{where}: expected a JSON object")
            cases.append(_user_case(obj, where, f"{path.stem}-{n}"))
    return cases


def _json_cell(value: str, column: str, where: str) -> Any:
    if not value.strip():
        return None
    try:
        return json.loads(value)
    except ValueError as exc:
        raise DatasetError(f"{where}: column '{column}' is not JSON ({exc})") from None


def _read_csv(path: Path) -> list[Case]:
    cases = []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        columns = [c.strip() for c in reader.fieldnames or ()]
        missing = [c for c in ("text", "label") if c not in columns]
        if missing:
            raise DatasetError(f"{path.name}: missing column(s) {missing} (found: {columns or 'none'})")
        reader.fieldnames = columns
        for n, row in enumerate(reader, start=1):
            where = f"{path.name} row {n} (line {reader.line_num})"
            if None in row:
                raise DatasetError(f"{where}: more fields than columns")
            if not any((v or "").strip() for v in row.values()):
                continue
            obj: dict[str, Any] = {k: (v or "").strip() for k, v in row.items()}
            if "options" in obj:
                obj["options"] = _json_cell(obj["options"], "options", where)
            if obj.get("differential", "").startswith("["):
                obj["differential"] = _json_cell(obj["differential"], "differential", where)
            cases.append(_user_case(obj, where, f"{path.stem}-{n}"))
    return cases


def read_user_file(path: Path | str) -> list[Case]:
    """Cases from a user file.

    ``*.jsonl``: one JSON object per line with ``text`` and ``label``; optional ``id`` (default
    ``<file stem>-<line number>``), ``options`` (an object letter -> text, or a list of texts lettered A, B, ...),
    ``answer`` (the option letter or the option's text; without it the label must be one of the options' texts),
    ``differential`` (a list of names); other keys go to ``meta``. ``*.csv``: a header with columns ``text``,
    ``label`` and optionally ``id``, ``options`` (JSON), ``answer``, ``differential`` (a JSON list or one name).
    Blank lines are skipped. Raises :class:`DatasetError` naming the line (or row) and what is wrong."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DatasetError(f"dataset file {str(path)!r} not found")
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        cases = _read_jsonl(p)
    elif suffix == ".csv":
        cases = _read_csv(p)
    else:
        raise DatasetError(f"{p.name}: unsupported file type {suffix or '(none)'!r}; use .jsonl or .csv")
    if not cases:
        raise DatasetError(f"{p.name}: no cases")
    return cases


# ------------------------------------------------------------------------------------------------- loading
def _user_path(name_or_path: str) -> str | None:
    if name_or_path.startswith("file:"):
        return name_or_path[len("file:"):]
    if name_or_path.lower().endswith((".jsonl", ".csv")):
        return name_or_path
    return None


def _check_ids(cases: Sequence[Case], name: str) -> None:
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise DatasetError(f"{name}: duplicate case id {c.id!r}")
        seen.add(c.id)


SPLITS = ("all", "dev", "test")


def split_of(case_id: str) -> str:
    """The fixed half a case belongs to: ``"dev"`` (weights and thresholds are chosen on it) or ``"test"`` (numbers
    are reported on it). A hash of the case id, so it never depends on sampling, order or seed."""
    return "dev" if hashlib.sha256(case_id.encode("utf-8")).digest()[0] % 2 == 0 else "test"


def load_dataset(name_or_path: str, *, limit: int | None = None, seed: int = 0, split: str = "all") -> Dataset:
    """A registered dataset (``DATASETS``) or a user file (``*.jsonl``, ``*.csv``, ``file:<path>``), restricted to
    one ``split`` half (:func:`split_of`) and sampled to ``limit`` cases with ``seed`` (see :func:`sample`).
    Raises :class:`DatasetError`."""
    if split not in SPLITS:
        raise DatasetError(f"unknown split {split!r}; splits: {', '.join(SPLITS)}")
    if limit is not None:
        _check_limit(limit)
    key = str(name_or_path).strip()
    user = _user_path(key)
    if user is not None:
        path = Path(user).expanduser()
        cases = read_user_file(path)
        name, kind_set = f"file:{path.name}", {c.options is not None for c in cases}
        if len(kind_set) > 1:
            raise DatasetError(f"{path.name}: some cases have options and some do not; use one kind per file")
        kind: Kind = "mcq" if kind_set == {True} else "free"
        source_ids: list[str] = []
        files = [path]
    else:
        spec = DATASETS.get(key.lower())
        if spec is None:
            hint = " (a file needs a .jsonl or .csv name, or the 'file:' prefix)" if Path(key).exists() else ""
            raise DatasetError(f"unknown dataset {key!r}; known: {', '.join(DATASETS)}, or a .jsonl/.csv file{hint}")
        name, kind, source_ids = spec.name, spec.kind, list(spec.source_ids)
        files = spec.paths()
        try:
            cases = spec.load()
        except OSError as exc:
            raise DatasetError(f"{name}: cannot read its files ({exc})") from None
        if not cases:
            raise DatasetError(f"{name}: no cases")
    _check_ids(cases, name)
    if split != "all":
        cases = [c for c in cases if split_of(c.id) == split]
        name = f"{name}/{split}"
    chosen = sample(cases, limit, seed)
    labels = sorted({c.label for c in cases})
    warnings = []
    if limit is not None and limit < len(cases):
        if not stratifiable(cases):
            warnings.append(f"{name}: labels are (nearly) all distinct; a simple random sample of {limit} was drawn")
        elif limit < len(labels):
            missing = len(labels) - len({c.label for c in chosen})
            warnings.append(f"{name}: limit {limit} is below the {len(labels)} labels; {missing} labels have no case")
    ids = "\n".join(c.id for c in chosen)
    return Dataset(name=name, cases=chosen, kind=kind, source_ids=source_ids,
                   sha256={p.name: _sha256(p) for p in files}, total=len(cases),
                   sampled=len(chosen) < len(cases), seed=seed,
                   case_ids_sha256=hashlib.sha256(ids.encode("utf-8")).hexdigest(), labels=labels,
                   warnings=warnings)


# ------------------------------------------------------------------------------------- labels and the KG
@functools.lru_cache(maxsize=1)
def _label_table() -> dict[str, dict[str, list[str]]]:
    from importlib.resources import files  # noqa: PLC0415

    import yaml  # noqa: PLC0415

    data = yaml.safe_load(files("clinicalrag.bench").joinpath("labels.yaml").read_text(encoding="utf-8")) or {}
    return {ds: {str(k): _label_ids(v, f"{ds}: {k}") for k, v in (table or {}).items()} for ds, table in data.items()}


def _label_ids(value: Any, where: str) -> list[str]:
    """A label's concept ids: a list, or ``{kind_of: [...]}`` for a label naming a class of diseases (each id then
    carries the matcher's class suffix, so any disease under it meets the label)."""
    if isinstance(value, dict):
        if set(value) != {"kind_of"}:
            raise DatasetError(f"labels.yaml, {where}: a mapping must be {{kind_of: [ids]}}, got {sorted(value)}")
        return [f"{x}{KIND_OF}" for x in (value["kind_of"] or [])]
    return [str(x) for x in (value or [])]


def label_aliases(dataset_name: str) -> dict[str, list[str]]:
    """Gold label -> the Disease Ontology ids (``DOID:...``) of the KG concepts it names, for the datasets whose
    labels are names (``ddxplus``, ``symptom2disease``); {} for the others. An empty list: the KG has no concept
    that matches the label (the label is then matched by name)."""
    table = _label_table().get(dataset_name, {})
    return {k: list(v) for k, v in table.items()}


def ddxplus_conditions_in_kg(kg: Any) -> bool:
    """Does the knowledge graph hold the DDXPlus conditions (the optional ``ddxplus-conditions`` source)?
    The DDXPlus benchmark is generated from them, so a run on ``ddxplus`` with them in the KG is not fair."""
    report = getattr(kg, "report", None) or {}
    if "ddxplus-conditions" in (report.get("sources") or ()):
        return True
    return any(nid.startswith("DDX:") and "ddxplus-conditions" in (attrs.get("sources") or ())
               for nid, attrs in kg.graph.nodes(data=True))

"""Disease -> finding edges mined from the project's own reference texts (MedQuAD): the file format and the overlay.

The miner (``agents/miner.py``) reads the MedQuAD answers about a disease's symptoms, causes and tests, runs the
project's entity extractor on every sentence and keeps the affirmed findings. It writes what it found to a JSON-lines
file, which this module reads, checks and lays over the built knowledge graph. Nothing here extracts anything: the
knowledge layer only knows the format.

File format (UTF-8 JSON lines)
------------------------------
Line 1 is a header::

    {"format": "clinicalrag-mined-edges", "format_version": 1, "kg_version": "<base KG version mined against>",
     "miner": "<miner version>", "source": "medquad", ...}

(further header keys — the selection, counts, timing — are informative). Every further line is one edge::

    {"disease": "DOID:5844", "disease_name": "myocardial infarction",
     "finding": "SYMP:0000483", "finding_name": "chest pain",
     "relation": "has_symptom", "source": "medquad-mined",
     "doc_id": "NHLBI_0000060-4", "span": [120, 231], "sentence": "<answer text[120:231]>",
     "mention": [151, 161], "surface": "chest pain",
     "question_type": "symptoms", "organisation": "NHLBI", "focus": "Heart Attack", "url": "http://...",
     "linked_by": "cui", "n_sentences": 3, "n_docs": 2}

``span`` and ``mention`` are character offsets into the MedQuAD answer text (``knowledge.corpus.Document.text``, the
same text the reference chunks' spans index); ``sentence`` is ``text[span[0]:span[1]]`` and ``surface`` is
``text[mention[0]:mention[1]]``, inside the span. ``linked_by`` says how the page's focus was tied to the disease:
``cui`` (the focus's UMLS CUI is a cross-reference of the disease), ``xref`` (through a cross-referenced equivalent
concept) or ``name`` (the focus is a name or synonym of the disease). ``n_sentences``/``n_docs`` count the sentences
and pages that support the edge; the cited sentence is the best one.

The overlay (:func:`apply_overlay`, called by :func:`knowledge.kg.load_or_build`)
--------------------------------------------------------------------------------
Each mined edge becomes a ``has_symptom`` edge with ``source = "medquad-mined"`` and, in its attribute ``citation``,
the record's document id, span, sentence, organisation, focus, question type, URL and link method. When the graph
already links the disease to the finding (a curated ``has_symptom`` or ``has_phenotype`` edge, from any source), no
second edge is added: ``"medquad-mined"`` joins that edge's ``also_sources`` and the citation is attached to it, so
one fact stays one edge and the curated source stays primary. Edges whose disease or finding the graph does not have
are skipped (counted). The graph's version becomes ``<base version>+m<first 8 hex of the file digest>``, so every
cache keyed by the KG version (ranker index, retrieval index, disease pages, prior features) follows the edges.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .vocab import NCIT_LICENSE

log = logging.getLogger(__name__)

FORMAT = "clinicalrag-mined-edges"
FORMAT_VERSION = 1
SOURCE = "medquad-mined"
LICENSE = "CC-BY-4.0 (MedQuAD)"
DEFINITION_LICENSE = NCIT_LICENSE   # edges read from an NCI Thesaurus definition
RELATIONS = ("has_symptom",)
LINK_METHODS = ("cui", "xref", "name")
FINDING_CATEGORIES = ("symptom", "phenotype")
# existing disease -> finding relations a mined edge is recorded on instead of being added again
_CURATED_FINDING_RELATIONS = ("has_symptom", "has_phenotype")
# the record keys that go into an edge's ``citation`` attribute
CITATION_KEYS = ("doc_id", "span", "sentence", "mention", "surface", "question_type", "organisation", "focus", "url",
                 "linked_by", "n_sentences", "n_docs")


class MinedFormatError(ValueError):
    """A mined-edges file that does not follow the format; the message names the file and line."""


@dataclass
class MinedEdge:
    """One mined disease -> finding edge with the sentence that supports it (see the module docstring)."""

    disease: str
    finding: str
    doc_id: str
    span: tuple[int, int]
    sentence: str
    question_type: str
    organisation: str
    focus: str
    linked_by: str
    relation: str = "has_symptom"
    source: str = SOURCE
    disease_name: str = ""
    finding_name: str = ""
    mention: tuple[int, int] | None = None
    surface: str = ""
    url: str = ""
    n_sentences: int = 1
    n_docs: int = 1

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["span"] = list(self.span)
        d["mention"] = list(self.mention) if self.mention is not None else None
        return d

    def citation(self) -> dict[str, Any]:
        """The attributes a graph edge keeps of this record (``CITATION_KEYS``)."""
        d = self.to_dict()
        out = {k: d[k] for k in CITATION_KEYS if d.get(k) not in (None, "")}
        out["span"] = tuple(self.span)
        if self.mention is not None:
            out["mention"] = tuple(self.mention)
        return out


@dataclass
class MinedFile:
    header: dict[str, Any]
    edges: list[MinedEdge] = field(default_factory=list)

    @property
    def digest(self) -> str:
        return digest(self.edges)


# ------------------------------------------------------------------------------------------------ validation
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "disease": str, "finding": str, "relation": str, "source": str, "doc_id": str, "span": list, "sentence": str,
    "question_type": str, "organisation": str, "focus": str, "linked_by": str,
}
_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "disease_name": str, "finding_name": str, "mention": (list, type(None)), "surface": str, "url": str,
    "n_sentences": int, "n_docs": int,
}


def _span(value: Any, name: str) -> tuple[int, int]:
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in value)):
        raise ValueError(f"{name} must be [start, end] (two integers), not {value!r}")
    a, b = value
    if not 0 <= a < b:
        raise ValueError(f"{name} [{a}, {b}] must satisfy 0 <= start < end")
    return a, b


def edge_from_dict(d: Any) -> MinedEdge:
    """A :class:`MinedEdge` from one decoded line; ``ValueError`` saying what is wrong otherwise."""
    if not isinstance(d, dict):
        raise ValueError(f"an edge must be a JSON object, not {type(d).__name__}")
    missing = [k for k in _REQUIRED if k not in d]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}")
    unknown = sorted(set(d) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}")
    for k, t in {**_REQUIRED, **_OPTIONAL}.items():
        if k in d and not isinstance(d[k], t) or (t is int and isinstance(d.get(k), bool)):
            raise ValueError(f"field {k!r} has the wrong type ({type(d[k]).__name__})")
    for k in ("disease", "finding", "doc_id", "sentence"):
        if not d[k].strip():
            raise ValueError(f"field {k!r} is empty")
    if d["relation"] not in RELATIONS:
        raise ValueError(f"relation {d['relation']!r} is not one of {', '.join(RELATIONS)}")
    if d["source"] != SOURCE:
        raise ValueError(f"source must be {SOURCE!r}, not {d['source']!r}")
    if d["linked_by"] not in LINK_METHODS:
        raise ValueError(f"linked_by {d['linked_by']!r} is not one of {', '.join(LINK_METHODS)}")
    if d["disease"] == d["finding"]:
        raise ValueError("disease and finding are the same concept")
    span = _span(d["span"], "span")
    if len(d["sentence"]) != span[1] - span[0]:
        raise ValueError(f"sentence has {len(d['sentence'])} characters but span {list(span)} covers "
                         f"{span[1] - span[0]}")
    mention = None
    if d.get("mention") is not None:
        mention = _span(d["mention"], "mention")
        if not (span[0] <= mention[0] and mention[1] <= span[1]):
            raise ValueError(f"mention {list(mention)} lies outside span {list(span)}")
        surface = d.get("surface", "")
        if surface and d["sentence"][mention[0] - span[0]:mention[1] - span[0]] != surface:
            raise ValueError(f"surface {surface!r} is not the sentence's text at mention {list(mention)}")
    for k in ("n_sentences", "n_docs"):
        if k in d and d[k] < 1:
            raise ValueError(f"{k} must be at least 1")
    return MinedEdge(disease=d["disease"], finding=d["finding"], doc_id=d["doc_id"], span=span,
                     sentence=d["sentence"], question_type=d["question_type"], organisation=d["organisation"],
                     focus=d["focus"], linked_by=d["linked_by"], relation=d["relation"], source=d["source"],
                     disease_name=d.get("disease_name", ""), finding_name=d.get("finding_name", ""),
                     mention=mention, surface=d.get("surface", ""), url=d.get("url", ""),
                     n_sentences=d.get("n_sentences", 1), n_docs=d.get("n_docs", 1))


def _check_header(h: Any) -> dict[str, Any]:
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        raise ValueError(f"the first line must be the header {{\"format\": \"{FORMAT}\", ...}}")
    if h.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"format_version {h.get('format_version')!r} is not {FORMAT_VERSION}")
    return h


# ------------------------------------------------------------------------------------------------ read / write
def read(path: Path | str) -> MinedFile:
    """Read and validate a mined-edges file. A bad line raises :class:`MinedFormatError` naming the file and line;
    a repeated (disease, relation, finding) is an error too (the miner writes one edge per pair)."""
    path = Path(path)
    header: dict[str, Any] | None = None
    edges: list[MinedEdge] = []
    seen: dict[tuple[str, str, str], int] = {}
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            if not line.strip():
                if header is None:
                    raise MinedFormatError(f"{path}, line {no}: empty line before the header")
                continue
            try:
                obj = json.loads(line)
                if header is None:
                    header = _check_header(obj)
                    continue
                e = edge_from_dict(obj)
            except ValueError as exc:      # json.JSONDecodeError is a ValueError
                raise MinedFormatError(f"{path}, line {no}: {exc}") from None
            key = (e.disease, e.relation, e.finding)
            if key in seen:
                raise MinedFormatError(f"{path}, line {no}: edge {e.disease} {e.relation} {e.finding} repeats "
                                       f"line {seen[key]}")
            seen[key] = no
            edges.append(e)
    if header is None:
        raise MinedFormatError(f"{path}, line 1: empty file (no header)")
    return MinedFile(header, edges)


def write(path: Path | str, edges: Iterable[MinedEdge], header: dict[str, Any] | None = None) -> Path:
    """Write edges (atomically) after checking each one as :func:`read` would; returns the path. ``header`` adds
    informative keys (``kg_version``, ``miner``, counts, ...) to the format's own."""
    from ..atomic import writing  # noqa: PLC0415

    path = Path(path)
    edges = list(edges)
    seen: set[tuple[str, str, str]] = set()
    for i, e in enumerate(edges):
        try:
            edge_from_dict(e.to_dict())
        except ValueError as exc:
            raise MinedFormatError(f"edge {i} ({e.disease} -> {e.finding}): {exc}") from None
        key = (e.disease, e.relation, e.finding)
        if key in seen:
            raise MinedFormatError(f"edge {i}: {e.disease} {e.relation} {e.finding} appears twice")
        seen.add(key)
    head = {"format": FORMAT, "format_version": FORMAT_VERSION, "source": "medquad", "edges": len(edges),
            "digest": digest(edges)}
    head.update({k: v for k, v in (header or {}).items() if k not in ("format", "format_version", "digest")})
    with writing(path, "w", "utf-8") as fh:
        fh.write(json.dumps(head, ensure_ascii=False, sort_keys=True) + "\n")
        for e in edges:
            fh.write(json.dumps(e.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
    return path


def iter_lines(edges: Iterable[MinedEdge]) -> Iterator[str]:
    for e in edges:
        yield json.dumps(e.to_dict(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def digest(edges: Iterable[MinedEdge]) -> str:
    """sha256 over the edges' canonical JSON (not the header: re-mining the same edges gives the same digest)."""
    h = hashlib.sha256(f"{FORMAT}/{FORMAT_VERSION}".encode())
    for line in iter_lines(edges):
        h.update(b"\n")
        h.update(line.encode("utf-8"))
    return h.hexdigest()


def default_path(base_version: str) -> Path:
    """Where the mined edges for a base knowledge graph live: next to the graph artefact, one file per base
    version (a rebuilt graph with other sources needs its own mining)."""
    from .. import paths  # noqa: PLC0415

    return paths.build_dir() / "kg" / f"medquad-mined-{base_version}.jsonl"


def mined_version(base_version: str, file_digest: str) -> str:
    return f"{base_version}+m{file_digest[:8]}"


# ------------------------------------------------------------------------------------------------ overlay
def license_of(question_type: str) -> str:
    """The license of the text an edge was read from: a MedQuAD answer, or (question type "definition") an NCI
    Thesaurus definition."""
    return DEFINITION_LICENSE if question_type == "definition" else LICENSE


def apply_overlay(kg: Any, mined: MinedFile) -> dict[str, Any]:
    """Add the mined edges to ``kg`` (a :class:`knowledge.kg.KnowledgeGraph`) in place, set its version to
    :func:`mined_version` and return the counts (also stored as ``kg.report["medquad_mined"]``)."""
    g = kg.graph
    nodes = g.nodes
    counts = {"edges": 0, "added": 0, "on_existing_edges": 0, "skipped_unknown_concept": 0,
              "skipped_not_a_finding": 0}
    diseases: set[str] = set()
    findings: set[str] = set()
    docs: set[str] = set()
    for e in mined.edges:
        if e.disease not in g or e.finding not in g:
            counts["skipped_unknown_concept"] += 1
            continue
        if (nodes[e.disease].get("category") != "disease"
                or nodes[e.finding].get("category") not in FINDING_CATEGORIES):
            counts["skipped_not_a_finding"] += 1
            continue
        cit = e.citation()
        keydict = g._succ[e.disease].get(e.finding) if hasattr(g, "_succ") else None
        existing = next((r for r in _CURATED_FINDING_RELATIONS if keydict and r in keydict), None)
        if existing is not None:
            # one fact, one edge: the curated source stays primary; the attribute dicts of a built graph are shared
            # between edges, so the edge gets its own copy before it changes
            cur = dict(keydict[existing])
            also = list(cur.get("also_sources") or ())
            if SOURCE not in also and cur.get("source") != SOURCE:
                also.append(SOURCE)
            cur["also_sources"] = also
            cur["citation"] = cit
            keydict[existing] = cur          # the same key dict serves the successor and predecessor views
            counts["on_existing_edges"] += 1
        else:
            g.add_edge(e.disease, e.finding, key=e.relation, relation=e.relation, source=SOURCE,
                       license=license_of(e.question_type), citation=cit)
            counts["added"] += 1
        counts["edges"] += 1
        diseases.add(e.disease)
        findings.add(e.finding)
        docs.add(e.doc_id)
    counts.update(diseases=len(diseases), findings=len(findings), docs=len(docs), digest=mined.digest,
                  file_kg_version=mined.header.get("kg_version"), miner=mined.header.get("miner"))
    base = getattr(kg, "base_version", None) or kg.version
    kg.base_version = base
    kg.version = mined_version(base, mined.digest)
    kg.report = {**(kg.report or {}), "medquad_mined": counts}
    return counts


def overlay(kg: Any, mined: bool | None = None, path: Path | str | None = None) -> dict[str, Any] | None:
    """What :func:`knowledge.kg.load_or_build` does after loading the built graph: lay the mined edges of ``path``
    (default :func:`default_path` of the graph's version) over it when ``mined`` is ``None`` and the file exists or
    ``mined`` is ``True`` (then a missing file raises ``FileNotFoundError``); nothing when ``mined`` is ``False``.
    Returns the overlay counts, or ``None`` when nothing was laid over."""
    import time  # noqa: PLC0415

    if mined is False:
        return None
    p = Path(path) if path is not None else default_path(getattr(kg, "base_version", None) or kg.version)
    if not p.is_file():
        if mined:
            raise FileNotFoundError(f"no mined-edges file at {p} (run `clinicalrag kg mine`)")
        return None
    t0 = time.perf_counter()
    counts = apply_overlay(kg, read(p))
    log.info("mined edges from %s: %d (%d added, %d on curated edges) in %.2fs", p, counts["edges"],
             counts["added"], counts["on_existing_edges"], time.perf_counter() - t0)
    return counts


__all__ = ["overlay", "FORMAT", "FORMAT_VERSION", "SOURCE", "LICENSE", "DEFINITION_LICENSE", "license_of",
           "CITATION_KEYS", "MinedEdge", "MinedFile",
           "MinedFormatError", "read", "write", "digest", "default_path", "mined_version", "apply_overlay",
           "edge_from_dict"]

"""What the index stores for each text: the indexed form of a chunk, a KG concept card, the rows that get a dense
vector, and the name key used by the entity index."""
from __future__ import annotations

from typing import Any, Sequence

from .config import IndexConfig


def _norm_key(s: str) -> str:
    return " ".join(s.lower().split())


def chunk_index_text(meta: dict[str, Any], text: str) -> str:
    """What gets embedded and BM25-indexed for a chunk: its focus and section label, then the text.
    (The verbatim MedQuAD question is *not* indexed: evaluation queries are built from it.)"""
    head = meta.get("focus") or meta.get("title") or ""
    sec = meta.get("section")
    if sec and meta.get("role") in ("B", "O"):
        head = f"{head} ({sec})" if head else sec
    return f"{head}: {text}" if head else text


def concept_card(kg: Any, concept: Any, cfg: IndexConfig) -> tuple[str, int]:
    """A short text card for a disease concept; returns (text, number of content items)."""
    syns = [s for s in (concept.synonyms or ()) if _norm_key(s) != _norm_key(concept.name)]
    syns = list(dict.fromkeys(syns))[: cfg.card_max_synonyms]
    definition = (concept.definition or "").strip()
    if len(definition) > cfg.card_max_definition_chars:
        cut = definition[: cfg.card_max_definition_chars]
        definition = cut[: cut.rfind(" ")] + " ..." if " " in cut else cut
    findings: list[tuple[float, str]] = []
    drugs: list[str] = []
    for rel in ("has_symptom", "has_phenotype"):
        for t in kg.neighbors(concept.id, relation=rel, direction="out"):
            w = t.weight if t.weight is not None else 0.0
            findings.append((float(w), t.object_name))
    for t in kg.neighbors(concept.id, relation="treated_by", direction="out"):
        drugs.append(t.object_name)
    findings.sort(key=lambda x: -x[0])
    names = list(dict.fromkeys(n for _, n in findings if n))[: cfg.card_max_findings]
    drugs = list(dict.fromkeys(d for d in drugs if d))[:4]
    content = int(bool(definition)) + len(names) + len(drugs)
    parts = [concept.name + (f" (also: {', '.join(syns)})" if syns else "") + "."]
    if definition:
        parts.append(definition)
    if names:
        parts.append("Findings: " + ", ".join(names) + ".")
    if drugs:
        parts.append("Treated with: " + ", ".join(drugs) + ".")
    return " ".join(parts), content


def dense_rows_of(chunks: Sequence[dict[str, Any]], unit: str) -> list[int]:
    """Rows of ``chunks`` that get a dense vector: every chunk, or ("lead") the first chunk of each document."""
    if unit == "chunk":
        return list(range(len(chunks)))
    if unit != "lead":
        raise ValueError(f"dense_unit must be 'lead' or 'chunk', not {unit!r}")
    seen: set[str] = set()
    rows = []
    for i, c in enumerate(chunks):
        doc = c["meta"].get("doc_id", c["id"].split("#")[0])
        if doc not in seen:
            seen.add(doc)
            rows.append(i)
    return rows


def _concept_license(c: Any) -> str:
    """Licenses of the catalog sources a concept comes from (e.g. "CC0-1.0; HPO license ...")."""
    from ..sources import CATALOG  # noqa: PLC0415

    lic = sorted({CATALOG[s].license for s in (getattr(c, "sources", None) or ()) if s in CATALOG})
    return "; ".join(lic)

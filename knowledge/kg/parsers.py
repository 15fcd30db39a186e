"""Readers for the knowledge-graph sources. Each returns plain Python records; ``build`` assembles them.

All readers stream their file once and keep only what the graph needs.
"""
from __future__ import annotations

import ast
import csv
import gzip
import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

csv.field_size_limit(10_000_000)


@dataclass
class Term:
    """One ontology term as read from a source file."""
    id: str
    name: str = ""
    definition: str | None = None
    synonyms: list[tuple[str, str]] = field(default_factory=list)   # (text, scope)
    parents: list[str] = field(default_factory=list)
    xrefs: list[str] = field(default_factory=list)                  # raw "PREFIX:local"
    alt_ids: list[str] = field(default_factory=list)
    obsolete: bool = False
    replaced_by: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- xref prefixes
_PREFIX_ALIASES = {
    "MIM": "OMIM", "OMIM": "OMIM", "ORDO": "ORPHA", "ORPHA": "ORPHA", "ORPHANET": "ORPHA",
    "MESH": "MESH", "MSH": "MESH", "UMLS_CUI": "UMLS_CUI", "UMLS": "UMLS_CUI", "NCI": "NCI", "NCIT": "NCI",
    "ICD10CM": "ICD10CM", "ICD-10": "ICD10", "ICD10": "ICD10", "ICD9CM": "ICD9CM", "ICD9CM_2005": "ICD9CM",
    "ICD-9": "ICD9", "ICD9": "ICD9", "ICDO": "ICDO", "ICD-O": "ICDO", "GARD": "GARD", "EFO": "EFO",
    "MEDDRA": "MEDDRA", "KEGG": "KEGG", "ICD11": "ICD11", "SNOMED_CT": "SNOMEDCT", "DOID": "DOID",
}


def split_xref(raw: str) -> tuple[str, str] | None:
    """``"MIM:264300"`` -> ``("OMIM", "264300")``; versioned SNOMED prefixes collapse to ``SNOMEDCT``.

    Returns None for xrefs we do not keep (URLs, internal accession numbers).
    """
    raw = raw.strip().strip('"')
    if ":" not in raw:
        return None
    prefix, local = raw.split(":", 1)
    prefix_u = prefix.upper()
    if prefix_u.startswith("SNOMEDCT"):
        return "SNOMEDCT", local.strip()
    norm = _PREFIX_ALIASES.get(prefix_u)
    if norm is None or not local.strip():
        return None
    return norm, local.strip()


def _tsv(path: Path, opener=open):
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader)
        header = [h.strip('"?') for h in header]
        for row in reader:
            if row:
                yield dict(zip(header, row))


# ---------------------------------------------------------------- Disease Ontology
def read_humando(path: Path) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """HumanDO.tsv: ``{doid: label}`` and ``[(doid, parent_label)]`` (the parent column holds a label)."""
    labels: dict[str, str] = {}
    parent_labels: list[tuple[str, str]] = []
    for row in _tsv(path):
        doid, label, parent = row["id"], row["label"], row.get("subClassOf", "")
        labels[doid] = label
        if parent:
            parent_labels.append((doid, parent))
    return labels, parent_labels


def read_do_facets(path: Path) -> tuple[dict[str, str], dict[str, set[str]], dict[str, str]]:
    """facets.tsv.gz: definitions, anatomy facet (UBERON, closure over the UBERON hierarchy), anatomy names."""
    definitions: dict[str, str] = {}
    anatomy: dict[str, set[str]] = defaultdict(set)
    anatomy_names: dict[str, str] = {}
    for row in _tsv(path, opener=gzip.open):
        doid = row["id"]
        definition = row.get("definition") or ""
        if definition and doid not in definitions:
            definitions[doid] = definition
        if row.get("facet") == "anatomy":
            uid = row.get("import_id", "")
            if uid.startswith("UBERON:"):
                anatomy[doid].add(uid)
                anatomy_names.setdefault(uid, row.get("import_keyword", "") or uid)
    return definitions, dict(anatomy), anatomy_names


def most_specific(closures: dict[str, set[str]]) -> dict[str, set[str]]:
    """Reduce per-item ancestor closures to their most specific members.

    The facet file lists every UBERON ancestor of a disease's site. Without the UBERON hierarchy we infer
    it from the data: term A is an ancestor of B when every disease annotated with B is also annotated with A.
    """
    with_term: dict[str, set[str]] = defaultdict(set)
    for item, terms in closures.items():
        for t in terms:
            with_term[t].add(item)
    implied: dict[str, set[str]] = {}          # B -> terms present wherever B is present (B's ancestors)
    for t, items in with_term.items():
        it = iter(items)
        common = set(closures[next(it)])
        for item in it:
            common &= closures[item]
            if len(common) == 1:
                break
        common.discard(t)
        implied[t] = common
    result: dict[str, set[str]] = {}
    for item, terms in closures.items():
        general: set[str] = set()
        for t in terms:
            # ancestors of t; a term implied both ways (same annotation set) is kept on both sides
            general |= {a for a in implied[t] if t not in implied.get(a, ())}
        result[item] = terms - general
    return result


def read_do_xrefs(path: Path) -> dict[str, list[str]]:
    xrefs: dict[str, list[str]] = defaultdict(list)
    for row in _tsv(path):
        xrefs[row["id"]].append(row["xref"])
    return dict(xrefs)


def read_disease_symptom(path: Path) -> list[tuple[str, str, str, str]]:
    """disease-symptom.tsv: ``[(doid, disease_label, symp_id, symptom_label)]``."""
    return [(r["disease_id"], r["disease_label"], r["symptom_id"], r["symptom_label"]) for r in _tsv(path)]


# ---------------------------------------------------------------- OBO (DO 2016, HPO)
_OBO_SYN = re.compile(r'^"((?:[^"\\]|\\.)*)"\s+(EXACT|RELATED|NARROW|BROAD)')
_OBO_DEF = re.compile(r'^"((?:[^"\\]|\\.)*)"')


def _obo_unescape(s: str) -> str:
    return s.replace('\\"', '"').replace("\\n", " ").replace("\\\\", "\\")


def read_obo(path: Path) -> dict[str, Term]:
    """Minimal OBO 1.2 reader: ``[Term]`` stanzas with id, name, def, synonym (with scope), xref, is_a,
    alt_id, is_obsolete, replaced_by."""
    terms: dict[str, Term] = {}
    cur: Term | None = None
    in_term = False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("["):
                if cur is not None:
                    terms[cur.id] = cur
                cur = None
                in_term = line == "[Term]"
                continue
            if not in_term:
                continue
            tag, _, value = line.partition(": ")
            if tag == "id":
                cur = Term(id=value.strip())
            elif cur is None:
                continue
            elif tag == "name":
                cur.name = value.strip()
            elif tag == "def":
                m = _OBO_DEF.match(value)
                cur.definition = _obo_unescape(m.group(1)) if m else None
            elif tag == "synonym":
                m = _OBO_SYN.match(value)
                if m:
                    cur.synonyms.append((_obo_unescape(m.group(1)), m.group(2)))
            elif tag == "xref":
                cur.xrefs.append(value.split(" ", 1)[0])
            elif tag == "is_a":
                cur.parents.append(value.split("!", 1)[0].strip().split(" ", 1)[0])
            elif tag == "alt_id":
                cur.alt_ids.append(value.strip())
            elif tag == "is_obsolete":
                cur.obsolete = value.strip() == "true"
            elif tag == "replaced_by":
                cur.replaced_by.append(value.strip())
    if cur is not None:
        terms[cur.id] = cur
    return terms


# ---------------------------------------------------------------- Symptom Ontology (OWL/RDF-XML)
_NS = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "obo": "http://purl.obolibrary.org/obo/",
    "oio": "http://www.geneontology.org/formats/oboInOwl#",
}


def _obo_iri_to_id(iri: str) -> str | None:
    tail = iri.rsplit("/", 1)[-1]
    if "_" not in tail:
        return None
    prefix, local = tail.split("_", 1)
    return f"{prefix}:{local}"


def read_symp_owl(path: Path) -> dict[str, Term]:
    terms: dict[str, Term] = {}
    rdf_about = f"{{{_NS['rdf']}}}about"
    rdf_res = f"{{{_NS['rdf']}}}resource"
    tree = ET.parse(path)
    for cls in tree.getroot().iterfind("owl:Class", _NS):
        tid = _obo_iri_to_id(cls.get(rdf_about, ""))
        if not tid or not tid.startswith("SYMP:"):
            continue
        t = Term(id=tid)
        for child in cls:
            tag = child.tag
            text = (child.text or "").strip()
            if tag == f"{{{_NS['rdfs']}}}label":
                t.name = text
            elif tag == f"{{{_NS['obo']}}}IAO_0000115":
                t.definition = text
            elif tag == f"{{{_NS['rdfs']}}}subClassOf":
                pid = _obo_iri_to_id(child.get(rdf_res, ""))
                if pid:
                    t.parents.append(pid)
            elif tag == f"{{{_NS['oio']}}}hasExactSynonym":
                t.synonyms.append((text, "EXACT"))
            elif tag == f"{{{_NS['oio']}}}hasRelatedSynonym":
                t.synonyms.append((text, "RELATED"))
            elif tag == f"{{{_NS['oio']}}}hasNarrowSynonym":
                t.synonyms.append((text, "NARROW"))
            elif tag == f"{{{_NS['oio']}}}hasBroadSynonym":
                t.synonyms.append((text, "BROAD"))
            elif tag == f"{{{_NS['oio']}}}hasDbXref":
                t.xrefs.append(text)
            elif tag == f"{{{_NS['oio']}}}hasAlternativeId":
                t.alt_ids.append(text)
            elif tag == f"{{{_NS['owl']}}}deprecated":
                t.obsolete = text.lower() == "true"
            elif tag == f"{{{_NS['obo']}}}IAO_0100001":
                rid = _obo_iri_to_id(child.get(rdf_res, "")) or text
                if rid:
                    t.replaced_by.append(rid)
        if t.name.startswith("obsolete "):
            t.obsolete = True
        terms[tid] = t
    return terms


# ---------------------------------------------------------------- HPO annotations
# Midpoints of the HPO frequency classes (HP:0040279 subtree).
HPO_FREQUENCY = {
    "HP:0040280": 1.0,     # Obligate (100%)
    "HP:0040281": 0.895,   # Very frequent (80-99%)
    "HP:0040282": 0.545,   # Frequent (30-79%)
    "HP:0040283": 0.17,    # Occasional (5-29%)
    "HP:0040284": 0.025,   # Very rare (1-4%)
    "HP:0040285": 0.0,     # Excluded (0%)
}


def parse_frequency(raw: str) -> float | None:
    raw = raw.strip()
    if not raw:
        return None
    if raw in HPO_FREQUENCY:
        return HPO_FREQUENCY[raw]
    if raw.endswith("%"):
        try:
            return max(0.0, min(1.0, float(raw[:-1]) / 100.0))
        except ValueError:
            return None
    if "/" in raw:
        n, _, m = raw.partition("/")
        try:
            n_f, m_f = float(n), float(m)
        except ValueError:
            return None
        return n_f / m_f if m_f > 0 else None
    return None


@dataclass
class HpoAnnotation:
    disease: str        # OMIM:/ORPHA:/DECIPHER:
    phenotype: str      # HP:
    frequency: float | None
    evidence: str
    onset: str


def read_hpoa(path: Path) -> tuple[dict[str, str], list[HpoAnnotation], int]:
    """phenotype.hpoa, aspect P only. Returns disease names, annotations and the number of NOT/excluded
    annotations skipped (a phenotype explicitly absent in a disease is not a has_phenotype edge)."""
    names: dict[str, str] = {}
    annotations: list[HpoAnnotation] = []
    negated = 0
    with open(path, encoding="utf-8") as fh:
        header: list[str] | None = None
        for line in fh:
            if line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if header is None:
                header = parts
                idx = {h: i for i, h in enumerate(header)}
                continue
            if len(parts) < len(header) or parts[idx["aspect"]] != "P":
                continue
            did = parts[idx["database_id"]]
            names.setdefault(did, parts[idx["disease_name"]])
            freq = parse_frequency(parts[idx["frequency"]])
            if parts[idx["qualifier"]] == "NOT" or freq == 0.0:
                negated += 1
                continue
            annotations.append(HpoAnnotation(did, parts[idx["hpo_id"]], freq, parts[idx["evidence"]],
                                             parts[idx["onset"]]))
    return names, annotations, negated


# ---------------------------------------------------------------- HSDN, PharmacotherapyDB
def read_hsdn(path: Path) -> list[dict[str, str]]:
    return list(_tsv(path))


def read_pharmacotherapydb(path: Path) -> list[dict[str, str]]:
    return list(_tsv(path))


# ---------------------------------------------------------------- DDXPlus (optional)
def _literal(value):
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def read_ddxplus(conditions_path: Path, evidences_path: Path | None) -> tuple[list[dict], dict[str, dict]]:
    conditions = json.loads(Path(conditions_path).read_text(encoding="utf-8"))
    evidences = json.loads(Path(evidences_path).read_text(encoding="utf-8")) if evidences_path else {}
    conds = []
    for key, c in conditions.items():
        conds.append({
            "key": key,
            "name": c.get("cond-name-eng") or c.get("condition_name") or key,
            "icd10": c.get("icd10-id", ""),
            "symptoms": list((_literal(c.get("symptoms")) or {}).keys()),
            "antecedents": list((_literal(c.get("antecedents")) or {}).keys()),
            "severity": c.get("severity"),
        })
    return conds, evidences

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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import rds

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
    subsets: list[str] = field(default_factory=list)                # OBO ``subset:`` tags (e.g. DO_rare_slim)


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
    alt_id, is_obsolete, replaced_by, subset."""
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
            elif tag == "subset":
                cur.subsets.append(value.strip())
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


# HPO "Onset" terms (phenotype.hpoa aspect C) -> a short label
HPO_ONSETS = {
    "HP:0030674": "antenatal", "HP:0011460": "antenatal", "HP:0011461": "antenatal", "HP:0034199": "antenatal",
    "HP:0003577": "congenital", "HP:0003623": "neonatal", "HP:0003593": "infantile", "HP:0410280": "pediatric",
    "HP:0011463": "childhood", "HP:0003621": "juvenile", "HP:0003581": "adult", "HP:0011462": "adult",
    "HP:0003596": "adult", "HP:0003584": "adult",
}


@dataclass
class Hpoa:
    """What the graph takes from phenotype.hpoa: disease names, phenotype annotations (aspect P), the number of
    NOT/excluded annotations skipped (a phenotype explicitly absent in a disease is not a has_phenotype edge), and
    each disease's ages of onset (aspect C, labels of :data:`HPO_ONSETS`)."""

    names: dict[str, str]
    annotations: list[HpoAnnotation]
    negated: int
    onsets: dict[str, set[str]]


def read_hpoa(path: Path) -> Hpoa:
    """phenotype.hpoa in one pass (see :class:`Hpoa`)."""
    out = Hpoa({}, [], 0, defaultdict(set))
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
            if len(parts) < len(header):
                continue
            did, aspect = parts[idx["database_id"]], parts[idx["aspect"]]
            if aspect == "C":
                label = HPO_ONSETS.get(parts[idx["hpo_id"]])
                if label and parts[idx["qualifier"]] != "NOT":
                    out.onsets[did].add(label)
                continue
            if aspect != "P":
                continue
            out.names.setdefault(did, parts[idx["disease_name"]])
            freq = parse_frequency(parts[idx["frequency"]])
            if parts[idx["qualifier"]] == "NOT" or freq == 0.0:
                out.negated += 1
                continue
            out.annotations.append(HpoAnnotation(did, parts[idx["hpo_id"]], freq, parts[idx["evidence"]],
                                                 parts[idx["onset"]]))
    out.onsets = dict(out.onsets)
    return out


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


# ---------------------------------------------------------------- NCI Thesaurus (OBO-graph JSON)
_OBO_PURL = "http://purl.obolibrary.org/obo/"
_OBOGRAPH_SCOPES = {"hasExactSynonym": "EXACT", "hasRelatedSynonym": "RELATED", "hasNarrowSynonym": "NARROW",
                    "hasBroadSynonym": "BROAD"}


def _obograph_id(iri: str) -> str:
    """``http://purl.obolibrary.org/obo/NCIT_C2991`` -> ``NCIT:C2991`` (other IRIs are kept as they are)."""
    if iri.startswith(_OBO_PURL):
        tail = iri[len(_OBO_PURL):]
        if "_" in tail:
            prefix, local = tail.split("_", 1)
            return f"{prefix}:{local}"
    return iri


def read_obograph(path: Path) -> dict[str, Term]:
    """An OBO-graph JSON file (plain or gzipped), e.g. MONDO's NCIt disease subset: its classes with label,
    definition, synonyms (with scope), xrefs, deprecation and is_a parents. Relation properties and other
    non-class nodes are left out."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    terms: dict[str, Term] = {}
    for graph in data.get("graphs", ()):
        for node in graph.get("nodes", ()):
            if node.get("type") != "CLASS":
                continue
            meta = node.get("meta") or {}
            t = Term(id=_obograph_id(node["id"]), name=(node.get("lbl") or "").strip())
            definition = (meta.get("definition") or {}).get("val")
            t.definition = definition.strip() if definition else None
            for syn in meta.get("synonyms", ()):
                scope = _OBOGRAPH_SCOPES.get(syn.get("pred", ""), "RELATED")
                if syn.get("val"):
                    t.synonyms.append((syn["val"].strip(), scope))
            t.xrefs = [x["val"] for x in meta.get("xrefs", ()) if x.get("val")]
            t.obsolete = bool(meta.get("deprecated"))
            terms[t.id] = t
        for edge in graph.get("edges", ()):
            if edge.get("pred") == "is_a":
                child = terms.get(_obograph_id(edge["sub"]))
                if child is not None:
                    child.parents.append(_obograph_id(edge["obj"]))
    return terms


# ---------------------------------------------------------------- SSSOM mapping tables (MONDO)
@dataclass
class Mapping:
    """One row of an SSSOM mapping table."""
    subject_id: str
    subject_label: str
    predicate_id: str
    object_id: str
    object_label: str
    justification: str


SSSOM_COLUMNS = ("subject_id", "predicate_id", "object_id")


def read_sssom(path: Path) -> list[Mapping]:
    """An SSSOM/TSV mapping table: the ``#`` metadata block is skipped, the columns are read by name
    (``subject_label``/``object_label`` are optional). Raises ``ValueError`` when a required column is absent."""
    out: list[Mapping] = []
    with open(path, encoding="utf-8", newline="") as fh:
        lines = (line for line in fh if not line.startswith("#"))
        reader = csv.reader(lines, delimiter="\t")
        header = next(reader, None) or []
        idx = {h.strip(): i for i, h in enumerate(header)}
        missing = [c for c in SSSOM_COLUMNS if c not in idx]
        if missing:
            raise ValueError(f"{Path(path).name}: not an SSSOM table (missing column(s) {missing})")

        def col(row: list[str], name: str) -> str:
            i = idx.get(name)
            return row[i].strip() if i is not None and i < len(row) else ""

        for row in reader:
            if not row or not row[idx["subject_id"]].strip():
                continue
            out.append(Mapping(col(row, "subject_id"), col(row, "subject_label"), col(row, "predicate_id"),
                               col(row, "object_id"), col(row, "object_label"), col(row, "mapping_justification")))
    return out


# ---------------------------------------------------------------- MeSH descriptors and entry terms (R data)
@dataclass
class MeshTerm:
    text: str
    lexical_tag: str          # NON, ABB (abbreviation), ACR (acronym), EPO (eponym), ABX/ACX (embedded), ...
    permuted: bool            # a generated variant (plural, word order) of another entry term
    preferred_concept: bool   # a term of the descriptor's preferred concept (a synonym); the terms of its other
                              # concepts name narrower or related notions


@dataclass
class MeshDescriptor:
    id: str                   # "D009203"
    name: str                 # the descriptor's preferred term ("Myocardial Infarction")
    tree_numbers: list[str] = field(default_factory=list)
    terms: list[MeshTerm] = field(default_factory=list)   # every entry term, the preferred one included


MESH_DISEASE_TREES = ("C", "F03")     # Diseases; Mental Disorders


def under_trees(tree_number: str, prefixes: Iterable[str]) -> bool:
    """A MeSH tree number lies under one of ``prefixes``: a letter is a whole tree ("C"), anything longer a branch
    ("F03", "C04.619": the number itself or below it)."""
    return any(tree_number == p or tree_number.startswith(p + ".") or (len(p) == 1 and tree_number.startswith(p))
               for p in prefixes)


def read_mesh(thesaurus: Path, trees: Path, tree_prefixes: Iterable[str] | None = MESH_DISEASE_TREES
              ) -> dict[str, MeshDescriptor]:
    """MeSH descriptors with their tree numbers and entry terms, from the two R data frames
    (``data_mesh_thesaurus.rds``: one row per descriptor x term; ``data_mesh_trees.rds``: one row per tree
    number). ``tree_prefixes``: keep only descriptors with a tree number under one of these (a letter is a whole
    tree, ``F03`` a branch); ``None``: every descriptor, with a tree number or not."""
    prefixes = tuple(tree_prefixes) if tree_prefixes is not None else None
    tr = rds.read_data_frame(trees, ["DescriptorUI", "tree_location"])
    tree_numbers: dict[str, list[str]] = defaultdict(list)
    for ui, loc in zip(tr["DescriptorUI"], tr["tree_location"]):
        if ui and loc:
            tree_numbers[ui].append(loc)
    keep = None if prefixes is None else {
        ui for ui, locs in tree_numbers.items() if any(under_trees(loc, prefixes) for loc in locs)}
    th = rds.read_data_frame(thesaurus, ["DescriptorUI", "ConceptUI", "TermName", "LexicalTag", "IsPermutedTermYN",
                                         "RecordPreferredTermYN"])
    rows = [r for r in zip(th["DescriptorUI"], th["ConceptUI"], th["TermName"], th["LexicalTag"],
                           th["IsPermutedTermYN"], th["RecordPreferredTermYN"])
            if r[2] and (keep is None or r[0] in keep)]
    # the descriptor's name is its record-preferred term, which belongs to its preferred concept
    preferred = {ui: (concept, term) for ui, concept, term, _, _, rec in rows if rec == "Y"}
    out: dict[str, MeshDescriptor] = {}
    for ui, concept, term, tag, permuted, _ in rows:
        pref_concept, name = preferred.get(ui, (None, term))
        d = out.get(ui)
        if d is None:
            d = out[ui] = MeshDescriptor(ui, name, sorted(tree_numbers.get(ui, ())))
        d.terms.append(MeshTerm(term, tag or "", permuted == "Y", concept == pref_concept))
    return out


# ---------------------------------------------------------------- ICD-10-CM tabular list (XML)
@dataclass
class IcdCode:
    code: str                                     # "M75.0"
    title: str                                    # "Adhesive capsulitis of shoulder"
    inclusion_terms: list[str] = field(default_factory=list)   # "Frozen shoulder", "Periarthritis of shoulder"


def read_icd10cm_tabular(path: Path) -> Iterator[IcdCode]:
    """The codes of an ICD-10-CM tabular list XML (``<diag>`` elements at any depth), streamed: each code's
    title and inclusion terms, children before their parent (in the order their elements close)."""
    depth = 0
    for event, elem in ET.iterparse(path, events=("start", "end")):
        if elem.tag != "diag":
            continue
        if event == "start":
            depth += 1
            continue
        depth -= 1
        code = (elem.findtext("name") or "").strip()
        title = " ".join((elem.findtext("desc") or "").split())
        terms = [" ".join(n.text.split()) for n in elem.iterfind("inclusionTerm/note") if n.text and n.text.strip()]
        yield IcdCode(code, title, terms)
        if depth == 0:
            elem.clear()          # a whole category is done: free it


# ---------------------------------------------------------------- curated abbreviations (in this repository)
@dataclass
class Abbreviation:
    abbreviation: str
    concept: str              # the concept it names, e.g. "DOID:5844"
    expansion: str            # the full name, for readers of the table
    comment: str              # where the usage is documented


def read_reasoned_table(path: Path | str, columns: tuple[str, ...]) -> list[list[str]]:
    """The rows of a curated, tab-separated table whose header is ``columns`` (the last one the reason a row is
    there: a reviewer reads it); every field must be filled. ``#`` lines and blank lines are ignored."""
    name = Path(path).name
    rows: list[list[str]] = []
    header = None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = [x.strip() for x in line.split("\t")]
        if header is None:
            header = parts
            if tuple(header[:len(columns)]) != columns:
                raise ValueError(f"{name}: the header must be {'<TAB>'.join(columns)!r}")
            continue
        if len(parts) < len(columns) or not all(parts[:len(columns)]):
            raise ValueError(f"{name}: a row needs {', '.join(columns[:-1])} and a {columns[-1]}: {line!r}")
        rows.append(parts[:len(columns)])
    return rows


def read_abbreviations(path: Path) -> list[Abbreviation]:
    """The curated abbreviation table: tab-separated ``abbreviation, doid, expansion, comment`` with a header
    line; ``#`` lines and blank lines are ignored."""
    out: list[Abbreviation] = []
    with open(path, encoding="utf-8") as fh:
        header: list[str] | None = None
        for n, line in enumerate(fh, start=1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.rstrip("\n").split("\t")]
            if header is None:
                header = parts
                if header[:2] != ["abbreviation", "doid"]:
                    raise ValueError(f"{Path(path).name}: the header must start with 'abbreviation<TAB>doid'")
                continue
            row = dict(zip(header, parts))
            if not row.get("abbreviation") or not row.get("doid"):
                raise ValueError(f"{Path(path).name} line {n}: needs an abbreviation and a DO id")
            out.append(Abbreviation(row["abbreviation"], row["doid"], row.get("expansion", ""),
                                    row.get("comment", "")))
    return out

"""Disease vocabularies merged into the Disease Ontology concepts of the knowledge graph.

The names clinicians use -- everyday names, eponyms, older synonyms, abbreviations -- come from vocabularies
other than DO: the NCI Thesaurus (names, exact synonyms, definitions), MeSH (descriptors and entry terms of
the disease trees C and F03), the ICD-10-CM tabular list (code titles and inclusion terms), Mondo's labels and
the Orphanet and ICD-11 labels it matches exactly, and two small curated tables: clinical abbreviations, and the
clinical names of diagnoses the graph holds under another name ("sepsis", "strep throat", "adrenal crisis").
Each term is mapped to the DO concept it names, and its names become synonyms there; the only nodes added are
the MeSH disease descriptors no DO concept corresponds to (:mod:`.mesh_nodes`: herpes labialis, lichen
sclerosus, brain concussion ...), which get their names through the same guards.

Mapping an identifier of another vocabulary (``MESH:D009203``, ``ICD10CM:M75.0``, ``NCI:C27996``) to DO
(:class:`Bridge`) uses DO's own cross-references of the concept and Mondo's exact matches (identifier ->
Mondo disease -> DO concept, from the Mondo SSSOM tables). The union of both must name exactly one DO concept;
for NCIt and MeSH, several candidates are narrowed to the one whose name or exact synonym is the term's
preferred name. ICD-10-CM codes get no such second chance.

Synonyms are added (:class:`VocabularyMerge`) conservatively:

- scopes: ``MAPPED`` for synonyms (NCIt names, Mondo/Orphanet/ICD-11 labels, terms of a MeSH descriptor's
  preferred concept, ICD-10-CM code titles), ``ABBREVIATION`` for abbreviations, ``NARROW`` for narrower or
  related notions filed under the concept (terms of a MeSH descriptor's other concepts, ICD-10-CM inclusion
  terms). Look-ups rank ``MAPPED`` and ``ABBREVIATION`` after DO's own exact synonyms and ``NARROW`` last. Each
  synonym carries its source id in the node's ``synonym_sources``;
- a name that already is the preferred name or an exact synonym of *another* DO concept is not added; a
  synonym the vocabularies propose for two or more DO concepts is given to none; a narrower name gives way to a
  synonym of another concept and is given to none when two concepts claim it. The curated abbreviations and
  clinical names are exempt: they are checked by hand, and claim their names before the other sources are merged
  (a clinical name's scope is ``MAPPED``, ``NARROW`` or ``BROAD`` as its row says);
- ICD-10-CM titles lose trailing "unspecified"/"NOS" qualifiers; titles and terms about "other" conditions,
  "NEC"/"not elsewhere classified" and other "unspecified" ones are dropped (:func:`icd_names`).

NCIt definitions are kept in the node's ``definitions`` list (text, source, NCIt id) next to DO's own
``definition``, which is never replaced. Mondo, GARD, UMLS and ICD-10-CM identifiers of a uniquely mapped Mondo
disease are added to the DO concept's ``xrefs`` unless another DO concept already carries them; a DO disease still
without an ICD-10-CM code gets the one whose cleaned title or inclusion term is its own name (no other concept's).
"""
from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import mesh_nodes, parsers
from .builder import ABBREVIATION, BROAD, CLINICAL_NAMES_SOURCE, LOCAL_SOURCES, MAPPED, NARROW, Builder
from .mesh_nodes import mesh_names
from .normalize import normalise, uninvert

log = logging.getLogger(__name__)

_STRONG = (MAPPED, ABBREVIATION)

MONDO_SOURCES = ("mondo-doid", "mondo-mesh", "mondo-icd10cm", "mondo-ncit", "mondo-umls", "mondo-orphanet",
                 "mondo-icd11", "mondo-gard")
VOCAB_SOURCES = ("ncit", *MONDO_SOURCES, "mesh-thesaurus", "mesh-trees", "icd10cm", "kg-abbreviations",
                 CLINICAL_NAMES_SOURCE, mesh_nodes.FINDINGS_SOURCE, mesh_nodes.DIAGNOSES_SOURCE)

# the vocabularies mapped to DO, by the xref prefix the KG uses for them, and the Mondo table matching each
_BRIDGED = {"MESH": "mondo-mesh", "ICD10CM": "mondo-icd10cm", "NCI": "mondo-ncit"}
# identifiers of a Mondo disease added to its DO concept as cross-references
_XREF_TABLES = {"UMLS_CUI": "mondo-umls", "GARD": "mondo-gard", "ICD10CM": "mondo-icd10cm"}
_ROOT = "DOID:4"                   # "disease": never receives names from the vocabularies

# the kinds of name of the curated clinical-names table, and the synonym scope each becomes
CLINICAL_NAME_KINDS = {"same": MAPPED, "narrower": NARROW, "broader": BROAD}
CLINICAL_NAMES_PATH = LOCAL_SOURCES[CLINICAL_NAMES_SOURCE][0]

# a viral infection's name that is its virus's name with "infection" after it
_NAMED_AFTER_VIRUS = re.compile(r"^(.*\S\s+virus)\s+(?:infection|infectious\s+disease)$", re.IGNORECASE)
VIRUS_NAMES_SOURCE = "do-humando"   # derived from the Disease Ontology's own names

_ABBREV_RE = re.compile(r"^(?=.*[A-Z])[A-Z0-9][A-Za-z0-9-]{0,7}$")


def looks_like_abbreviation(text: str) -> bool:
    """``"COPD"``, ``"NSTEMI"``, ``"AFib"``, ``"CDLS2"``: one short token, capitals, no lower-case start."""
    return bool(_ABBREV_RE.match(text)) and sum(ch.isupper() for ch in text) >= 2


def _key(prefix: str, local: str) -> str:
    return f"{prefix}:{local.strip().upper()}"


# ---------------------------------------------------------------- mapping other vocabularies to DO
class Bridge:
    """Which DO concepts an identifier of another vocabulary names.

    ``direct``: DO's own cross-references (``"MESH:D009203" -> {"DOID:5844"}``); ``mondo_do``: Mondo disease
    -> DO concepts (exact matches, DO ids redirected to current ones); ``mondo_of``: identifier -> Mondo
    diseases that exactly match it."""

    def __init__(self, b: Builder) -> None:
        self.b = b
        self.direct: dict[str, set[str]] = defaultdict(set)
        self.mondo_do: dict[str, set[str]] = defaultdict(set)
        self.mondo_of: dict[str, set[str]] = defaultdict(set)
        self.mondo_label: dict[str, str] = {}
        for nid, a in b.nodes.items():
            if a["category"] != "disease" or not nid.startswith("DOID:"):
                continue
            for prefix in _BRIDGED:
                for local in a["xrefs"].get(prefix, ()):
                    self.direct[_key(prefix, local)].add(nid)

    def add_mondo_doid(self, rows: Iterable[parsers.Mapping]) -> None:
        """Mondo <-> DO exact matches (DO ids that are obsolete now are followed to their replacement; obsolete
        Mondo classes are left out)."""
        for m in rows:
            if not m.subject_id.startswith("MONDO:") or not m.object_id.startswith("DOID:") or _obsolete(m):
                continue
            doid = self.b.do_id(m.object_id)
            if doid is None:
                self.b.report["vocab_mondo_do_unknown_doid"] += 1
                continue
            self.mondo_do[m.subject_id].add(doid)
            if m.subject_label:
                self.mondo_label.setdefault(m.subject_id, m.subject_label)

    def add_mondo_matches(self, prefix: str, rows: Iterable[parsers.Mapping]) -> None:
        """Mondo -> identifiers of one vocabulary (``prefix`` as the KG writes it, e.g. ``MESH``)."""
        for m in rows:
            if not m.subject_id.startswith("MONDO:") or ":" not in m.object_id or _obsolete(m):
                continue
            self.mondo_of[_key(prefix, m.object_id.split(":", 1)[1])].add(m.subject_id)
            if m.subject_label:
                self.mondo_label.setdefault(m.subject_id, m.subject_label)

    def targets(self, prefix: str, local: str) -> tuple[set[str], set[str]]:
        """(DO concepts named by the identifier directly, DO concepts reached through Mondo)."""
        key = _key(prefix, local)
        via_mondo: set[str] = set()
        for mondo in self.mondo_of.get(key, ()):
            via_mondo |= self.mondo_do.get(mondo, set())
        return set(self.direct.get(key, ())), via_mondo

    def resolve(self, prefix: str, local: str, names: Iterable[str] = ()) -> tuple[str | None, str]:
        """The one DO concept an identifier names, and how it was found: ``"unique"``, ``"by name"`` (several
        candidates, one of them named like one of ``names``), ``"ambiguous"`` or ``"unmapped"``."""
        direct, via_mondo = self.targets(prefix, local)
        cands = (direct | via_mondo) - {_ROOT}
        if not cands:
            return None, "unmapped"
        if len(cands) == 1:
            return next(iter(cands)), "unique"
        keys = {normalise(n) for n in names} - {""}
        if keys:
            named = {d for d in cands if keys & _own_keys(self.b.nodes[d], exact_only=True)}
            if len(named) == 1:
                return next(iter(named)), "by name"
        return None, "ambiguous"


def read_mondo(b: Builder, located: dict[str, Path]) -> dict[str, list[parsers.Mapping]]:
    """The Mondo mapping tables present in ``located``, by source id (read once per build: the HPO step and the
    vocabulary merge both use them)."""
    mondo: dict[str, list[parsers.Mapping]] = {}
    for sid in MONDO_SOURCES:
        if sid in located:
            b.step(f"Mondo mappings ({sid})")
            mondo[sid] = parsers.read_sssom(located[sid])
    return mondo


def orphanet_to_do(b: Builder, mondo: dict[str, list[parsers.Mapping]]) -> dict[str, set[str]]:
    """Orphanet diseases -> the DO concepts Mondo matches exactly (``"ORPHA:589" -> {"DOID:437"}``), for the HPO
    annotations read before the vocabularies: an Orphanet disease that DO's own cross-references miss (myasthenia
    gravis, Lyme disease, plague) then merges into its DO concept instead of becoming a second node of the same
    disease. ``mondo``: :func:`read_mondo`; empty without both the DO and the Orphanet table."""
    if "mondo-doid" not in mondo or "mondo-orphanet" not in mondo:
        return {}
    bridge = Bridge(b)
    bridge.add_mondo_doid(mondo["mondo-doid"])
    bridge.add_mondo_matches("ORPHA", mondo["mondo-orphanet"])
    out: dict[str, set[str]] = {}
    for key in bridge.mondo_of:
        prefix, local = key.split(":", 1)
        _, via_mondo = bridge.targets(prefix, local)
        if via_mondo - {_ROOT}:
            out[key] = via_mondo - {_ROOT}
    return out


def _obsolete(m: parsers.Mapping) -> bool:
    return m.subject_label.startswith("obsolete ")


def _own_keys(a: dict, exact_only: bool = False) -> set[str]:
    keys = {normalise(a["name"])}
    for s, sc in zip(a["synonyms"], a["synonym_scopes"]):
        if not exact_only or sc == "EXACT":
            keys.add(normalise(s))
    return keys


# ---------------------------------------------------------------- name clean-up
_OTHER = re.compile(r"\bother\b|\bNEC\b|not elsewhere classified", re.IGNORECASE)
_TRAILING_QUALIFIER = re.compile(r"(?:,\s*|\s+)(?:unspecified|NOS|not otherwise specified"
                                 r"|not specified as [^,]+)$", re.IGNORECASE)
_LEADING_UNSPECIFIED = re.compile(r"^unspecified\s+", re.IGNORECASE)
_UNSPECIFIED = re.compile(r"\bunspecified\b|\bNOS\b", re.IGNORECASE)
_BRACKETS = re.compile(r"\s*\[([^\]]*)\]")
_CLOSING_BRACKETS = re.compile(r"(?:\s*\[[^\]]*\])+$")
_ATTACHED_PARENS = re.compile(r"\((\w+)\)(?=[\w-])|(?<=\w)\((\w+)\)")
_PARENS = re.compile(r"\([^)]*\)-?")


def icd_names(text: str, scope: str = MAPPED) -> list[tuple[str, str]]:
    """Names of a condition from an ICD-10-CM code title or inclusion term, as ``(name, scope)``.

    ``"Acute myocardial infarction, unspecified"`` -> ``Acute myocardial infarction``; ``"Exanthema subitum
    [sixth disease]"`` -> ``Exanthema subitum`` and ``sixth disease`` (a closing bracket holds another name of the
    whole); ``"Herpesviral [herpes simplex] infections"`` -> ``herpes simplex infections`` (a bracket inside the
    name replaces the word before it, unless it is an abbreviation of the words before it: ``"Immune
    reconstitution inflammatory syndrome [IRIS]"``); ``"Nonrheumatic mitral (valve) regurgitation NOS"`` ->
    ``Nonrheumatic mitral regurgitation``; ``"(teno)synovitis"`` -> ``synovitis`` and ``tenosynovitis``;
    ``"Other specified ..."``, ``"..., not elsewhere classified"`` and names with an "unspecified" qualifier in
    the middle -> nothing. ``scope``: of the names found (abbreviations get ``ABBREVIATION``)."""
    t = " ".join(text.split())
    if not t or _OTHER.search(t):
        return []
    prev = None
    while prev != t:                   # "X, unspecified, NOS" -> "X"
        prev = t
        t = _TRAILING_QUALIFIER.sub("", t).strip(" ,")
        t = _LEADING_UNSPECIFIED.sub("", t)
    if not t or _UNSPECIFIED.search(t):
        return []
    out: list[tuple[str, str]] = []
    closing = _CLOSING_BRACKETS.search(t)
    if closing:                        # "Exanthema subitum [sixth disease]", "... syndrome [HPS] [HCPS]"
        t = t[:closing.start()].strip()
        for alt in _BRACKETS.findall(closing.group(0)):
            alt = alt.strip()
            if looks_like_abbreviation(alt):
                out.append((alt, ABBREVIATION if scope == MAPPED else scope))
            elif len(alt.split()) >= 2 and not _UNSPECIFIED.search(alt):
                out.append((alt, scope))
    # brackets inside the name: an abbreviation is dropped, another word replaces the word before it
    t = _inner_brackets(t)
    variants = [_drop_parens(t)]
    joined = _ATTACHED_PARENS.sub(lambda m: m.group(1) or m.group(2), t)
    if joined != t:
        variants.append(_drop_parens(joined))
    names = [(v, scope) for v in dict.fromkeys(variants) if v]
    return names + out


def _drop_parens(text: str) -> str:
    """Without its nonessential modifiers: ``"Hantavirus (cardio)-pulmonary syndrome"`` -> ``"Hantavirus
    pulmonary syndrome"``."""
    text = " ".join(_PARENS.sub(" ", text).split())
    return text.replace(" ,", ",").strip(" ,")


def _inner_brackets(text: str) -> str:
    """``"Herpesviral [herpes simplex] infections"`` -> ``"herpes simplex infections"``; ``"Human
    immunodeficiency virus [HIV] disease"`` -> ``"Human immunodeficiency virus disease"``."""
    out, pos = "", 0
    for m in _BRACKETS.finditer(text):
        out += text[pos:m.start()]
        inner = m.group(1).strip()
        if inner and not looks_like_abbreviation(inner):
            head, sep, _last = out.rpartition(" ")
            out = f"{head}{sep}{inner}"
        pos = m.end()
    return " ".join((out + text[pos:]).split())


NCIT_URL = "https://ncit.nci.nih.gov/ncitbrowser/ConceptReport.jsp?dictionary=NCI_Thesaurus&code={code}"
NCIT_ORGANISATION = "NCI Thesaurus"   # the organisation of a definition's text (index chunks, mined edges, pages)
NCIT_LICENSE = "CC-BY-4.0 (NCI Thesaurus, as redistributed by Mondo)"


def ncit_url(ncit_id: str) -> str:
    """The NCI Thesaurus browser page of a concept ("NCIT:C3264")."""
    return NCIT_URL.format(code=ncit_id.split(":", 1)[-1])


def ncit_definitions(kg: Any, only: Any = None) -> Iterator[tuple[str, str, str, str]]:
    """``(disease id, disease name, NCIt id, definition)`` for every NCI Thesaurus definition the graph keeps for
    its diseases (``Concept.definitions``), in disease id order; ``only``: a set of disease ids to keep."""
    for n, a in sorted(kg.graph.nodes(data=True)):
        if a.get("category") != "disease" or (only is not None and n not in only):
            continue
        for d in a.get("definitions") or ():
            text, did = (d.get("text") or "").strip(), d.get("id") or ""
            if text and did and d.get("source") == "ncit":
                yield n, a.get("name") or n, did, text


def ncit_names(text: str) -> list[tuple[str, str]]:
    text = " ".join(text.split())
    if not text:
        return []
    return [(text, ABBREVIATION if looks_like_abbreviation(text) else MAPPED)]


# ---------------------------------------------------------------- collecting and applying
@dataclass(frozen=True)
class Candidate:
    """A name proposed for a DO concept."""
    doid: str
    text: str
    scope: str
    source: str


class VocabularyMerge:
    """Collects names, definitions and cross-references proposed by the vocabularies, then applies them to the
    builder's DO concepts with the guards described in the module docstring. Usable on a small builder holding
    a few hand-made concepts (the unit tests do that)."""

    def __init__(self, b: Builder) -> None:
        self.b = b
        self.bridge = Bridge(b)
        self.candidates: list[Candidate] = []
        self.curated: list[Candidate] = []
        self.definitions: dict[str, list[dict]] = defaultdict(list)
        self.xrefs: list[tuple[str, str, str, str]] = []       # (doid, prefix, local, source)
        self.unknown_key: dict[str, str] = {}                   # curated source -> report key of its unknown ids

    # -- proposing
    def propose(self, doid: str, names: Iterable[tuple[str, str]], source: str) -> None:
        for text, scope in names:
            self.candidates.append(Candidate(doid, text, scope, source))

    def add_abbreviations(self, rows: Iterable[parsers.Abbreviation], source: str) -> None:
        """Curated abbreviations (:meth:`add_curated`; unknown ids counted as ``vocab_abbreviations_unknown_doid``)."""
        self.add_curated(((r.abbreviation, r.concept, ABBREVIATION) for r in rows), source,
                         "vocab_abbreviations_unknown_doid")

    def add_clinical_names(self, rows: Iterable[tuple[str, str, str]], source: str) -> None:
        """Curated clinical names (:func:`read_clinical_names`; :meth:`add_curated`, unknown ids counted as
        ``vocab_clinical_names_unknown_concept``)."""
        self.add_curated(rows, source, "vocab_clinical_names_unknown_concept")

    def add_curated(self, rows: Iterable[tuple[str, str, str]], source: str, unknown: str) -> None:
        """Names checked by hand, (name, concept id, synonym scope): they claim their names for their concept and
        pass the merge's guards. A DO id the graph lacks is counted under the report key ``unknown`` and left out;
        another id (a disease added from MeSH, an Orphanet disease) is checked by :meth:`apply`, which counts it
        under the same key when the graph has no such disease."""
        self.unknown_key[source] = unknown
        for name, concept, scope in rows:
            doid = self.b.do_id(concept) if concept.startswith("DOID:") else concept
            if doid is None:
                self.b.report[unknown] += 1
                continue
            self.curated.append(Candidate(doid, name, scope, source))

    def add_virus_names(self, source: str) -> None:
        """The virus a viral infection is named after, as a related name of the infection: a presentation's
        "infected with the human immunodeficiency virus", "hepatitis C virus" (DO's "... virus infection", "... virus
        infectious disease"; the merge's guards leave out a virus two concepts are named after)."""
        for nid, a in self.b.nodes.items():
            if a["category"] != "disease" or not nid.startswith("DOID:") or nid == _ROOT:
                continue
            names = [a["name"], *(x for x, sc in zip(a["synonyms"], a["synonym_scopes"]) if sc == "EXACT")]
            viruses = {m.group(1) for n in names if (m := _NAMED_AFTER_VIRUS.match(n.strip()))}
            self.propose(nid, ((v, "RELATED") for v in sorted(viruses)), source)

    def add_mondo_labels(self, source: str) -> None:
        """Mondo's own label of every Mondo disease that matches exactly one DO concept."""
        for mondo, label in self.bridge.mondo_label.items():
            doids = self.bridge.mondo_do.get(mondo, set()) - {_ROOT}
            if len(doids) == 1:
                self.propose(next(iter(doids)), [(label, MAPPED)], source)

    def add_mondo_object_labels(self, rows: Iterable[parsers.Mapping], source: str) -> None:
        """Labels of exactly matched concepts of another vocabulary (Orphanet, ICD-11) given by a Mondo table."""
        for m in rows:
            doids = self.bridge.mondo_do.get(m.subject_id, set()) - {_ROOT}
            if m.object_label and len(doids) == 1:
                self.propose(next(iter(doids)), [(m.object_label, MAPPED)], source)

    def add_mondo_xrefs(self, prefix: str, rows: Iterable[parsers.Mapping], source: str) -> None:
        """Identifiers a Mondo table gives a Mondo disease that matches exactly one DO concept."""
        for m in rows:
            doids = self.bridge.mondo_do.get(m.subject_id, set()) - {_ROOT}
            if len(doids) == 1 and ":" in m.object_id:
                self.xrefs.append((next(iter(doids)), prefix, m.object_id.split(":", 1)[1], source))

    def add_mondo_ids(self, source: str) -> None:
        """The Mondo id of every Mondo disease that matches exactly one DO concept."""
        for mondo, doids in self.bridge.mondo_do.items():
            doids = doids - {_ROOT}
            if len(doids) == 1:
                self.xrefs.append((next(iter(doids)), "MONDO", mondo.split(":", 1)[1], source))

    def add_ncit(self, terms: dict[str, parsers.Term], source: str) -> None:
        """NCIt classes mapped to DO: their label and exact synonyms, and their definition."""
        rep = self.b.report
        for t in terms.values():
            if t.obsolete or not t.id.startswith("NCIT:"):
                continue
            local = t.id.split(":", 1)[1]
            doid, how = self.bridge.resolve("NCI", local, [t.name])
            rep[f"vocab_ncit_classes_{how.replace(' ', '_')}"] += 1
            if doid is None:
                continue
            names = ncit_names(t.name)
            for syn, scope in t.synonyms:
                if scope == "EXACT":
                    names += ncit_names(syn)
            self.propose(doid, names, source)
            if t.definition:
                self.definitions[doid].append({"text": t.definition, "source": source, "id": t.id})

    def add_mesh(self, descriptors: dict[str, parsers.MeshDescriptor], source: str) -> None:
        """MeSH disease descriptors mapped to DO: their preferred name and entry terms."""
        rep = self.b.report
        for d in descriptors.values():
            names_of_d = [d.name, uninvert(d.name) or ""]
            doid, how = self.bridge.resolve("MESH", d.id, names_of_d)
            rep[f"vocab_mesh_descriptors_{how.replace(' ', '_')}"] += 1
            if doid is None:
                continue
            names: list[tuple[str, str]] = []
            for term in d.terms:
                names += mesh_names(term)
            self.propose(doid, names, source)

    def add_icd10cm(self, codes: Iterable[parsers.IcdCode], source: str) -> list[tuple[str, str]]:
        """ICD-10-CM codes that map to exactly one DO concept: their title and inclusion terms, cleaned up.
        Returns the (code, name) pairs of the codes no DO concept holds (for the diseases added from MeSH)."""
        rep = self.b.report
        unmapped: list[tuple[str, str]] = []
        for c in codes:
            if not c.code:
                continue
            doid, how = self.bridge.resolve("ICD10CM", c.code)       # no rescue by name: exactly one concept
            if doid is None:
                if how == "ambiguous":
                    rep["vocab_icd10cm_codes_ambiguous"] += 1
                else:
                    unmapped += [(c.code, n) for text in (c.title, *c.inclusion_terms) for n, _ in icd_names(text)]
                continue
            rep["vocab_icd10cm_codes_mapped"] += 1
            names = icd_names(c.title)
            for text in c.inclusion_terms:          # conditions coded here: often narrower than the code
                names += icd_names(text, NARROW)
            self.propose(doid, names, source)
        return unmapped

    def add_icd10cm_by_name(self, named_codes: Iterable[tuple[str, str]], source: str) -> int:
        """ICD-10-CM codes for the DO diseases that have none -- from neither DO's cross-references nor a Mondo
        exact match -- by name: a code no DO concept holds (``named_codes``: (code, cleaned title or inclusion
        term) pairs from :meth:`add_icd10cm`) whose name is the preferred name or an exact synonym of exactly one
        DO disease ("Allergic rhinitis, unspecified", J30.9, for allergic rhinitis). The code is the commonness
        prior's ICD-10-CM mark: without it a common disease looked like a rare one. Returns the number of
        diseases given a code."""
        coded = {doid for doid, prefix, *_ in self.xrefs if prefix == "ICD10CM"}
        owners: dict[str, set[str]] = defaultdict(set)
        for nid, a in self.b.nodes.items():
            if a["category"] != "disease" or not nid.startswith("DOID:") or nid == _ROOT:
                continue
            if a["xrefs"].get("ICD10CM"):
                coded.add(nid)
            for k in _own_keys(a, exact_only=True):
                owners[k].add(nid)
        given = {nid: codes for nid, codes in mesh_nodes.codes_by_name(owners, named_codes).items()
                 if nid not in coded}
        for nid, codes in sorted(given.items()):
            for code in sorted(codes):
                self.xrefs.append((nid, "ICD10CM", code, source))
        self.b.report["vocab_icd10cm_codes_by_name"] = len(given)
        return len(given)

    # -- applying
    def apply(self) -> dict[str, int]:
        """Write the accepted synonyms, definitions and cross-references into the builder's nodes. Returns the
        number of synonyms added per source (also in the build report)."""
        b, rep = self.b, self.b.report
        # names DO already gives its concepts (preferred names, exact synonyms)
        claimed: dict[str, set[str]] = defaultdict(set)
        own: dict[str, set[str]] = {}
        for nid, a in b.nodes.items():
            if a["category"] == "disease" and nid.startswith("DOID:"):
                for k in _own_keys(a, exact_only=True):
                    claimed[k].add(nid)
        # curated abbreviations and clinical names first: they claim their names for their concept
        for c in self.curated:
            claimed[normalise(c.text)].add(c.doid)
        # a name the vocabularies propose as a synonym of several DO concepts names none of them; a narrower
        # name gives way to a synonym of another concept, and names nothing when several concepts claim it
        strong: dict[str, set[str]] = defaultdict(set)
        weak: dict[str, set[str]] = defaultdict(set)
        for c in self.candidates:
            (strong if c.scope in _STRONG else weak)[normalise(c.text)].add(c.doid)
        added: dict[str, int] = defaultdict(int)
        n_curated = len(self.curated)
        for i, c in enumerate([*self.curated, *self.candidates]):
            key = normalise(c.text)
            if len(key) < 2 or key.isdigit() or c.doid == _ROOT or c.doid not in b.nodes:
                rep["vocab_synonyms_skipped_unusable"] += 1
                if i < n_curated:
                    rep[self.unknown_key[c.source]] += 1
                continue
            if i < n_curated and b.nodes[c.doid]["category"] != "disease":
                rep[self.unknown_key[c.source]] += 1      # the curated tables name diseases only
                continue
            if i >= n_curated:          # the curated names pass unchecked
                owners = claimed.get(key)
                if owners and c.doid not in owners:
                    rep["vocab_synonyms_skipped_naming_other_concept"] += 1
                    continue
                if (len(strong[key]) > 1 if c.scope in _STRONG
                        else bool(strong[key] - {c.doid}) or len(weak[key]) > 1):
                    rep["vocab_synonyms_skipped_ambiguous"] += 1
                    continue
            a = b.nodes[c.doid]
            keys = own.get(c.doid)
            if keys is None:
                keys = own[c.doid] = _own_keys(a)
            if key in keys:
                continue                # the concept already has this name (any scope)
            keys.add(key)
            b.add_synonym(a, c.text, c.scope, c.source)
            if c.source not in a["sources"]:
                a["sources"].append(b.s(c.source))
            added[c.source] += 1
        for src, n in added.items():
            rep[f"vocab_synonyms_added_{src}"] = n
        for doid, defs in self.definitions.items():
            a = b.nodes.get(doid)
            if a is None:
                continue
            have = a.setdefault("definitions", [])
            for d in defs:
                if all(d["text"] != x["text"] for x in have):
                    have.append({k: b.s(v) if k == "source" else v for k, v in d.items()})
                    rep["vocab_definitions_added"] += 1
                    if d["source"] not in a["sources"]:
                        a["sources"].append(b.s(d["source"]))
        taken: dict[str, set[str]] = defaultdict(set)
        for nid, a in b.nodes.items():
            if a["category"] == "disease" and nid.startswith("DOID:"):
                for prefix, locals_ in a["xrefs"].items():
                    for local in locals_:
                        taken[_key(prefix, local)].add(nid)
        for doid, prefix, local, source in self.xrefs:
            owners = taken[_key(prefix, local)]
            if owners and doid not in owners:
                rep["vocab_xrefs_skipped_taken"] += 1
                continue
            if doid not in owners:
                a = b.nodes[doid]
                b.add_xref(a, prefix, local)
                owners.add(doid)
                if source not in a["sources"]:
                    a["sources"].append(b.s(source))
                rep["vocab_xrefs_added"] += 1
        return dict(added)


def read_clinical_names(path: str | Path = CLINICAL_NAMES_PATH) -> list[tuple[str, str, str]]:
    """The curated clinical names of diagnoses (tab-separated ``name, concept, kind, reason``; ``kind`` one of
    ``same``, ``narrower``, ``broader``): (name, concept id, synonym scope) rows."""
    out = []
    for name, concept, kind, _ in parsers.read_reasoned_table(Path(path), ("name", "concept", "kind", "reason")):
        if ":" not in concept:
            raise ValueError(f"{Path(path).name}: {concept!r} is no concept id")
        if kind not in CLINICAL_NAME_KINDS:
            raise ValueError(f"{Path(path).name}: kind {kind!r} of {name!r} is not one of "
                             f"{sorted(CLINICAL_NAME_KINDS)}")
        out.append((name, concept, CLINICAL_NAME_KINDS[kind]))
    return out


# ---------------------------------------------------------------- the build step
def ingest_vocabularies(b: Builder, located: dict[str, Path], files: dict[str, list[Path]],
                        mondo: dict[str, list[parsers.Mapping]] | None = None) -> dict[str, int]:
    """Merge every vocabulary source present in ``located`` into the DO concepts. ``files``: the files of each
    source (package sources are folders); ``mondo``: the Mondo tables when already read (:func:`read_mondo`).
    Returns the synonyms added per source."""
    merge = VocabularyMerge(b)
    if mondo is None:
        mondo = read_mondo(b, located)
    if "mondo-doid" in mondo:
        merge.bridge.add_mondo_doid(mondo["mondo-doid"])
    for prefix, sid in _BRIDGED.items():
        if sid in mondo:
            merge.bridge.add_mondo_matches(prefix, mondo[sid])
    if "kg-abbreviations" in located:
        b.step("curated clinical abbreviations")
        merge.add_abbreviations(parsers.read_abbreviations(located["kg-abbreviations"]), "kg-abbreviations")
    if CLINICAL_NAMES_SOURCE in located:
        b.step("curated clinical names of diagnoses")
        merge.add_clinical_names(read_clinical_names(located[CLINICAL_NAMES_SOURCE]), CLINICAL_NAMES_SOURCE)
    ncit_terms: dict[str, parsers.Term] = {}
    new_mesh: list[str] = []
    if "ncit" in located:
        b.step("NCI Thesaurus: names, synonyms, definitions")
        ncit_terms = parsers.read_obograph(located["ncit"])
        merge.add_ncit(ncit_terms, "ncit")
    if "mondo-doid" in mondo:
        merge.add_mondo_labels("mondo-doid")
        for sid in ("mondo-orphanet", "mondo-icd11"):
            if sid in mondo:
                merge.add_mondo_object_labels(mondo[sid], sid)
        for prefix, sid in _XREF_TABLES.items():
            if sid in mondo:
                merge.add_mondo_xrefs(prefix, mondo[sid], sid)
        merge.add_mondo_ids("mondo-doid")
    if "mesh-thesaurus" in located and "mesh-trees" in located:
        b.step("MeSH disease descriptors and entry terms")
        descriptors = parsers.read_mesh(located["mesh-thesaurus"], located["mesh-trees"])
        merge.add_mesh(descriptors, "mesh-thesaurus")
        b.step("MeSH diseases DO lacks, as concepts of their own")
        kept = (mesh_nodes.read_findings(located[mesh_nodes.FINDINGS_SOURCE])
                if mesh_nodes.FINDINGS_SOURCE in located else {})
        named = (mesh_nodes.read_diagnoses(located[mesh_nodes.DIAGNOSES_SOURCE])
                 if mesh_nodes.DIAGNOSES_SOURCE in located else {})
        new_mesh = mesh_nodes.add_mesh_diseases(b, merge, descriptors, mondo, ncit_terms, kept, named)
    elif "mesh-thesaurus" in located or "mesh-trees" in located:
        log.warning("MeSH needs both 'mesh-thesaurus' and 'mesh-trees' (the disease trees select the descriptors); "
                    "MeSH names left out")
    if "icd10cm" in located:
        b.step("ICD-10-CM code titles and inclusion terms")
        (xml,) = files["icd10cm"]
        unmapped = merge.add_icd10cm(parsers.read_icd10cm_tabular(xml), "icd10cm")
        merge.add_icd10cm_by_name(unmapped, "icd10cm")
        if new_mesh:
            mesh_nodes.icd_codes_by_name(b, merge, new_mesh, unmapped)
    merge.add_virus_names(VIRUS_NAMES_SOURCE)
    b.step("merging vocabulary names into DO concepts")
    return merge.apply()

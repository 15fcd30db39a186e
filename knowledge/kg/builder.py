"""The state of one knowledge-graph build: nodes with their names and provenance, edges (one per fact, listing
every source that states it), the build report; the name scopes synonyms carry; the sources that ship with the code.

The ingest steps (:mod:`.build`, :mod:`.vocab`, :mod:`.mesh_nodes`) all write into one :class:`Builder`; this
module imports none of them.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import sources as sources_mod
from . import cardinal, endemic
from .normalize import normalise

if TYPE_CHECKING:  # pragma: no cover
    from . import parsers

log = logging.getLogger(__name__)

# name scopes of the synonyms merged from other vocabularies (DO's own keep the ontology's EXACT/RELATED/...)
MAPPED = "MAPPED"                  # a name from another vocabulary, reached through a mapping
ABBREVIATION = "ABBREVIATION"      # an abbreviation (curated, or tagged as one by its vocabulary)
NARROW = "NARROW"                  # a narrower or related notion filed under the concept (MeSH, ICD-10-CM)
BROAD = "BROAD"                    # a broader notion clinicians use for the concept (curated clinical names)

# the curated clinical names of diagnoses (read by vocab.py; left out by the commonness prior, knowledge/prior.py)
CLINICAL_NAMES_SOURCE = "kg-clinical-names"

# sources that ship with this code rather than being fetched: id -> (file, license)
LOCAL_SOURCES = {
    "kg-abbreviations": (Path(__file__).with_name("abbreviations.tsv"),
                         "Apache-2.0 (ClinicalRAG; curated from common clinical usage)"),
    cardinal.SOURCE: (cardinal.PATH, cardinal.LICENSE),
    endemic.SOURCE: (endemic.PATH, endemic.LICENSE),
    # the MeSH descriptors named like a finding that stay findings (read by mesh_nodes)
    "kg-mesh-findings": (Path(__file__).with_name("mesh_findings.tsv"), "Apache-2.0 (ClinicalRAG; curated)"),
    # the MeSH descriptors named like a finding that clinicians name as a diagnosis (read by mesh_nodes)
    "kg-mesh-diagnoses": (Path(__file__).with_name("mesh_diagnoses.tsv"), "Apache-2.0 (ClinicalRAG; curated)"),
    # synonyms a source gives a concept that name another one (removed by build.remove_synonym_errata)
    "kg-synonym-errata": (Path(__file__).with_name("synonym_errata.tsv"), "Apache-2.0 (ClinicalRAG; curated)"),
    # names clinicians give a diagnosis the graph holds under another name (read by vocab.py)
    CLINICAL_NAMES_SOURCE: (Path(__file__).with_name("clinical_names.tsv"), "Apache-2.0 (ClinicalRAG; curated)"),
    # cross-references a source gives a concept that belong to another one (removed by build.remove_xref_errata)
    "kg-xref-errata": (Path(__file__).with_name("xref_errata.tsv"), "Apache-2.0 (ClinicalRAG; curated)"),
}


class Builder:
    """The nodes, edges (one per fact, with its sources and license) and report of one graph build, shared by the
    ingest steps of :mod:`.build`, :mod:`.vocab` and :mod:`.mesh_nodes`."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict] = {}
        self.edges: dict[tuple[str, str, str], dict] = {}
        self.report: dict[str, int] = defaultdict(int)
        self._strings: dict[str, str] = {}
        self.licenses = {sid: s.license for sid, s in sources_mod.CATALOG.items()}
        self.licenses.update({sid: lic for sid, (_, lic) in LOCAL_SOURCES.items()})
        self.step: Callable[[str], None] = log.info        # progress messages of the ingest steps
        self.do_obo: dict[str, parsers.Term] = {}            # DO 2016 OBO terms (when that source is read)
        self.do_redirect: dict[str, str] = {}                # old/alternative/obsolete DO id -> current id
        self.symp_redirect: dict[str, str] = {}              # alternative/obsolete SYMP id -> current id

    def do_id(self, raw: str) -> str | None:
        """The current DO disease id for an id as written by a source (None when unknown)."""
        raw = raw.strip()
        if raw in self.nodes and self.nodes[raw]["category"] == "disease":
            return raw
        r = self.do_redirect.get(raw)
        if r is not None:
            self.report["do_ids_redirected"] += 1
            return r
        return None

    def symp_id(self, raw: str) -> str | None:
        """The current Symptom Ontology id for an id as written by a source (None when unknown)."""
        if raw in self.nodes and self.nodes[raw]["category"] == "symptom":
            return raw
        r = self.symp_redirect.get(raw)
        return r if r in self.nodes else None

    def s(self, text: str) -> str:
        """Intern repeated strings (sources, licenses, relations) so the pickle stores them once."""
        return self._strings.setdefault(text, text)

    def node(self, nid: str, category: str, source: str, name: str | None = None,
             definition: str | None = None) -> dict:
        attrs = self.nodes.get(nid)
        if attrs is None:
            attrs = {"name": name or nid, "category": self.s(category), "synonyms": [], "synonym_scopes": [],
                     "synonym_sources": [], "definition": definition or None, "xrefs": {},
                     "sources": [self.s(source)]}
            self.nodes[nid] = attrs
        else:
            if source not in attrs["sources"]:
                attrs["sources"].append(self.s(source))
            if name and attrs["name"] == nid:
                attrs["name"] = name
            if definition and not attrs["definition"]:
                attrs["definition"] = definition
        return attrs

    def add_synonym(self, attrs: dict, text: str, scope: str, source: str) -> None:
        """Append a synonym with its scope and the id of the source that gives it (a repeat is ignored)."""
        text = text.strip()
        if not text or text == attrs["name"] or text in attrs["synonyms"]:
            return
        attrs["synonyms"].append(text)
        attrs["synonym_scopes"].append(self.s(scope))
        attrs.setdefault("synonym_sources", []).append(self.s(source))

    def add_xref(self, attrs: dict, prefix: str, local: str) -> None:
        vals = attrs["xrefs"].setdefault(self.s(prefix), [])
        if local not in vals:
            vals.append(local)

    def edge(self, u: str, rel: str, v: str, source: str, **attrs) -> None:
        if u == v:
            return
        key = (u, rel, v)
        cur = self.edges.get(key)
        if cur is None:
            cur = {"relation": self.s(rel), "source": self.s(source), "license": self.s(self.licenses[source])}
            cur.update({k: (self.s(x) if isinstance(x, str) else x) for k, x in attrs.items() if x is not None})
            self.edges[key] = cur
            return
        # the same fact from another source: keep the first source as primary, list all
        if cur["source"] != source:
            extra = cur.setdefault("also_sources", [])
            if source not in extra:
                extra.append(self.s(source))
        for k, x in attrs.items():
            if x is None:
                continue
            if k == "frequency" and cur.get(k) is not None:
                cur[k] = max(cur[k], x)
            elif k not in cur:
                cur[k] = self.s(x) if isinstance(x, str) else x

    def edge_list(self) -> list[tuple[str, str, str, dict]]:
        """``(u, v, relation, attrs)``; equal attribute dicts are shared (most edges of a relation and source
        carry the same attributes), which keeps the graph small in memory and fast to (un)pickle."""
        shared: dict[tuple, dict] = {}
        out = []
        for (u, rel, v), a in self.edges.items():
            key = tuple(sorted((k, tuple(x) if isinstance(x, list) else x) for k, x in a.items()))
            out.append((u, v, rel, shared.setdefault(key, a)))
        self.report["distinct_edge_attribute_sets"] = len(shared)
        return out


def name_index(nodes: dict[str, dict], category: str, scopes=("EXACT",)) -> dict[str, set[str]]:
    """Normalised name (and synonyms of ``scopes``) -> the node ids of ``category`` carrying it."""
    idx: dict[str, set[str]] = defaultdict(set)
    for nid, a in nodes.items():
        if a["category"] != category:
            continue
        idx[normalise(a["name"])].add(nid)
        for syn, scope in zip(a["synonyms"], a["synonym_scopes"]):
            if scope in scopes:
                idx[normalise(syn)].add(nid)
    idx.pop("", None)
    return idx

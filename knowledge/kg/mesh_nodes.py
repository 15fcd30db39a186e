"""MeSH disease descriptors that the Disease Ontology lacks, as disease concepts of their own.

The vocabulary merge (:mod:`.vocab`) only adds names to DO concepts. Some 2,000 MeSH disease descriptors map to no
DO concept, and among them are diagnoses clinicians name every day: herpes labialis (cold sores), brain
concussion, intervertebral disc displacement, lichen sclerosus, stable angina, burns, rib
fractures. A diagnosis the graph does not hold can be neither proposed, nor linked when a language model names it,
nor matched to a benchmark's gold label. :func:`add_mesh_diseases` gives each such descriptor a node
(``MESH:D006560``, category ``disease``) when it is a diagnosis and not a duplicate:

- **not in DO under any name**: no Mondo/DO mapping (:class:`.vocab.Bridge`), and none of the names of its
  preferred concept is the name or a synonym of a disease node already in the graph (DO, OMIM, Orphanet);
- **a disease, not a finding**: some tree number in the disease trees (C, F03) outside C23 (*Pathological Conditions,
  Signs and Symptoms*: fever, leukocytosis, headache) and C04.697 (*Neoplastic Processes*) — a place in another tree
  does not count ("Emergencies" sits in C23 and in N06, health care) —, none in C22 (*Animal Diseases*) or C04.619
  (*Neoplasms, Experimental*); its heading does not group diseases ("... Abnormalities", "... Complications",
  "... Diseases"); and its name is not the
  name or a synonym of a Symptom Ontology symptom or an HPO phenotype (tachycardia, venous thrombosis stay
  findings), nor a symptom node of its own (HSDN symptoms without a SYMP/HP equivalent are ``MESH:`` nodes
  already) — unless Mondo, a disease ontology, exactly matches the descriptor: then it is a diagnosis named like a
  finding (cluster headache, anaphylaxis, acute coronary syndrome, subarachnoid hemorrhage, gallstones) and gets a
  node, except the signs, measurements and physical features Mondo files as diseases that the curated table
  ``mesh_findings.tsv`` keeps findings (hypotension, anisocoria, steatorrhea). The extractor still reads such a
  word as the finding (a MeSH disease comes after a phenotype of the same name, ``agents/mee/lexicon.py``);
- **or a curated diagnosis**: the descriptors of ``mesh_diagnoses.tsv`` (deep vein thrombosis, supraventricular
  tachycardia: diagnoses clinicians name that only an HPO phenotype of the same name held) get a node under the
  table's name whatever the finding and heading rules say;
- **a clinical entity, not a category**: at most :data:`MAX_DESCENDANTS` descriptors below it in the disease trees
  ("Herpes Labialis", not "Intestinal Diseases, Parasitic"), and fewer than :data:`MAX_HELD_DESCENDANTS` of them
  diseases DO already holds (a heading such as "Clostridium Infections" over botulism, tetanus and gas gangrene
  names the group, not a diagnosis).

Each node gets its descriptor's entry terms as synonyms (the synonyms of the preferred concept ``MAPPED``, the
terms of its other concepts ``NARROW``, through the merge's guards, so a name another concept owns is not taken;
names of findings are left out as above), an ``is_a`` edge to the nearest MeSH ancestor the graph holds (a DO
concept through the mappings, or another new node), and, through Mondo's exact matches, its Mondo, UMLS and
ICD-10-CM identifiers and the NCI Thesaurus definition (the reference base cites it; the miner reads findings in it).
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from . import parsers
from .builder import ABBREVIATION, LOCAL_SOURCES, MAPPED, NARROW, Builder, name_index
from .normalize import normalise, uninvert


class VocabularyMerge(Protocol):
    """What this module needs of :class:`.vocab.VocabularyMerge` (typed here so that the two modules import one
    way only: vocab -> mesh_nodes)."""
    bridge: Any
    candidates: list[Any]                                 # names proposed: .doid, .text, .scope, .source
    xrefs: list[tuple[str, str, str, str]]
    definitions: dict[str, list[dict[str, str]]]

    def propose(self, doid: str, names: Iterable[tuple[str, str]], source: str) -> None: ...


SOURCE = "mesh-thesaurus"
FINDINGS_SOURCE = "kg-mesh-findings"          # the descriptors named like a finding that stay findings (curated)
FINDINGS_PATH = LOCAL_SOURCES[FINDINGS_SOURCE][0]
DIAGNOSES_SOURCE = "kg-mesh-diagnoses"        # the descriptors named like a finding that are diagnoses (curated)
DIAGNOSES_PATH = LOCAL_SOURCES[DIAGNOSES_SOURCE][0]
TREE_SOURCE = "mesh-trees"
PREFIX = "MESH"
MAX_DESCENDANTS = 10
# a heading with this many descendants that DO already holds groups them ("Clostridium Infections": botulism,
# tetanus, gas gangrene, pseudomembranous colitis), however few they are
MAX_HELD_DESCENDANTS = 2
# tree branches whose descriptors are no diagnoses of a person: signs, symptoms and pathological processes;
# animal diseases; experimental (laboratory) neoplasms
EXCLUDED_BRANCHES = ("C23", "C22", "C04.619", "C04.697")   # (C04.697: neoplastic processes, not tumours)
ANIMAL_BRANCHES = ("C22", "C04.619")   # ... excluded even when the descriptor sits in another branch too
FINDING_CATEGORIES = ("symptom", "phenotype")


def node_id(ui: str) -> str:
    return f"{PREFIX}:{ui}"


def is_mesh_disease(nid: str, category: str | None) -> bool:
    """A disease node added from MeSH (not one of DO's)."""
    return category == "disease" and nid.startswith(PREFIX + ":")


def subtree_size(cid: str, children: Callable[[str], Iterable[str]], category: Callable[[str], str | None],
                 cap: int) -> int:
    """How many ``is_a`` descendants ``cid`` has, counting stops past ``cap``: the test of "a clinical entity or a
    category" (the KG ranker's parent propagation, the miner's page linking). Judged on the subtree the ontologies
    file under a concept: the diseases added from MeSH below it do not make it a category."""
    seen: set[str] = set()
    stack = [cid]
    while stack and len(seen) <= cap:
        for c in children(stack.pop()):
            if c not in seen and not is_mesh_disease(c, category(c)):
                seen.add(c)
                stack.append(c)
    return len(seen)


def _excluded(tree_number: str, branches: Iterable[str] = EXCLUDED_BRANCHES) -> bool:
    return parsers.under_trees(tree_number, branches)


# a heading that groups diseases ("Respiratory System Abnormalities", "Agricultural Workers' Diseases",
# "Cardiovascular Pregnancy Complications", "Zoonoses"); MeSH's plural diagnoses ("Rib Fractures", "Burns") are
# not groupings
_GROUPING = re.compile(r"\b(?:diseases|disorders|abnormalities|complications|syndromes|conditions|zoonoses)$", re.I)


def display_name(name: str) -> str:
    """A MeSH heading in natural order: ``"Diverticulosis, Colonic"`` -> ``"Colonic Diverticulosis"``; headings
    with more than one comma stay as they are."""
    return uninvert(name) or name


def _names(b: Builder, categories: Iterable[str], scopes: tuple[str, ...]) -> set[str]:
    """The normalised names and synonyms (of ``scopes``) of the builder's nodes of ``categories``."""
    return {k for cat in categories for k in name_index(b.nodes, cat, scopes)}


def _descendants(descriptors: dict[str, parsers.MeshDescriptor]) -> dict[str, set[str]]:
    """The descriptors below each descriptor in the disease trees (by tree number, each once)."""
    owner: dict[str, str] = {}
    for d in descriptors.values():
        for t in d.tree_numbers:
            owner[t] = d.id
    below: dict[str, set[str]] = defaultdict(set)
    for t, ui in owner.items():
        parts = t.split(".")
        for i in range(1, len(parts)):
            anc = owner.get(".".join(parts[:i]))
            if anc and anc != ui:
                below[anc].add(ui)
    return below


def _read_mesh_table(path: str | Path, columns: tuple[str, ...], value: int) -> dict[str, str]:
    """MeSH UI -> column ``value`` of a curated, reasoned table whose first column is a MeSH UI (a header line;
    ``#`` lines and blank lines are ignored)."""
    out: dict[str, str] = {}
    for row in parsers.read_reasoned_table(path, columns):
        if not re.fullmatch(r"D\d{6,9}", row[0]):
            raise ValueError(f"{Path(path).name}: {row[0]!r} is no MeSH UI")
        out[row[0]] = row[value]
    return out


def read_findings(path: str | Path = FINDINGS_PATH) -> dict[str, str]:
    """The curated descriptors named like a finding that stay findings: MeSH UI -> MeSH heading (tab-separated
    ``mesh, name, reason``)."""
    return _read_mesh_table(path, ("mesh", "name", "reason"), 1)


def read_diagnoses(path: str | Path = DIAGNOSES_PATH) -> dict[str, str]:
    """The curated descriptors named like a finding that clinicians name as a diagnosis: MeSH UI -> the name the
    disease node gets (tab-separated ``mesh, heading, name, reason``)."""
    return _read_mesh_table(path, ("mesh", "heading", "name", "reason"), 2)


def add_mesh_diseases(b: Builder, merge: VocabularyMerge, descriptors: dict[str, parsers.MeshDescriptor],
                      mondo: dict[str, list[parsers.Mapping]] | None = None,
                      ncit_terms: dict[str, parsers.Term] | None = None,
                      findings_kept: Iterable[str] = (), diagnoses_named: dict[str, str] | None = None) -> list[str]:
    """Add the MeSH disease descriptors DO lacks as disease nodes (see the module docstring); their names go
    through ``merge`` (applied later with the other vocabularies' names). ``mondo``: the Mondo SSSOM tables read
    (``mondo-mesh``, ``mondo-ncit``, ``mondo-umls`` are used when present); ``ncit_terms``: the NCI Thesaurus
    classes, for definitions; ``findings_kept``: the MeSH UIs named like a finding that stay findings although
    Mondo holds them as diseases (:func:`read_findings`); ``diagnoses_named``: MeSH UI -> name of the descriptors
    named like a finding, or heading a few diseases, that are diagnoses all the same (:func:`read_diagnoses`): they
    get a node under that name when the graph does not hold them. Returns the new node ids."""
    rep = b.report
    mondo = mondo or {}
    findings = _names(b, FINDING_CATEGORIES, ("EXACT",))
    mondo_diseases = {m.object_id.split(":", 1)[1].upper() for m in mondo.get("mondo-mesh", ())
                      if m.subject_id.startswith("MONDO:") and m.object_id.upper().startswith("MESH:")}
    diseases = _names(b, ("disease",), ("EXACT", "MAPPED", "ABBREVIATION"))
    kept = set(findings_kept)
    named = dict(diagnoses_named or {})
    below = _descendants(descriptors)
    mapped: set[str] = set()          # the descriptors DO already holds (through the mappings)
    unmapped: list[parsers.MeshDescriptor] = []
    for d in descriptors.values():
        doid, how = merge.bridge.resolve("MESH", d.id, [d.name, uninvert(d.name) or ""])
        if doid is not None:
            mapped.add(d.id)
        elif how != "ambiguous":
            unmapped.append(d)
    chosen: dict[str, parsers.MeshDescriptor] = {}
    for d in unmapped:
        if (not any(parsers.under_trees(t, parsers.MESH_DISEASE_TREES) and not _excluded(t)
                    for t in d.tree_numbers)
                or any(_excluded(t, ANIMAL_BRANCHES) for t in d.tree_numbers)):
            rep["mesh_nodes_skipped_not_a_diagnosis"] += 1
            continue
        if d.id in named and node_id(d.id) not in b.nodes and d.id not in kept:
            chosen[d.id] = d               # a curated diagnosis: the finding and heading rules do not apply
            rep["mesh_nodes_curated_diagnoses"] += 1
            continue
        under = below.get(d.id, set())
        if (len(under) > MAX_DESCENDANTS or len(under & mapped) >= MAX_HELD_DESCENDANTS
                or _GROUPING.search(display_name(d.name))):
            rep["mesh_nodes_skipped_category"] += 1
            continue
        own = {normalise(n) for t in d.terms if t.preferred_concept and not t.permuted
               for n in (t.text, uninvert(t.text) or "")} - {""}
        if node_id(d.id) in b.nodes:     # an HSDN symptom without SYMP/HP equivalent has it
            rep["mesh_nodes_skipped_finding"] += 1
            continue
        if own & findings:
            if d.id.upper() not in mondo_diseases or d.id in kept:
                rep["mesh_nodes_skipped_finding"] += 1
                continue
            # a finding's name, but Mondo (a disease ontology) holds it as a disease: cluster headache, anaphylaxis
            rep["mesh_nodes_finding_named_diagnoses"] += 1
        if own & diseases:
            rep["mesh_nodes_skipped_named_disease"] += 1
            continue
        chosen[d.id] = d
    # the names the new nodes may carry: not a finding's, not another disease's (the merge checks DO's own)
    new_ids: list[str] = []
    for ui, d in chosen.items():
        nid = node_id(ui)
        a = b.node(nid, "disease", SOURCE, name=named.get(ui) or display_name(d.name))
        b.add_xref(a, PREFIX, ui)
        names = [(n, sc) for t in d.terms for n, sc in mesh_names(t)
                 if normalise(n) not in findings and normalise(n) not in diseases]
        merge.propose(nid, names, SOURCE)
        new_ids.append(nid)
    rep["mesh_nodes_added"] = len(new_ids)
    _link_parents(b, merge, descriptors, chosen)
    _mondo_facts(b, merge, chosen, mondo, ncit_terms or {})
    return new_ids


def _link_parents(b: Builder, merge: VocabularyMerge, descriptors: dict[str, parsers.MeshDescriptor],
                  chosen: dict[str, parsers.MeshDescriptor]) -> None:
    """``is_a`` from each new node to the nearest ancestor of each of its tree numbers that the graph holds."""
    owner: dict[str, str] = {t: d.id for d in descriptors.values() for t in d.tree_numbers}
    held: dict[str, str | None] = {}

    def graph_node(ui: str) -> str | None:
        if ui not in held:
            if ui in chosen:
                held[ui] = node_id(ui)
            else:
                held[ui] = _same_concept(b, merge, descriptors[ui])
        return held[ui]

    for ui, d in chosen.items():
        parents: set[str] = set()
        for t in d.tree_numbers:
            if _excluded(t):
                continue
            parts = t.split(".")
            for i in range(len(parts) - 1, 0, -1):
                anc = owner.get(".".join(parts[:i]))
                target = graph_node(anc) if anc else None
                if target and target != node_id(ui):
                    parents.add(target)
                    break
        for p in sorted(parents):
            b.edge(node_id(ui), "is_a", p, TREE_SOURCE)
        b.report["mesh_nodes_with_parent"] += bool(parents)


def _same_concept(b: Builder, merge: VocabularyMerge, d: parsers.MeshDescriptor) -> str | None:
    """The DO concept a MeSH descriptor is, for a parent edge: Mondo's exact match when it names one, else a DO
    cross-reference only when the concept also bears one of the descriptor's names (DO files some looser
    references as xrefs: "Bunyaviridae Infections" on Oropouche fever)."""
    direct, via_mondo = merge.bridge.targets("MESH", d.id)
    via_mondo.discard("DOID:4")
    if len(via_mondo) == 1:
        return next(iter(via_mondo))
    names = {_loose(t.text) for t in d.terms if t.preferred_concept} | {_loose(display_name(d.name))}
    named = [x for x in sorted(direct) if names & _own_names(b.nodes[x])]
    return named[0] if len(named) == 1 else None


def _loose(name: str) -> str:
    """A name key blind to MeSH's plurals ("Lip Diseases" ~ "lip disease")."""
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
                    for w in normalise(name).split())


def _own_names(a: dict) -> set[str]:
    return {_loose(a["name"]), *(_loose(s) for s in a["synonyms"])}


def _mondo_facts(b: Builder, merge: VocabularyMerge, chosen: dict[str, parsers.MeshDescriptor],
                 mondo: dict[str, list[parsers.Mapping]], ncit_terms: dict[str, parsers.Term]) -> None:
    """Mondo, UMLS and ICD-10-CM identifiers and the NCIt definition of the new nodes, through Mondo's exact
    matches (a Mondo disease matched by exactly one new node); the ICD-10-CM code is one of the commonness prior's
    marks, as it is for the DO diseases."""
    mondo_of_mesh: dict[str, set[str]] = defaultdict(set)
    for m in mondo.get("mondo-mesh", ()):
        if m.subject_id.startswith("MONDO:") and m.object_id.upper().startswith("MESH:"):
            mondo_of_mesh[m.object_id.split(":", 1)[1].upper()].add(m.subject_id)
    if not mondo_of_mesh:
        return
    targets: dict[str, set[str]] = defaultdict(set)      # Mondo id -> new nodes
    for ui in chosen:
        for mid in mondo_of_mesh.get(ui.upper(), ()):
            targets[mid].add(node_id(ui))
    single = {mid: next(iter(ns)) for mid, ns in targets.items() if len(ns) == 1}
    for mid, nid in single.items():
        merge.xrefs.append((nid, "MONDO", mid.split(":", 1)[1], "mondo-mesh"))
    for sid, prefix in (("mondo-umls", "UMLS_CUI"), ("mondo-ncit", "NCI"), ("mondo-icd10cm", "ICD10CM")):
        for m in mondo.get(sid, ()):
            nid = single.get(m.subject_id)
            if nid is None or ":" not in m.object_id:
                continue
            local = m.object_id.split(":", 1)[1]
            merge.xrefs.append((nid, prefix, local, sid))
            if prefix == "NCI":
                t = ncit_terms.get(f"NCIT:{local}")
                if t is not None and t.definition and not t.obsolete:
                    merge.definitions[nid].append({"text": t.definition, "source": "ncit", "id": t.id})
                    b.report["mesh_nodes_ncit_definitions"] += 1


def icd_codes_by_name(b: Builder, merge: VocabularyMerge, new_ids: Iterable[str],
                      named_codes: Iterable[tuple[str, str]]) -> int:
    """ICD-10-CM codes for the new nodes Mondo gave none, by name: a code whose title or inclusion term, cleaned
    (``named_codes``: (code, name) pairs of the codes no DO concept holds), is the node's own name or one of its
    synonyms — "Cluster headache syndrome, unspecified" (G44.00) for Cluster Headache, "Anaphylaxis" (an
    inclusion term of T78.2) for Anaphylaxis. A name two new nodes share links neither; the names of a descriptor's
    other concepts (narrower notions: "Galeazzi's fracture" under Radius Fractures) are not used. The code is the
    commonness prior's ICD-10-CM mark, which the DO diseases have from their own cross-references. Returns the
    number of nodes given a code."""
    ids = set(new_ids)
    coded = {nid for nid, prefix, *_ in merge.xrefs if prefix == "ICD10CM"}
    coded |= {nid for nid in ids if (b.nodes[nid].get("xrefs") or {}).get("ICD10CM")}
    owners: dict[str, set[str]] = defaultdict(set)
    for nid in ids - coded:
        owners[normalise(b.nodes[nid]["name"])].add(nid)
    for c in merge.candidates:
        if c.doid in ids and c.doid not in coded and c.scope == MAPPED and c.source == SOURCE:
            owners[normalise(c.text)].add(c.doid)
    given = codes_by_name(owners, named_codes)
    for nid, codes in sorted(given.items()):
        for code in sorted(codes):
            merge.xrefs.append((nid, "ICD10CM", code, "icd10cm"))
    b.report["mesh_nodes_icd10cm_by_name"] = len(given)
    return len(given)


def codes_by_name(owners: dict[str, set[str]], named_codes: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Node -> the codes whose cleaned title or inclusion term (``named_codes``: (code, name) pairs) is a name
    only that node owns (``owners``: normalised name -> nodes); a name several nodes own gives none of them a
    code."""
    given: dict[str, set[str]] = defaultdict(set)
    for code, name in named_codes:
        hits = owners.get(normalise(name), set())
        if len(hits) == 1:
            given[next(iter(hits))].add(code)
    return given


def mesh_names(term: parsers.MeshTerm) -> list[tuple[str, str]]:
    """Names from a MeSH entry term: the term (inverted headings also in natural order, ``"Asthma,
    Bronchial"`` -> ``Bronchial Asthma``); permuted variants only in natural order (no comma). Terms of the
    descriptor's preferred concept are synonyms (``MAPPED``; abbreviations and acronyms ``ABBREVIATION``); the
    terms of its other concepts name narrower or related notions (``NARROW``: "Pes Anserine Bursitis" under
    Bursitis)."""
    text = " ".join(term.text.split())
    if not text or (term.permuted and "," in text):
        return []
    if not term.preferred_concept:
        scope = NARROW
    elif term.lexical_tag in ("ABB", "ACR"):
        return [(text, ABBREVIATION)]
    else:
        scope = MAPPED
    out = [(text, scope)]
    natural = uninvert(text)
    if natural:
        out.append((natural, scope))
    return out

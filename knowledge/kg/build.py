"""Build the disease knowledge graph (source G) from the catalogued open sources.

Nodes are ontology ids (``DOID:``, ``SYMP:``, ``HP:``, DrugBank ``DB…``, ``UBERON:``, ``OMIM:``/``ORPHA:``/
``DECIPHER:`` for HPO diseases without a DO equivalent, ``MESH:`` for HSDN symptoms without a SYMP/HP
equivalent and for MeSH diseases without a DO equivalent (:mod:`.mesh_nodes`), ``DDX:`` for the optional DDXPlus
conditions). Edges are keyed by relation and carry provenance
(catalog source id + license). See ``RELATIONS`` for the edge directions.

Each node keeps its names with provenance: ``synonyms``, ``synonym_scopes`` (EXACT, RELATED, NARROW, BROAD as the
ontologies say; MAPPED, ABBREVIATION and NARROW for names from other vocabularies) and ``synonym_sources`` (the
source id that contributed each synonym), three lists of equal length. Definitions from other vocabularies go to
``definitions`` (DO's own stays in ``definition``). The disease vocabularies (NCIt, MeSH, ICD-10-CM,
Mondo's mappings, the curated abbreviations) are merged into the DO concepts by :mod:`.vocab`; MeSH diseases DO
lacks become concepts of their own (:mod:`.mesh_nodes`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import networkx as nx

from .. import paths
from .. import sources as sources_mod
from . import cardinal, endemic, parsers, vocab
from .builder import LOCAL_SOURCES, Builder, name_index
from .normalize import normalise, uninvert

log = logging.getLogger(__name__)

# Bump when the build logic changes the graph: it is part of the artefact version.
BUILDER_VERSION = "kg-23"

DEFAULT_SOURCES = ("do-humando", "do-facets", "do-xrefs", "do-disease-symptom", "do-symp", "do-obo-2016",
                   "hsdn", "pharmacotherapydb", "hpo", cardinal.SOURCE, endemic.SOURCE, *vocab.VOCAB_SOURCES,
                   "kg-synonym-errata", "kg-xref-errata")
OPTIONAL_SOURCES = ("ddxplus-conditions", "ddxplus-evidences")
CATEGORIES = ("disease", "symptom", "phenotype", "drug", "anatomy")

# relation -> (verb phrase used in text, description)
RELATIONS = {
    "is_a": ("is a", "child -> parent (diseases, symptoms, phenotypes)"),
    "has_symptom": ("has symptom", "disease -> symptom (DO disease-symptom, HSDN, the curated cardinal findings of "
                                    "common diseases: knowledge.kg.cardinal; MedQuAD sentences mined by the "
                                    "entity extractor, laid over the built graph: knowledge.kg.mined)"),
    "has_phenotype": ("has phenotype", "disease -> phenotype (HPO annotations)"),
    "treated_by": ("is treated by", "disease -> drug (PharmacotherapyDB indications: category DM = disease "
                                    "modifying, SYM = symptomatic; NOT = non-indication is left out)"),
    "located_in": ("is located in", "disease -> anatomy (DO anatomy facet, UBERON)"),
    "xref": ("is equivalent to", "same concept in two vocabularies (both directions)"),
}

HPO_ROOT = "HP:0000118"        # Phenotypic abnormality: only this subtree becomes phenotype nodes
DO_ROOT = "DOID:4"             # "disease": the parent label of DO's top classes


class BuildError(RuntimeError):
    pass


# ---------------------------------------------------------------- files, checksums, version
def _files_of(source_id: str, root: Path) -> list[Path]:
    """Files a source contributes (``ensure`` returns a folder for package data)."""
    if source_id == "hpo":
        return [root / "hp.obo", root / "phenotype.hpoa"]
    if source_id == "icd10cm":
        tabular = sorted(root.glob("icd10c*-tabular-*.xml"))
        if len(tabular) != 1:
            raise BuildError(f"expected one ICD-10-CM tabular XML in {root}, found {[p.name for p in tabular]}")
        return tabular
    return [root]


def _checksum_cache_path() -> Path:
    return paths.build_dir() / "kg" / "checksums.json"


def file_checksums(files: dict[str, list[Path]]) -> dict[str, str]:
    """sha256 per source (over its files), cached by (path, size, mtime) so unchanged files are not re-read."""
    cache_path = _checksum_cache_path()
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    changed = False
    out: dict[str, str] = {}
    for sid, flist in sorted(files.items()):
        h = hashlib.sha256()
        for i, f in enumerate(flist):
            st = f.stat()
            key = str(f.resolve())
            hit = cache.get(key)
            if hit and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
                digest = hit[2]
            else:
                fh_hash = hashlib.sha256()
                with open(f, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        fh_hash.update(chunk)
                digest = fh_hash.hexdigest()
                cache[key] = [st.st_size, st.st_mtime_ns, digest]
                changed = True
            h.update(f"{i}:{digest};".encode())   # content only: the same bytes elsewhere, same version
        out[sid] = h.hexdigest()
    if changed:
        try:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache_path.with_name(f"{cache_path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(cache))
            tmp.replace(cache_path)
        except OSError as exc:  # a read-only home only costs re-hashing next time
            log.debug("checksum cache not written: %s", exc)
    return out


def resolve_sources(sources: Iterable[str] | None, include_ddxplus: bool) -> list[str]:
    ids = list(DEFAULT_SOURCES if sources is None else sources)
    if include_ddxplus:
        ids += [s for s in OPTIONAL_SOURCES if s not in ids]
    unknown = [s for s in ids if s not in sources_mod.CATALOG and s not in LOCAL_SOURCES]
    if unknown:
        raise BuildError(f"unknown source id(s) {unknown}; known: {sorted([*sources_mod.CATALOG, *LOCAL_SOURCES])}")
    not_g = [s for s in ids if s not in DEFAULT_SOURCES and s not in OPTIONAL_SOURCES]
    if not_g:
        raise BuildError(f"not knowledge-graph sources: {not_g}")
    if "do-humando" not in ids:
        raise BuildError("the knowledge graph needs the 'do-humando' source (its disease backbone)")
    return sorted(dict.fromkeys(ids))


def locate(source_ids: list[str]) -> dict[str, Path]:
    """Local path of each source: fetched catalog files, package data folders, files shipped with the code."""
    return {sid: LOCAL_SOURCES[sid][0] if sid in LOCAL_SOURCES else Path(sources_mod.ensure(sid))
            for sid in source_ids}


def compute_version(located: dict[str, Path]) -> str:
    sums = file_checksums({sid: _files_of(sid, p) for sid, p in located.items()})
    h = hashlib.sha256(BUILDER_VERSION.encode())
    for sid in sorted(sums):
        h.update(f"|{sid}={sums[sid]}".encode())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- graph assembly
def _add_term(b, tid: str, t, category: str, source: str):
    """A node for an ontology term (symptom or phenotype) with its synonyms and cross-references."""
    a = b.node(tid, category, source, name=t.name, definition=t.definition)
    for syn, scope in t.synonyms:
        b.add_synonym(a, syn, scope, source)
    for raw in t.xrefs:
        px = parsers.split_xref(raw)
        if px:
            b.add_xref(a, *px)
    return a


def _link_phenotype_equivalents(b, hp_names: dict[str, set[str]], category: str, prefix: str, source: str,
                                exact_synonyms: bool) -> int:
    """xref edges (both directions) between nodes of ``category`` whose id starts with ``prefix`` and the HP
    phenotypes with the same normalised name (and EXACT synonyms when asked) or the same UMLS CUI."""
    hp_cui: dict[str, set[str]] = defaultdict(set)
    for nid, a in b.nodes.items():
        if a["category"] == "phenotype":
            for cui in a["xrefs"].get("UMLS_CUI", ()):
                hp_cui[cui].add(nid)
    pairs = 0
    for nid, a in list(b.nodes.items()):
        if a["category"] != category or not nid.startswith(prefix):
            continue
        keys = [a["name"]]
        if exact_synonyms:
            keys += [s for s, sc in zip(a["synonyms"], a["synonym_scopes"]) if sc == "EXACT"]
        matches: dict[str, str] = {}
        for k in keys:
            for h in hp_names.get(normalise(k), ()):
                matches.setdefault(h, "name")
        for cui in a["xrefs"].get("UMLS_CUI", ()):
            for h in hp_cui.get(cui, ()):
                matches.setdefault(h, "UMLS_CUI")
        for h, method in matches.items():
            b.edge(nid, "xref", h, source, method=method)
            b.edge(h, "xref", nid, source, method=method)
            pairs += 1
    return pairs


# ---------------------------------------------------------------- one ingest function per source
def ingest_disease_ontology(b: Builder, humando: Path, obo_2016: Path | None) -> None:
    """DO backbone (``do-humando``, HumanDO.tsv): diseases and is_a edges; with the 2016 OBO (``do-obo-2016``):
    synonyms, definitions and the map of old/alternative/obsolete ids to current ones (:meth:`Builder.do_id`)."""
    rep = b.report
    b.step("Disease Ontology terms (HumanDO.tsv)")
    labels, parent_labels = parsers.read_humando(humando)
    for doid, label in labels.items():
        b.node(doid, "disease", "do-humando", name=label)
    obo: dict[str, parsers.Term] = {}
    if obo_2016 is not None:
        b.step("DO 2016 OBO: synonyms, definitions, alternative ids")
        obo = parsers.read_obo(obo_2016)
    b.do_obo = obo
    # old/alternative/obsolete DO ids -> current ids
    redirect = b.do_redirect
    for t in obo.values():
        for alt in t.alt_ids:
            if t.id in b.nodes:
                redirect.setdefault(alt, t.id)
        if t.obsolete and t.id not in b.nodes:
            for r in t.replaced_by:
                if r in b.nodes:
                    redirect.setdefault(t.id, r)
    label_to_id = {label: doid for doid, label in labels.items()}
    for t in obo.values():            # labels of terms outside HumanDO.tsv (e.g. the root "disease")
        if not t.obsolete:
            label_to_id.setdefault(t.name, t.id)
    label_to_id.setdefault("disease", DO_ROOT)
    for doid, plabel in parent_labels:
        pid = label_to_id.get(plabel)
        if pid is None:
            rep["do_parent_label_unresolved"] += 1
            continue
        if pid not in b.nodes:
            ot = obo.get(pid)
            b.node(pid, "disease", "do-humando", name=plabel, definition=ot.definition if ot else None)
        b.edge(doid, "is_a", pid, "do-humando")
    for doid, a in list(b.nodes.items()):
        t = obo.get(doid)
        if t is None or t.obsolete:
            continue
        if "do-obo-2016" not in a["sources"]:
            a["sources"].append(b.s("do-obo-2016"))
        for syn, scope in t.synonyms:
            b.add_synonym(a, syn, scope, "do-obo-2016")
        if t.definition and not a["definition"]:
            a["definition"] = t.definition
    rep["do_redirects"] = len(redirect)


def ingest_do_facets(b: Builder, path: Path) -> None:
    """Current DO definitions (they win over the 2016 ones) and the anatomy facet (located_in edges)."""
    b.step("DO facets: definitions, anatomy")
    definitions, anatomy, anatomy_names = parsers.read_do_facets(path)
    for doid, d in definitions.items():
        if doid in b.nodes:
            a = b.nodes[doid]
            a["definition"] = d  # current definitions win over the 2016 ones
            if "do-facets" not in a["sources"]:
                a["sources"].append(b.s("do-facets"))
    specific = parsers.most_specific(anatomy)
    for doid, uids in specific.items():
        if doid not in b.nodes:
            b.report["anatomy_unknown_disease"] += 1
            continue
        for uid in sorted(uids):
            b.node(uid, "anatomy", "do-facets", name=anatomy_names.get(uid, uid))
            b.edge(doid, "located_in", uid, "do-facets")


def ingest_do_xrefs(b: Builder, path: Path | None) -> None:
    """Cross-references of DO diseases (OMIM, ORPHA, ICD-10, UMLS, ...); without the ``do-xrefs`` file
    (``path`` None) the 2016 OBO's xrefs are used."""
    if path is not None:
        b.step("DO cross-references")
        for doid, raws in parsers.read_do_xrefs(path).items():
            if doid not in b.nodes:
                continue
            for raw in raws:
                px = parsers.split_xref(raw)
                if px:
                    b.add_xref(b.nodes[doid], *px)
        return
    for doid, t in b.do_obo.items():  # fall back to the 2016 xrefs
        if doid in b.nodes:
            for raw in t.xrefs:
                px = parsers.split_xref(raw)
                if px:
                    b.add_xref(b.nodes[doid], *px)


def ingest_symptom_ontology(b: Builder, path: Path) -> None:
    """Symptom Ontology terms and is_a edges; alternative/obsolete ids go to :meth:`Builder.symp_id`."""
    b.step("Symptom Ontology")
    symp = parsers.read_symp_owl(path)
    redirect = b.symp_redirect
    for t in symp.values():
        if t.obsolete or not t.name:
            b.report["symp_obsolete"] += t.obsolete
            continue
        _add_term(b, t.id, t, "symptom", "do-symp")
        for alt in t.alt_ids:
            redirect.setdefault(alt, t.id)
    for t in symp.values():
        if t.obsolete:
            for r in t.replaced_by:
                redirect.setdefault(t.id, r)
    for t in symp.values():
        if t.id in b.nodes:
            for p in t.parents:
                p = p if p in b.nodes else redirect.get(p, p)
                if p in b.nodes:
                    b.edge(t.id, "is_a", p, "do-symp")


def ingest_disease_symptom(b: Builder, path: Path, symptom_ontology_loaded: bool) -> None:
    """DO disease -> symptom edges. Without the Symptom Ontology the symptoms get nodes from this file."""
    rep = b.report
    b.step("DO disease -> symptom edges")
    for doid, dlabel, sid, slabel in parsers.read_disease_symptom(path):
        d = b.do_id(doid)
        s = b.symp_id(sid)
        if d is None:
            rep["disease_symptom_unknown_disease"] += 1
            continue
        if s is None:
            if symptom_ontology_loaded:
                rep["disease_symptom_unknown_symptom"] += 1
                continue
            s = sid  # Symptom Ontology not loaded: keep the symptom with its label from this file
            b.node(s, "symptom", "do-disease-symptom", name=slabel)
        b.edge(d, "has_symptom", s, "do-disease-symptom")


def ingest_hpo(b: Builder, folder: Path, orphanet_do: dict[str, set[str]] | None = None) -> None:
    """HPO phenotypes under "Phenotypic abnormality" (hp.obo) and disease annotations (phenotype.hpoa):
    OMIM/ORPHA diseases merge into the DO terms that cross-reference them, or, for an Orphanet disease no DO term
    cross-references, into the DO terms Mondo matches exactly (``orphanet_do``: :func:`.vocab.orphanet_to_do`);
    the others get their own node."""
    rep = b.report
    b.step("HPO terms (hp.obo)")
    hp = parsers.read_obo(folder / "hp.obo")
    hp_redirect: dict[str, str] = {}
    children: dict[str, list[str]] = defaultdict(list)
    for t in hp.values():
        if not t.obsolete:
            for p in t.parents:
                children[p].append(t.id)
            for alt in t.alt_ids:
                hp_redirect[alt] = t.id
        else:
            for r in t.replaced_by:
                hp_redirect[t.id] = r
    keep, stack = set(), [HPO_ROOT]
    while stack:
        x = stack.pop()
        if x in keep:
            continue
        keep.add(x)
        stack.extend(children.get(x, ()))
    for tid in keep:
        _add_term(b, tid, hp[tid], "phenotype", "hpo")
    for tid in keep:
        for p in hp[tid].parents:
            if p in keep:
                b.edge(tid, "is_a", p, "hpo")
    rep["hpo_terms_outside_phenotypic_abnormality"] = sum(1 for t in hp.values() if not t.obsolete) - len(keep)

    b.step("HPO annotations (phenotype.hpoa)")
    hpoa = parsers.read_hpoa(folder / "phenotype.hpoa")
    names, annotations = hpoa.names, hpoa.annotations
    rep["hpo_negated_annotations_skipped"] = hpoa.negated
    # OMIM/ORPHA -> DO via DO cross-references
    ext_to_do: dict[str, set[str]] = defaultdict(set)
    for doid, a in b.nodes.items():
        if a["category"] != "disease":
            continue
        for prefix in ("OMIM", "ORPHA"):
            for local in a["xrefs"].get(prefix, ()):
                ext_to_do[f"{prefix}:{local}"].add(doid)
    do_parents: dict[str, list[str]] = defaultdict(list)
    for (u, rel, v) in b.edges:
        if rel == "is_a" and u.startswith("DOID:"):
            do_parents[u].append(v)
    target: dict[str, list[str]] = {}
    for did, dname in names.items():
        cands = ext_to_do.get(did)
        if not cands and orphanet_do and did in orphanet_do:
            cands = {d for d in orphanet_do[did] if d in b.nodes}
            if cands:
                rep["hpo_diseases_merged_via_mondo"] += 1
        if cands:
            if len(cands) > 1:
                # several DO terms claim the same OMIM/ORPHA id: keep the most specific ones
                general = set()
                for c in cands:
                    general |= _do_ancestors(do_parents, c) & cands
                cands = (cands - general) or cands
                rep["hpo_disease_mapped_to_several_do"] += 1
            tlist = sorted(cands)
            for doid in tlist:
                prefix, local = did.split(":", 1)
                b.add_xref(b.nodes[doid], prefix, local)
                if "hpo" not in b.nodes[doid]["sources"]:
                    b.nodes[doid]["sources"].append(b.s("hpo"))
            target[did] = tlist
            rep["hpo_diseases_merged_into_do"] += 1
        else:
            a = b.node(did, "disease", "hpo", name=dname)
            prefix, local = did.split(":", 1)
            b.add_xref(a, prefix, local)
            target[did] = [did]
            rep["hpo_diseases_own_node"] += 1
    merged_count: dict[str, int] = defaultdict(int)
    for tl in target.values():
        for d in tl:
            merged_count[d] += 1
    # ages of onset (aspect C): a DO term merging several OMIM/ORPHA diseases gets the union
    for did, labels in hpoa.onsets.items():
        for d in target.get(did, ()):
            b.nodes[d]["onset"] = sorted(set(b.nodes[d].get("onset") or ()) | labels)
            rep["hpo_diseases_with_onset"] += 1
    for ann in annotations:
        ph = ann.phenotype if ann.phenotype in b.nodes else hp_redirect.get(ann.phenotype)
        if ph is None or ph not in b.nodes:
            rep["hpo_annotations_unknown_phenotype"] += 1
            continue
        for d in target[ann.disease]:
            b.edge(d, "has_phenotype", ph, "hpo", frequency=ann.frequency,
                   evidence=ann.evidence or None, hpo_disease=ann.disease if merged_count[d] > 1 and d != ann.disease else None)


def link_symptom_phenotypes(b: Builder) -> None:
    """SYMP <-> HP equivalence (same normalised label / exact synonym, or same UMLS CUI)."""
    b.step("symptom <-> phenotype equivalences")
    b.report["xref_symp_hp_pairs"] += _link_phenotype_equivalents(
        b, name_index(b.nodes, "phenotype"), "symptom", "SYMP:", "do-symp", exact_synonyms=True)


def link_disease_phenotypes(b: Builder) -> None:
    """DO disease <-> HP phenotype equivalence (e.g. DOID:2841 asthma ~ HP:0002099 Asthma)."""
    b.step("disease <-> phenotype equivalences")
    b.report["xref_do_hp_pairs"] += _link_phenotype_equivalents(
        b, name_index(b.nodes, "phenotype", scopes=()), "disease", "DOID:", "hpo", exact_synonyms=False)


def ingest_hsdn(b: Builder, path: Path) -> None:
    """HSDN symptom-disease network: MeSH symptoms mapped onto SYMP/HP by name (own ``MESH:`` node otherwise),
    has_symptom edges weighted by TF-IDF score and co-occurrence count."""
    rep = b.report
    b.step("HSDN symptom-disease network")
    symp_names = name_index(b.nodes, "symptom")
    hp_names = name_index(b.nodes, "phenotype")
    symp_related = name_index(b.nodes, "symptom", scopes=("EXACT", "RELATED"))
    hp_related = name_index(b.nodes, "phenotype", scopes=("EXACT", "RELATED"))
    mesh_target: dict[str, str] = {}
    for row in parsers.read_hsdn(path):
        d = b.do_id(row["doid_code"])
        if d is None:
            rep["hsdn_unknown_disease"] += 1
            continue
        mid, mname = row["symptom_id"], row["symptom_name"]
        sid = mesh_target.get(mid)
        if sid is None:
            variants = [mname] + ([uninvert(mname)] if uninvert(mname) else [])
            keys = [normalise(v) for v in variants]
            keys += [k[:-1] for k in keys if k.endswith("s") and not k.endswith("ss") and len(k) > 4]
            found = None
            # preferred names / exact synonyms first, then related synonyms; SYMP before HP
            for idx in (symp_names, hp_names, symp_related, hp_related):
                for k in keys:
                    hits = sorted(idx.get(k, ()))
                    if hits:
                        found = hits[0]
                        break
                if found:
                    break
            if found:
                sid = found
                b.add_xref(b.nodes[sid], "MESH", mid)
                if "hsdn" not in b.nodes[sid]["sources"]:
                    b.nodes[sid]["sources"].append(b.s("hsdn"))
                rep["hsdn_symptoms_mapped"] += 1
            else:
                sid = f"MESH:{mid}"
                a = b.node(sid, "symptom", "hsdn", name=mname)
                if uninvert(mname):
                    b.add_synonym(a, uninvert(mname), "EXACT", "hsdn")
                b.add_xref(a, "MESH", mid)
                rep["hsdn_symptoms_own_node"] += 1
            mesh_target[mid] = sid
        try:
            weight = float(row["tfidf_score"])
        except (KeyError, ValueError):
            weight = None
        try:
            cooccurs = int(row.get("cooccurs", ""))
        except ValueError:
            cooccurs = None
        b.edge(d, "has_symptom", sid, "hsdn", weight=weight, cooccurs=cooccurs)


def ingest_pharmacotherapydb(b: Builder, path: Path) -> None:
    """PharmacotherapyDB indications: treated_by edges for disease-modifying (DM) and symptomatic (SYM) drugs."""
    rep = b.report
    b.step("PharmacotherapyDB indications")
    for row in parsers.read_pharmacotherapydb(path):
        d = b.do_id(row["doid_id"])
        if d is None:
            rep["pharmacotherapydb_unknown_disease"] += 1
            continue
        if row.get("category") not in ("DM", "SYM"):
            # NOT: curators judged the drug a non-indication (e.g. an antibiotic listed for asthma)
            rep["pharmacotherapydb_non_indications_skipped"] += 1
            continue
        drug = row["drugbank_id"]
        a = b.node(drug, "drug", "pharmacotherapydb", name=row["drug"])
        b.add_xref(a, "DRUGBANK", drug)
        b.edge(d, "treated_by", drug, "pharmacotherapydb", category=row.get("category") or None,
               n_curators=_int(row.get("n_curators")), n_resources=_int(row.get("n_resources")))


def read_synonym_errata(path: Path) -> list[tuple[str, str, str]]:
    """The curated synonym errata: (concept id, synonym, reason) rows of a tab-separated file with the header
    ``concept, synonym, reason`` (``#`` lines and blank lines ignored)."""
    rows = parsers.read_reasoned_table(path, ("concept", "synonym", "reason"))
    for cid, *_ in rows:
        if ":" not in cid:
            raise ValueError(f"{Path(path).name}: {cid!r} is no concept id")
    return [(cid, syn, why) for cid, syn, why in rows]


def remove_synonym_errata(b: Builder, path: Path) -> None:
    """Remove the synonyms the curated errata list from their concepts (SYMP's diarrhoea is also "fecal
    incontinence" in the Symptom Ontology), and with them the equivalences the graph drew through them alone: an
    ``xref`` edge made by name (``method="name"``) between the concept and another whose names no longer meet (SYMP's
    diarrhoea and HPO's Bowel incontinence) goes, both ways (``xref_errata_unlinked``). A row whose concept or synonym
    the graph lacks is counted (``synonym_errata_unmatched``; the tests require none)."""
    rep = b.report
    b.step("synonym errata (curated)")
    touched: set[str] = set()
    for cid, synonym, _ in read_synonym_errata(path):
        a = b.nodes.get(cid)
        key = normalise(synonym)
        keep = [i for i, s in enumerate(a["synonyms"]) if normalise(s) != key] if a else []
        if a is None or len(keep) == len(a["synonyms"]):
            rep["synonym_errata_unmatched"] += 1
            continue
        n = len(a["synonyms"])
        for name in ("synonyms", "synonym_scopes", "synonym_sources"):      # parallel lists
            if len(a.get(name) or ()) == n:
                a[name] = [a[name][i] for i in keep]
        rep["synonym_errata_removed"] += 1
        touched.add(cid)

    def names(nid: str) -> set[str]:
        node = b.nodes[nid]
        return {normalise(x) for x in [node["name"], *node["synonyms"]]} - {""}

    gone = [(u, rel, v) for (u, rel, v), attrs in b.edges.items()
            if rel == "xref" and (u in touched or v in touched) and attrs.get("method") == "name"
            and u in b.nodes and v in b.nodes and not names(u) & names(v)]
    for key in gone:     # each direction is its own edge (another source may hold the reverse by a CUI)
        del b.edges[key]
    rep["xref_errata_unlinked"] += len(gone)


def read_xref_errata(path: Path) -> list[tuple[str, str, str]]:
    """The curated cross-reference errata: (concept id, ``PREFIX:id``, reason) rows of a tab-separated file with the
    header ``concept, xref, reason`` (``#`` lines and blank lines ignored)."""
    rows = parsers.read_reasoned_table(path, ("concept", "xref", "reason"))
    for cid, xref, _ in rows:
        if ":" not in cid:
            raise ValueError(f"{Path(path).name}: {cid!r} is no concept id")
        if parsers.split_xref(xref) is None:
            raise ValueError(f"{Path(path).name}: {xref!r} is no cross-reference the graph keeps")
    return [(cid, xref, why) for cid, xref, why in rows]


def remove_xref_errata(b: Builder, path: Path, phenotypes: bool = False) -> None:
    """Remove the cross-references the curated errata list from their concepts (DO files Cushing syndrome's MeSH,
    NCIt, UMLS and ICD codes under hyperaldosteronism; HPO gives erythema the UMLS concept of flushing). Run twice:
    for the disease rows right after the Disease Ontology's cross-references are read, and with ``phenotypes`` for the
    HPO rows (``HP:`` ids) right after HPO is, before the symptom and disease equivalences are drawn through them. A
    row whose concept or cross-reference the graph lacks is counted (``xref_errata_unmatched``; the tests require
    none)."""
    rep = b.report
    b.step("cross-reference errata (curated" + (", phenotypes)" if phenotypes else ")"))
    for cid, xref, _ in read_xref_errata(path):
        if cid.startswith("HP:") != phenotypes:
            continue
        prefix, local = parsers.split_xref(xref)
        a = b.nodes.get(cid)
        held = a["xrefs"].get(prefix) if a else None
        if not held or local not in held:
            rep["xref_errata_unmatched"] += 1
            continue
        held.remove(local)
        if not held:
            del a["xrefs"][prefix]
        rep["xref_errata_removed"] += 1


def ingest_cardinal_findings(b: Builder, path: Path) -> None:
    """The curated cardinal findings of common diseases (:mod:`.cardinal`): a ``has_symptom`` edge per finding with
    the textbook citation (``reference``) and the finding's place in the entry (``order``, 1 = most characteristic).
    A fact another source already states — the disease linked to the finding or to an xref-equivalent of it (HP
    "Fever" = SYMP "fever") — gets ``kg-cardinal`` in that edge's ``also_sources`` instead: one fact, one edge. A
    disease or finding the graph does not have is counted and skipped (the tests require none). An entry's
    ``typical_age`` becomes the disease node's ``typical_age`` attribute ([min, max] years, either may be None), its
    ``course`` (acute or chronic) the node's ``typical_course``."""
    rep = b.report
    b.step("cardinal findings of common diseases (curated)")
    equivalent: dict[str, list[str]] = defaultdict(list)
    for (u, rel, v) in b.edges:
        if rel == "xref":
            equivalent[u].append(v)
    for entry in cardinal.read(path):
        d = b.do_id(entry.disease.id)
        if d is None:
            rep["cardinal_unknown_disease"] += 1
            continue
        rep["cardinal_diseases"] += 1
        if entry.typical_age is not None:
            b.nodes[d]["typical_age"] = list(entry.typical_age)
            rep["cardinal_typical_ages"] += 1
        if entry.course is not None:
            b.nodes[d]["typical_course"] = entry.course
            rep[f"cardinal_{entry.course}_course"] += 1
        for i, f in enumerate(entry.findings, start=1):
            fid = b.symp_id(f.id) if f.id.startswith("SYMP:") else f.id
            if fid is None or b.nodes.get(fid, {}).get("category") not in ("symptom", "phenotype"):
                rep["cardinal_unknown_finding"] += 1
                continue
            existing = next(((rel, x) for x in (fid, *equivalent.get(fid, ()))
                             for rel in ("has_symptom", "has_phenotype") if (d, rel, x) in b.edges), None)
            rel, target = existing or ("has_symptom", fid)
            b.edge(d, rel, target, cardinal.SOURCE, reference=entry.reference, order=i)
            rep["cardinal_on_existing_edges" if existing else "cardinal_edges_added"] += 1


def ingest_endemic_regions(b: Builder, path: Path) -> None:
    """Where geographically restricted diseases are acquired (:mod:`.endemic`): the disease node's
    ``endemic_regions`` (sorted region keys) and ``endemic_reference`` (the citation). A disease the graph does not
    have is counted and skipped (the tests require none)."""
    b.step("where geographically restricted diseases are acquired (curated)")
    for entry in endemic.read(path):
        d = b.do_id(entry.disease_id)
        if d is None:
            b.report["endemic_unknown_disease"] += 1
            continue
        b.nodes[d]["endemic_regions"] = list(entry.regions)
        b.nodes[d]["endemic_reference"] = entry.reference
        b.report["endemic_diseases"] += 1


def build_graph(located: dict[str, Path], progress: bool = False) -> tuple[nx.MultiDiGraph, dict]:
    """Assemble the graph from located source files (``{source_id: path}``). Returns the graph and a report
    of what was read, merged and dropped. The order of the steps matters: later sources are mapped onto the
    nodes of earlier ones."""
    t0 = time.perf_counter()
    b = Builder()

    def step(msg: str) -> None:
        if progress:
            print(f"  [{time.perf_counter() - t0:5.1f}s] {msg}", flush=True)
        log.info(msg)

    b.step = step
    ingest_disease_ontology(b, located["do-humando"], located.get("do-obo-2016"))
    if "do-facets" in located:
        ingest_do_facets(b, located["do-facets"])
    if "do-xrefs" in located or b.do_obo:
        ingest_do_xrefs(b, located.get("do-xrefs"))
    if "kg-xref-errata" in located:
        # before anything maps through the cross-references (HPO, Mondo, the vocabularies)
        remove_xref_errata(b, located["kg-xref-errata"])
    if "do-symp" in located:
        ingest_symptom_ontology(b, located["do-symp"])
    if "do-disease-symptom" in located:
        ingest_disease_symptom(b, located["do-disease-symptom"], symptom_ontology_loaded="do-symp" in located)
    mondo = vocab.read_mondo(b, located)       # the HPO step and the vocabulary merge both map through Mondo
    if "hpo" in located:
        ingest_hpo(b, located["hpo"], vocab.orphanet_to_do(b, mondo))
        if "kg-xref-errata" in located:
            remove_xref_errata(b, located["kg-xref-errata"], phenotypes=True)
    if "do-symp" in located and "hpo" in located:
        link_symptom_phenotypes(b)
    if "hpo" in located:
        link_disease_phenotypes(b)
    if "hsdn" in located:
        ingest_hsdn(b, located["hsdn"])
    if "pharmacotherapydb" in located:
        ingest_pharmacotherapydb(b, located["pharmacotherapydb"])
    if any(sid in located for sid in vocab.VOCAB_SOURCES):
        # after the finding sources: the names add to DO concepts (no earlier step sees them) and the MeSH diseases
        # DO lacks become nodes, which must not take a finding's name
        vocab.ingest_vocabularies(b, located, {sid: _files_of(sid, p) for sid, p in located.items()},
                                 mondo)
    if "kg-synonym-errata" in located:
        # after every source of names
        remove_synonym_errata(b, located["kg-synonym-errata"])
    if cardinal.SOURCE in located:
        # after the vocabularies: an entry may name a disease added from MeSH
        ingest_cardinal_findings(b, located[cardinal.SOURCE])
    if endemic.SOURCE in located:
        ingest_endemic_regions(b, located[endemic.SOURCE])
    if "ddxplus-conditions" in located:
        ingest_ddxplus(b, located["ddxplus-conditions"], located.get("ddxplus-evidences"))

    step("assembling the NetworkX graph")
    g = assemble(b.nodes.items(), b.edge_list())
    rep = dict(sorted(b.report.items()))
    rep["build_seconds"] = round(time.perf_counter() - t0, 2)
    return g, rep


def assemble(nodes: Iterable[tuple[str, dict]], edges: Iterable[tuple[str, str, str, dict]]) -> nx.MultiDiGraph:
    """A MultiDiGraph from node and edge lists, filling networkx's adjacency dicts directly (about ten times
    faster than ``add_edges_from``, which re-checks every edge); falls back to the public API when the
    internals are not the expected ones. Edge attribute dicts are used as given (possibly shared)."""
    g = nx.MultiDiGraph()
    nodes = list(nodes)
    if not all(hasattr(g, a) for a in ("_node", "_adj", "_pred", "_succ")):
        g.add_nodes_from(nodes)
        g.add_edges_from(edges)
        return g
    node = {n: a for n, a in nodes}
    succ: dict[str, dict] = {n: {} for n in node}
    pred: dict[str, dict] = {n: {} for n in node}
    for u, v, k, d in edges:
        if u not in node or v not in node:
            raise ValueError(f"edge {u} -{k}-> {v} refers to a missing node")
        kd = succ[u].get(v)
        if kd is None:
            kd = succ[u][v] = {}
            pred[v][u] = kd
        kd[k] = d
    g._node = node
    g._adj = succ          # the descriptor keeps _succ in sync and resets cached views
    g._pred = pred
    return g


def _int(x) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def ingest_ddxplus(b: Builder, conditions: Path, evidences_path: Path | None) -> None:
    """DDXPlus conditions (optional): ``DDX:`` diseases linked to DO by name or ICD-10, with their symptoms and
    antecedents as ``DDX:`` symptom nodes."""
    b.step("DDXPlus conditions (optional)")
    conds, evidences = parsers.read_ddxplus(conditions, evidences_path)
    icd_to_do: dict[str, set[str]] = defaultdict(set)
    icd_category_to_do: dict[str, set[str]] = defaultdict(set)   # "K21" -> DO terms coded K21.x
    for doid, a in b.nodes.items():
        if a["category"] == "disease" and doid.startswith("DOID:"):
            for code in a["xrefs"].get("ICD10CM", ()):
                icd_to_do[code.upper()].add(doid)
                icd_category_to_do[code.upper().split(".")[0]].add(doid)
    do_names = name_index(b.nodes, "disease")
    for c in conds:
        cid = f"DDX:{normalise(c['key']).replace(' ', '_')}"
        a = b.node(cid, "disease", "ddxplus-conditions", name=c["name"])
        if c["icd10"]:
            b.add_xref(a, "ICD10", c["icd10"])
        same = {d for d in do_names.get(normalise(c["name"]), ()) if d.startswith("DOID:")}
        code = c["icd10"].upper()
        if code:
            exact = icd_to_do.get(code, set())
            near = icd_category_to_do.get(code, set()) if "." not in code else set()
            same |= exact or (near if len(near) == 1 else set())
        for d in sorted(same):
            b.edge(cid, "xref", d, "ddxplus-conditions", method="name/ICD-10")
            b.edge(d, "xref", cid, "ddxplus-conditions", method="name/ICD-10")
        for code in c["symptoms"] + c["antecedents"]:
            ev = evidences.get(code, {})
            text = ev.get("question_en") or code
            sid = f"DDX:{code}"
            b.node(sid, "symptom", "ddxplus-conditions", name=text)
            rel_kind = "antecedent" if code in c["antecedents"] else "symptom"
            b.edge(cid, "has_symptom", sid, "ddxplus-conditions", kind=rel_kind)
        b.report["ddxplus_conditions"] += 1


def _do_ancestors(parents: dict[str, list[str]], cid: str) -> set[str]:
    seen: set[str] = set()
    stack = list(parents.get(cid, ()))
    while stack:
        x = stack.pop()
        if x not in seen:
            seen.add(x)
            stack.extend(parents.get(x, ()))
    return seen

"""Query API over the disease knowledge graph, persistence, and ``load_or_build``."""
from __future__ import annotations

import difflib
import gc
import logging
import os
import pickle
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from .. import paths
from . import build as _build
from .normalize import normalise

log = logging.getLogger(__name__)

FORMAT = 2
FINDING_RELATIONS = ("has_symptom", "has_phenotype")
_ID_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.-]*):\s*(\S+)\s*$")
_DRUGBANK_RE = re.compile(r"^\s*(DB\d{5})\s*$", re.IGNORECASE)
# lookup rank of a synonym scope (0 is the preferred name)
# at equal match quality, a disease reading of a name comes first (then symptom, phenotype, ...)
_CATEGORY_RANK = {"disease": 0, "symptom": 1, "phenotype": 2, "drug": 3, "anatomy": 4}
# the ontologies' own exact synonyms first, then names merged from other vocabularies (MAPPED, ABBREVIATION),
# then related, narrower and broader synonyms
_SCOPE_RANK = {"EXACT": 1, "MAPPED": 2, "ABBREVIATION": 2, "RELATED": 3, "NARROW": 4, "BROAD": 4}
_OTHER_SCOPE_RANK = 4
# a diagnosis name's generic head nouns, interchangeable between vocabularies
_HEADS = ("disorder", "syndrome", "disease", "dysfunction")
# leading words that qualify a diagnosis without naming another disease (KnowledgeGraph.resolve)
_QUALIFIERS = frozenset({"acute", "chronic", "subacute", "recurrent", "exertional", "classic", "classical", "typical",
                         "severe", "mild", "moderate", "uncomplicated", "complicated", "isolated", "idiopathic",
                         "primary", "ruptured", "perforated", "bleeding", "symptomatic", "early", "late", "adult",
                         "new", "onset", "suspected", "probable", "possible"})


def _loose_variants(key: str) -> list[str]:
    """Normalised name variants for :meth:`KnowledgeGraph.resolve`, closest first (the key itself stands for its
    spelling written together)."""
    out: list[str] = [key]

    def add(v: str) -> None:
        v = " ".join(v.split())
        if v and v not in out:
            out.append(v)

    words = key.split()
    stems = [words]
    while len(stems[-1]) > 1 and stems[-1][0] in _QUALIFIERS:
        stems.append(stems[-1][1:])
    for w in stems:
        if len(w) == 1 and w[0] in _QUALIFIERS:
            continue                      # "acute" alone names no disease
        text = " ".join(w)
        if w is not words:
            add(text)
        if w[-1] in _HEADS and len(w) > 1:
            add(" ".join(w[:-1]))
            for h in _HEADS:
                add(" ".join(w[:-1] + [h]))
            for h in _HEADS:
                if h != w[-1]:
                    add(f"{text} {h}")      # "... dysfunction" -> "... dysfunction syndrome"
            if len(w) > 2 and w[-2] in _HEADS:
                add(" ".join(w[:-2]))
        else:
            for h in _HEADS:
                add(f"{text} {h}")
    # last, an organism's adjective as its name ("trichomonal vaginitis" -> "trichomonas vaginitis", "candidal" ->
    # "candida", "gonococcal" -> "gonococcus"): each word ending in "-al" (long enough not to be "viral" or "renal")
    # in each of the forms above; only a form a vocabulary holds finds anything
    for v in list(out):
        ws = v.split()
        for i, w in enumerate(ws):
            if len(w) >= 8 and w.endswith("al") and w not in _QUALIFIERS:
                for ending in ("as", "a", "us"):
                    add(" ".join(ws[:i] + [w[:-2] + ending] + ws[i + 1:]))
    return out
VOCABULARY_SCOPES = ("EXACT", "RELATED")


@dataclass
class Concept:
    id: str
    name: str
    category: str
    synonyms: list[str]
    definition: str | None
    xrefs: dict[str, list[str]]
    sources: list[str]
    # definitions from other vocabularies (NCIt): {"text", "source", "id"}; ``definition`` stays DO's own
    definitions: list[dict] = field(default_factory=list, compare=False)


@dataclass
class Triple:
    subject: str
    subject_name: str
    relation: str
    object: str
    object_name: str
    weight: float | None
    frequency: float | None
    source: str
    license: str
    # further edge attributes: evidence, category (DM/SYM), also_sources, hpo_disease, method, ...
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def id(self) -> str:
        return f"{self.subject}|{self.relation}|{self.object}"

    def text(self) -> str:
        verb = _build.RELATIONS.get(self.relation, (self.relation.replace("_", " "), ""))[0]
        s = f"{self.subject_name} {verb} {self.object_name}"
        quals = []
        if self.relation == "treated_by" and self.extra.get("category") == "SYM":
            quals.append("symptomatic treatment")
        if self.frequency is not None:
            quals.append(f"reported frequency {self.frequency:.0%}")
        return f"{s} ({'; '.join(quals)})" if quals else s


@dataclass
class VocabEntry:
    id: str
    name: str
    synonyms: list[str]
    category: str


class KnowledgeGraph:
    """A built graph plus look-up indexes (built lazily on first use)."""

    def __init__(self, graph: nx.MultiDiGraph, version: str, report: dict | None = None) -> None:
        self.graph = graph
        self.version = version
        # the version of the built graph before any overlay (mined edges, :mod:`.mined`); == version without one
        self.base_version = version
        self.report = report or {}
        self._names: dict[str, list[tuple[int, str]]] | None = None
        self._compact: dict[str, list[tuple[int, str]]] | None = None
        self._xref_index: dict[str, list[str]] | None = None
        self._lower_ids: dict[str, str] | None = None

    # ------------------------------------------------------------ concepts
    def concept(self, cid: str) -> Concept | None:
        a = self.graph.nodes.get(cid)
        if a is None:
            return None
        return Concept(id=cid, name=a["name"], category=a["category"], synonyms=list(a["synonyms"]),
                       definition=a.get("definition"), xrefs={k: list(v) for k, v in a["xrefs"].items()},
                       sources=list(a["sources"]), definitions=[dict(d) for d in a.get("definitions", ())])

    def _name_index(self) -> dict[str, list[tuple[int, str]]]:
        """normalised name -> [(rank, id)]; rank 0 = preferred name, 1 = exact synonym, 2+ = other scopes
        (``_SCOPE_RANK``)."""
        if self._names is None:
            names: dict[str, list[tuple[int, str]]] = {}
            for nid, a in self.graph.nodes(data=True):
                entries = [(0, a["name"])] + [(_SCOPE_RANK.get(sc, _OTHER_SCOPE_RANK), s)
                                              for s, sc in zip(a["synonyms"], a["synonym_scopes"])]
                seen: set[str] = set()
                for rank, text in entries:
                    key = normalise(text)
                    if key and key not in seen:
                        seen.add(key)
                        names.setdefault(key, []).append((rank, nid))
            self._names = names
        return self._names

    def _build_indexes(self) -> None:
        self._name_index()
        xrefs: dict[str, list[str]] = {}
        for nid, a in self.graph.nodes(data=True):
            for prefix, locals_ in a["xrefs"].items():
                for local in locals_:
                    xrefs.setdefault(f"{prefix}:{local}".upper(), []).append(nid)
        self._xref_index = xrefs
        self._lower_ids = {nid.upper(): nid for nid in self.graph.nodes}

    def lookup(self, text: str, categories: Iterable[str] | None = None) -> list[Concept]:
        """Concepts named ``text``: by id (``DOID:2841``, ``doid:2841``), by cross-reference
        (``OMIM:154700``, ``ICD10CM:J45``, ``MESH:D001249``) or by name/synonym, insensitive to case,
        punctuation and whitespace. Preferred-name matches come first, then exact synonyms, then names merged
        from other vocabularies and abbreviations, then related, narrower and broader synonyms; ties go to
        diseases, then symptoms, phenotypes, drugs, anatomy, then to the better connected concept."""
        cats = set(categories) if categories is not None else None
        text = (text or "").strip()
        if not text:
            return []
        hits: list[tuple[int, str]] = []
        m = _DRUGBANK_RE.match(text)
        if m or _ID_RE.match(text):
            if self._xref_index is None:
                self._build_indexes()
            up = text.upper().replace(" ", "")
            if up in self._lower_ids:
                hits.append((-2, self._lower_ids[up]))
            if not m:
                hits.extend((-1, nid) for nid in self._xref_index.get(up, ()))
        hits.extend(self._name_index().get(normalise(text), ()))
        best: dict[str, int] = {}
        for rank, nid in hits:
            if nid not in best or rank < best[nid]:
                best[nid] = rank
        deg = self.graph.degree
        nodes = self.graph.nodes
        ordered = sorted(best, key=lambda n: (best[n], _CATEGORY_RANK.get(nodes[n]["category"], 9), -deg(n), n))
        out = []
        for nid in ordered:
            if cats is None or self.graph.nodes[nid]["category"] in cats:
                out.append(self.concept(nid))
        return out

    def resolve(self, text: str, categories: Iterable[str] | None = None) -> list[Concept]:
        """:meth:`lookup`, and when that finds nothing, the spellings a clinician's name differs from the
        vocabularies' by (first that finds something wins): written together or apart ("takotsubo" for
        "Tako-Tsubo"); the generic head noun dropped, swapped or added ("advanced sleep phase disorder" for
        "... syndrome", "temporomandibular joint dysfunction" for "... dysfunction syndrome"); leading qualifiers
        that do not change the disease dropped ("exertional heat stroke" -> "heat stroke", "acute hepatitis B" ->
        "hepatitis B"). For whole diagnosis names (a gold label, a model's answer), not for phrases in a text."""
        hits = self.lookup(text, categories)
        if hits:
            return hits
        cats = set(categories) if categories is not None else None
        key = normalise(text)
        if not key:
            return []
        for variant in _loose_variants(key):
            found = [*self._name_index().get(variant, ()), *self._compact_index().get(variant.replace(" ", ""), ())]
            best: dict[str, int] = {}
            for rank, nid in found:
                if cats is None or self.graph.nodes[nid]["category"] in cats:
                    best[nid] = min(rank, best.get(nid, rank))
            if best:
                deg = self.graph.degree
                return [self.concept(n) for n in sorted(best, key=lambda n: (best[n], -deg(n), n))]
        return []

    def _compact_index(self) -> dict[str, list[tuple[int, str]]]:
        """The name index keyed without spaces ("takotsubo cardiomyopathy" = "tako tsubo cardiomyopathy")."""
        if self._compact is None:
            out: dict[str, list[tuple[int, str]]] = {}
            for k, v in self._name_index().items():
                out.setdefault(k.replace(" ", ""), []).extend(v)
            self._compact = out
        return self._compact

    def exact_matches(self, text: str, categories: Iterable[str] | None = None, max_rank: int = 2) -> list[Concept]:
        """Concepts whose preferred name (rank 0), exact synonym (1) or merged vocabulary name (2) is ``text``
        (normalised), best rank first: :meth:`lookup` without ids and without related, narrower or broader
        synonyms."""
        cats = set(categories) if categories is not None else None
        best: dict[str, int] = {}
        for rank, nid in self._name_index().get(normalise(text or ""), ()):
            if rank <= max_rank and (cats is None or self.graph.nodes[nid]["category"] in cats):
                best[nid] = min(rank, best.get(nid, rank))
        return [self.concept(n) for n in sorted(best, key=lambda n: (best[n], n))]

    def suggest(self, text: str, n: int = 5, categories: Iterable[str] | None = None) -> list[Concept]:
        """Closest names to ``text`` (for "did you mean" messages)."""
        keys = difflib.get_close_matches(normalise(text), list(self._name_index()), n=n * 3, cutoff=0.6)
        cats = set(categories) if categories is not None else None
        out, seen = [], set()
        for k in keys:
            for _, nid in sorted(self._name_index()[k]):
                if nid not in seen and (cats is None or self.graph.nodes[nid]["category"] in cats):
                    seen.add(nid)
                    out.append(self.concept(nid))
        return out[:n]

    # ------------------------------------------------------------ triples
    def _triple(self, u: str, v: str, d: dict) -> Triple:
        nodes = self.graph.nodes
        extra = {k: x for k, x in d.items()
                 if k not in ("relation", "source", "license", "weight", "frequency")}
        return Triple(subject=u, subject_name=nodes[u]["name"], relation=d["relation"], object=v,
                      object_name=nodes[v]["name"], weight=d.get("weight"), frequency=d.get("frequency"),
                      source=d["source"], license=d["license"], extra=extra)

    def neighbors(self, cid: str, relation: str | None = None, direction: str = "out") -> list[Triple]:
        if direction not in ("out", "in", "both"):
            raise ValueError(f"direction must be 'out', 'in' or 'both', not {direction!r}")
        if cid not in self.graph:
            return []
        out: list[Triple] = []
        if direction in ("out", "both"):
            for u, v, k, d in self.graph.out_edges(cid, keys=True, data=True):
                if relation is None or k == relation:
                    out.append(self._triple(u, v, d))
        if direction in ("in", "both"):
            for u, v, k, d in self.graph.in_edges(cid, keys=True, data=True):
                if relation is None or k == relation:
                    out.append(self._triple(u, v, d))
        return out

    def triples(self, cids: Iterable[str], relations: Iterable[str] | None = None) -> list[Triple]:
        """Outgoing triples of the given concepts (the facts *about* them), optionally only some relations.
        Incoming findings are reached with ``diseases_with_finding``."""
        rels = set(relations) if relations is not None else None
        out, seen = [], set()
        for cid in dict.fromkeys(cids):
            if cid not in self.graph:
                continue
            for u, v, k, d in self.graph.out_edges(cid, keys=True, data=True):
                if (rels is None or k in rels) and (u, k, v) not in seen:
                    seen.add((u, k, v))
                    out.append(self._triple(u, v, d))
        return out

    # ------------------------------------------------------------ hierarchy
    def parents(self, cid: str) -> list[str]:
        if cid not in self.graph:
            return []
        return [v for _, v, k in self.graph.out_edges(cid, keys=True) if k == "is_a"]

    def children(self, cid: str) -> list[str]:
        if cid not in self.graph:
            return []
        return [u for u, _, k in self.graph.in_edges(cid, keys=True) if k == "is_a"]

    def ancestors(self, cid: str, max_depth: int = 10) -> list[str]:
        """is_a ancestors, nearest first (breadth-first), without ``cid`` itself."""
        return self._walk(cid, self.parents, max_depth)

    def descendants(self, cid: str, max_depth: int = 100) -> list[str]:
        """is_a descendants, nearest first (breadth-first), without ``cid`` itself."""
        return self._walk(cid, self.children, max_depth)

    @staticmethod
    def _walk(cid: str, step: Callable[[str], list[str]], max_depth: int) -> list[str]:
        seen, out = {cid}, []
        frontier = [cid]
        for _ in range(max_depth):
            nxt = []
            for x in frontier:
                for p in step(x):
                    if p not in seen:
                        seen.add(p)
                        out.append(p)
                        nxt.append(p)
            if not nxt:
                break
            frontier = nxt
        return out

    def equivalents(self, cid: str) -> set[str]:
        """Other ids of the same concept, following xref edges transitively (``cid`` itself excluded)."""
        if cid not in self.graph:
            return set()
        seen = {cid}
        queue = deque([cid])
        while queue:
            x = queue.popleft()
            for _, v, k in self.graph.out_edges(x, keys=True):
                if k == "xref" and v not in seen:
                    seen.add(v)
                    queue.append(v)
        seen.discard(cid)
        return seen

    def diseases_with_finding(self, finding_id: str) -> list[Triple]:
        """has_symptom/has_phenotype triples pointing at the finding or at any of its equivalents.

        Order: curated DO and HSDN symptom edges first (common diseases; HSDN by TF-IDF weight), then HPO
        annotations (mostly rare diseases) by reported frequency."""
        out = []
        for fid in [finding_id, *sorted(self.equivalents(finding_id))]:
            if fid not in self.graph:
                continue
            for u, v, k, d in self.graph.in_edges(fid, keys=True, data=True):
                if k in FINDING_RELATIONS:
                    out.append(self._triple(u, v, d))
        out.sort(key=lambda t: (t.relation != "has_symptom", -(t.weight or 0.0),
                                -(t.frequency if t.frequency is not None else 0.5), t.subject))
        return out

    def subgraph(self, cids: Iterable[str], depth: int = 1) -> nx.MultiDiGraph:
        """Induced subgraph on ``cids`` and everything within ``depth`` hops (either direction)."""
        keep = {c for c in cids if c in self.graph}
        frontier = set(keep)
        for _ in range(depth):
            nxt = set()
            for x in frontier:
                nxt.update(self.graph.successors(x))
                nxt.update(self.graph.predecessors(x))
            nxt -= keep
            keep |= nxt
            frontier = nxt
        return self.graph.subgraph(keep).copy()

    # ------------------------------------------------------------ vocabulary, stats
    def vocabulary(self, categories: Iterable[str] | None = None,
                   scopes: Iterable[str] = VOCABULARY_SCOPES) -> list[VocabEntry]:
        """Names and synonyms per concept, for the entity extractor and the entity-keyed index. By default the
        ontologies' exact and related synonyms only: the names merged from other vocabularies (``MAPPED``,
        ``ABBREVIATION``) serve :meth:`lookup`, and are added here only when asked for."""
        cats = set(categories) if categories is not None else None
        scopes = set(scopes)
        out = []
        for nid, a in self.graph.nodes(data=True):
            if cats is not None and a["category"] not in cats:
                continue
            if nid.startswith("DDX:") and a["category"] == "symptom":
                continue  # DDXPlus evidences are questions, not names
            syns = [s for s, sc in zip(a["synonyms"], a["synonym_scopes"]) if sc in scopes]
            out.append(VocabEntry(id=nid, name=a["name"], synonyms=syns, category=a["category"]))
        return out

    def stats(self) -> dict:
        nodes_cat: Counter = Counter()
        nodes_src: Counter = Counter()
        for _, a in self.graph.nodes(data=True):
            nodes_cat[a["category"]] += 1
            for s in a["sources"]:
                nodes_src[s] += 1
        edges_rel: Counter = Counter()
        edges_src: Counter = Counter()
        edges_rel_src: Counter = Counter()
        for _, _, k, d in self.graph.edges(keys=True, data=True):
            edges_rel[k] += 1
            for s in [d["source"], *d.get("also_sources", ())]:
                edges_src[s] += 1
                edges_rel_src[f"{k}/{s}"] += 1
        return {
            "version": self.version,
            "nodes": self.graph.number_of_nodes(),
            "edges": self.graph.number_of_edges(),
            "nodes_per_category": dict(sorted(nodes_cat.items())),
            "nodes_per_source": dict(sorted(nodes_src.items())),
            "edges_per_relation": dict(sorted(edges_rel.items())),
            "edges_per_source": dict(sorted(edges_src.items())),
            "edges_per_relation_and_source": dict(sorted(edges_rel_src.items())),
        }

    # ------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Write atomically (temp file + rename) with pickle protocol 5: networkx's adjacency dicts as they
        are (loading them back needs no per-edge work) plus the name index."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        g = self.graph
        payload = {"format": FORMAT, "version": self.version, "report": self.report,
                   "names": self._name_index()}
        if all(hasattr(g, a) for a in ("_node", "_succ", "_pred")):
            payload.update(node=g._node, succ=g._succ, pred=g._pred)
        else:  # pragma: no cover - other networkx internals
            payload.update(nodes=list(g.nodes(data=True)), edges=list(g.edges(keys=True, data=True)))
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as fh:
                pickle.dump(payload, fh, protocol=5)
            tmp.replace(path)
        finally:
            if tmp.exists():
                tmp.unlink()
        return path

    @classmethod
    def load(cls, path: str | Path) -> KnowledgeGraph:
        path = Path(path)
        # The artefact is a few hundred thousand small containers: the cyclic GC would rescan them many
        # times while they are created (3-4x slower), and none of them can be garbage.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            with open(path, "rb") as fh:
                payload = pickle.load(fh)
            if not isinstance(payload, dict) or payload.get("format") != FORMAT:
                raise ValueError(f"{path} is not a knowledge-graph artefact of format {FORMAT}; rebuild it "
                                 "(clinicalrag kg build --rebuild)")
            if "succ" in payload:
                g = nx.MultiDiGraph()
                g._node = payload["node"]
                g._adj = payload["succ"]       # the descriptor keeps _succ in sync
                g._pred = payload["pred"]
            else:
                g = _build.assemble(payload["nodes"], payload["edges"])
        finally:
            if gc_was_enabled:
                gc.enable()
        kg = cls(g, payload["version"], payload.get("report"))
        kg._names = payload.get("names")
        return kg


def first_match(kg, names: Iterable[str], categories: Iterable[str] | None = None) -> list[Concept]:
    """The concepts of the first of ``names`` (variants of one diagnosis name, most literal first) that the graph's
    exact :meth:`~KnowledgeGraph.lookup` finds; failing that, of the first that :meth:`~KnowledgeGraph.resolve`
    finds. A graph object without ``resolve`` is looked up exactly only. ``[]`` when none resolves."""
    names = [n.strip() for n in names if n and n.strip()]
    finders = [kg.lookup] + ([kg.resolve] if hasattr(kg, "resolve") else [])
    for find in finders:
        for n in names:
            hits = find(n, categories=categories)
            if hits:
                return hits
    return []


def artefact_dir() -> Path:
    return paths.build_dir() / "kg"


def artefact_path(version: str) -> Path:
    return artefact_dir() / f"kg-{version}.pkl"


def load_or_build(sources: Iterable[str] | None = None, include_ddxplus: bool = False, rebuild: bool = False,
                  progress: bool = False, mined: bool | None = None,
                  mined_path: str | Path | None = None) -> KnowledgeGraph:
    """Load the graph for the current source files and options, building (and saving) it when no matching
    artefact exists or ``rebuild`` is set. ``sources`` defaults to every default knowledge-graph source.

    ``mined``: lay the edges mined from the reference texts over the graph (:mod:`.mined`): ``None`` (default) when
    the mined-edges file exists, ``True`` always (a missing file is an error), ``False`` never. ``mined_path``: that
    file (default :func:`.mined.default_path` of the built graph's version). The overlay is applied in memory on
    every load (it takes a fraction of a second); the saved artefact stays the built graph. With it, the version
    is ``<built version>+m<digest>``."""
    from . import mined as _mined  # noqa: PLC0415

    ids = _build.resolve_sources(sources, include_ddxplus)
    located = _build.locate(ids)
    version = _build.compute_version(located)
    path = artefact_path(version)
    kg = None
    if path.exists() and not rebuild:
        t0 = time.perf_counter()
        try:
            kg = KnowledgeGraph.load(path)
            log.info("loaded knowledge graph %s in %.2fs", path, time.perf_counter() - t0)
        except (OSError, ValueError, pickle.UnpicklingError, EOFError) as exc:
            log.warning("knowledge graph artefact %s unreadable (%s); rebuilding", path, exc)
    if kg is None:
        if progress:
            print(f"building knowledge graph {version} from {', '.join(ids)}", flush=True)
        g, report = _build.build_graph(located, progress=progress)
        report["sources"] = ids
        kg = KnowledgeGraph(g, version, report)
        kg.save(path)
        if progress:
            print(f"saved {path} ({path.stat().st_size / 1e6:.1f} MB)", flush=True)
    _mined.overlay(kg, mined, mined_path)
    return kg

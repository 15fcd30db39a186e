"""Mining disease -> finding edges from the reference texts (MedQuAD) with the project's own entity extractor.

For every MedQuAD answer about a disease's symptoms, causes or tests, or describing it in general (question types
``symptoms``, ``causes``, ``exams and tests``, ``information``: a MedlinePlus page is all "information", its
symptoms in one sentence of it):

1. **Which disease.** The page's UMLS CUIs are tied to knowledge-graph diseases (a CUI that a disease lists among
   its cross-references: ``cui``; a non-DO disease carrying the CUI is replaced by its cross-referenced Disease
   Ontology equivalent: ``xref``). MedQuAD lists among a page's CUIs the broader and neighbouring concepts it
   mentions (the "Diabetic Neuropathies" page carries diabetes and type 2 diabetes, PFAPA pharyngitis and fever,
   "Familial atrial fibrillation" atrial fibrillation) and its focus CUI is sometimes a broader one ("Purpura" on
   the "Thrombotic Thrombocytopenic Purpura" page), so the page's disease is the one of its CUIs that the focus's
   own name names (exact name or synonym, whole or before a colon, its last word also in the singular), else the
   focus CUI's; the other CUIs add only diseases narrower than or equivalent to it. A page none of whose CUIs
   names a disease is tied by the focus's name alone (preferred names, exact synonyms and merged vocabulary names
   only: ``name``), else by its CUIs. A page whose focus names no disease (a test, a drug, a gene) is skipped, and
   so is a guide to preventing, monitoring or treating a disease or to living with it ("Prevent diabetes problems:
   Keep your heart and blood vessels healthy", "Treatment Methods for Kidney Failure"): it lists the signs of
   complications (a heart attack's), not how the disease presents.
2. **Which sentences.** The answer is split into sentences with character offsets into ``Document.text`` (list
   items are sentences, also when a flattened list joins them with " - " or has lost its bullets: lines without
   closing punctuation after a line ending in ":" or stopping mid-sentence ("... a family history of"); a leading
   bullet is not part of the span). Skipped: question headings ("What are the
   symptoms of X?"), section headings (a short title-cased line without punctuation) and, on GARD pages, the
   Human Phenotype Ontology table and its boilerplate (a copy of HPO's annotations, which the graph has already).
3. **Which findings.** The extractor (:class:`agents.mee.MEE`, one instance, warmed once) reads every sentence.
   A mention is kept when it links to a symptom or phenotype concept of the graph and is affirmed: not negated,
   not hedged (ConText's possible existence), not hypothetical, not a relative's, not past history (ConText and
   the sectionizer), and its clause has no negation ("not", "without", "rather than", ...), no hedge before it
   ("if", "when", "whether", "check for", ...) and no risk wording ("risk", "chance", "more likely": a risk
   factor is no finding), no comparison ("similar to", "mimics") and no other disease (one that is not the page's
   disease, an equivalent, an ancestor or a near descendant: "The symptoms of carpal tunnel syndrome include ..."
   on an amyloidosis page); a list item is skipped too when its lead-in names another disease (one it does not
   merely compare with), refers back to one ("... symptoms of a stroke. These symptoms may include:"), speaks of
   risk or of relatives, and so is a sentence referring back to another disease ("As the disease gets worse ..."
   after "... you may develop chronic kidney disease"). On causes,
   tests and general pages only sentences that speak of findings count ("symptoms", "signs"; for tests also
   "shows", "reveals", "indicates", ...), and the items of a list such a sentence leads into: the others name
   causes, risk factors, procedures, treatments and their side effects.
   Diseases, drugs, tests and anatomy are not findings; the disease itself (or a concept cross-referenced to it)
   and a few generic words ("symptom", "sign") are skipped.
4. **One edge per (disease, finding).** Equivalent finding ids (SYMP fever = HP Fever) are one finding: the id the
   disease already has a curated edge to, else the first seen. The edge cites the best sentence (a symptoms page
   before a tests page before a causes page, then the first) and counts its supporting sentences and pages.

The result is written in the format of :mod:`knowledge.kg.mined` (``clinicalrag kg mine``) and laid over the graph
when it loads.
"""
from __future__ import annotations

import hashlib
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowledge.kg import mined as mined_format
from knowledge.kg.mesh_nodes import subtree_size
from knowledge.kg.normalize import normalise
from knowledge.kg.vocab import NCIT_ORGANISATION, ncit_definitions, ncit_url

from .textutil import is_question, name_stems, sentences, signs_of_another

log = logging.getLogger(__name__)

# Bump when a change to the miner changes its output: `clinicalrag kg build` mines again when the file's differs.
MINER_VERSION = "miner-10"
# "definition": the NCI Thesaurus definitions the knowledge graph keeps for its diseases (read as short documents)
QUESTION_TYPES = ("symptoms", "causes", "exams and tests", "information", "definition")
# which page's sentence an edge cites when several support it
_QTYPE_RANK = {"symptoms": 0, "exams and tests": 1, "causes": 2, "information": 3, "definition": 4}
DEFINITION_ORGANISATION = NCIT_ORGANISATION
FINDING_CATEGORIES = ("symptom", "phenotype")
_LINK_RANK = {"cui": 0, "xref": 1, "name": 2}

# GARD pages end with the HPO table of the disease and an explanation of its frequencies
_HPO_TABLE = re.compile(r"The Human Phenotype Ontology provides the following list of signs and symptoms")
_BULLETS = "-–—*•·▪ \t"
_CLAUSE_BREAK = re.compile(r"[;:]|\s[–—]\s|,?\s+(?:but|although|though|however|whereas|while|except)\b", re.I)
_NEGATION = re.compile(r"n't\b|\b(?:no|not|never|without|none|neither|nor|cannot|unable|inability|absent|absence|"
                       r"lacks?|lacking|rather than|unlike|instead of|free of|rule[sd]? out|ruling out)\b", re.I)
_HEDGE = re.compile(r"\b(?:if|when|whenever|whether|unless|unclear|unknown|uncertain|suspect(?:s|ed)?|possibl[ey]|in case|"
                    r"to see if|to find out|to exclude|(?:check|look|screen|test)(?:s|ed|ing)? for)\b", re.I)
_RISK = re.compile(r"\b(?:risks?|chances?|more likely|likelihood|predispos\w*)\b", re.I)
# a comparison with another condition is not a statement about this one
_COMPARISON = re.compile(r"\b(?:similar to|like those of|mimic\w*|resembl\w*|mistaken for|confused with)\b", re.I)
# "Signs and symptoms of a bacterial infection include fever, chills ..." on a mitral valve prolapse page lists the
# signs of another condition (a complication, a test reaction): the named condition shares no word with the page's
# disease, so the sentence's findings are not this disease's
# a causes or tests page speaks of findings only in sentences that say so (the rest are causes, risk factors, test
# procedures and their side effects)
_SPEAKS_OF_FINDINGS = re.compile(r"\b(?:symptoms?|signs?)\b", re.I)
_SENTENCE_CUES = {
    "causes": _SPEAKS_OF_FINDINGS,
    "information": _SPEAKS_OF_FINDINGS,
    # a definition says what a disease is (cells, genes, histology) and, in some sentences, how it presents
    "definition": re.compile(r"\b(?:symptoms?|signs?|present(?:s|ing)?\s+(?:with|as)|manifest\w*|"
                             r"characteri[sz]ed\s+by|clinical\s+features?)\b", re.I),
    "exams and tests": re.compile(r"\b(?:symptoms?|signs?|shows?|showed|shown|reveals?|revealed|finds?|found|"
                                  r"detects?|detected|indicates?|indicated)\b", re.I),
}
_LIST_SEPARATOR = re.compile(r"\s-\s")
# a line that stops mid-sentence ("... for children with a family history of") leads into the list below it
_OPEN_END = re.compile(r"\b(?:of|with|for|to|as|include|includes|including|are|is|and|or)$", re.I)
# a list's lead-in about relatives' diseases (like one with risk wording) makes its items no findings
_FAMILY_LEAD = re.compile(r"\b(?:family history|relatives?)\b", re.I)
# a sentence that speaks of the symptoms of a disease named just before it ("These symptoms may include:", "As the
# disease gets worse it can cause ..."); "this condition", "these features", "such cases" on a page about one disease
# mean the page's own disease even after a sentence that named another, so they do not refer back
_REFERS_BACK = re.compile(r"^(?:these|those) (?:symptoms|signs)\b|^as the disease (?:gets|becomes|grows) worse\b", re.I)
# a sentence "ending" in one of these abbreviations goes on ("(e.g. urinary retention)")
_ABBREVIATION_END = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|cf|Dr|St)\.|\b[A-Za-z]\.)$")
# a linked "disease" with more descendants than this is a category ("disease", "kidney disease"), not the page's topic
MAX_DESCENDANTS = 100
# a question heading that lost its question mark ("What are the signs and symptoms of Ataxia")
_QUESTION_HEADING = re.compile(r"^(?:what|how|who|why|which|is|are|can|do|does)\b[^.!;:]{0,150}$", re.I)


def _singular(name: str) -> str:
    """``name`` with its last word in the singular ("Diabetic Neuropathies" -> "Diabetic Neuropathy")."""
    head, _, last = name.strip().rpartition(" ")
    low = last.lower()
    if low.endswith("ies") and len(low) > 4:
        last = last[:-3] + "y"
    elif low.endswith("s") and not low.endswith(("ss", "us", "is")) and len(low) > 3:
        last = last[:-1]
    return f"{head} {last}".strip()


# a page whose focus is a guide to preventing, monitoring or treating a disease, or to living with it
_GUIDE_PAGE = re.compile(r"^\s*(?:prevent(?:ing)?\b|monitor(?:ing)?\b|treatment methods\b|living with\b|"
                         r"what i need to know about (?:physical activity|preparing|living with)\b)", re.I)
_TITLE_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
GENERIC_FINDINGS = frozenset(normalise(x) for x in (
    "symptom", "symptoms", "sign", "signs", "signs and symptoms", "finding", "clinical finding", "abnormality",
    "phenotypic abnormality", "disease", "illness", "condition", "problem", "syndrome", "disorder"))


@dataclass
class _Found:
    """The best citing sentence of one (disease, finding) pair so far, and what supports the pair."""

    rank: tuple
    record: dict[str, Any]
    sentences: set[tuple[str, int]] = field(default_factory=set)
    docs: set[str] = field(default_factory=set)


def miner_version() -> str:
    """The miner's version with a fingerprint of what its extractor reads by (the lexicon version, the context cues,
    the test-result and everyday-words phrase tables, the modules that read them, the demographics reader, the
    extractor itself): editing
    a phrase table, its reader or a cue changes what is mined, so `clinicalrag kg build` mines again."""
    from .mee import demographics, extractor, labs, lay  # noqa: PLC0415
    from .mee.labs import PHRASE_TABLE  # noqa: PLC0415
    from .mee.lay import LAY_TABLE  # noqa: PLC0415
    from .mee.lexicon import LEXICON_VERSION  # noqa: PLC0415
    from .nlp import (EXTRA_CONTEXT_RULES, INFORMANT_RELATIVES, INFORMANT_VERBS, PERSISTENCE_PHRASES,  # noqa: PLC0415
                      TEST_NAME_PHRASES)

    h = hashlib.sha256(f"lexicon-{LEXICON_VERSION}".encode())
    h.update(repr((EXTRA_CONTEXT_RULES, PERSISTENCE_PHRASES, TEST_NAME_PHRASES, INFORMANT_RELATIVES,
                   INFORMANT_VERBS)).encode())
    from . import nlp  # noqa: PLC0415

    # (demographics: the relative a text opens with is its subject, not a family-history cue; extractor: how far a
    # denial reaches)
    for table in (PHRASE_TABLE, LAY_TABLE, Path(labs.__file__), Path(lay.__file__), Path(nlp.__file__),
                  Path(demographics.__file__), Path(extractor.__file__)):
        h.update(table.read_bytes())
    return f"{MINER_VERSION}+x{h.hexdigest()[:8]}"


@dataclass
class MineResult:
    edges: list[mined_format.MinedEdge]
    stats: dict[str, Any]

    def header(self, kg_version: str) -> dict[str, Any]:
        """The header keys of the mined-edges file for these edges."""
        return {"kg_version": kg_version, "miner": miner_version(), **{k: v for k, v in self.stats.items()
                                                                        if k not in ("rejected",)},
                "rejected": dict(sorted(self.stats.get("rejected", {}).items()))}


class Miner:
    """Mine MedQuAD documents against one knowledge graph with one extractor.

    ``kg``: the *built* graph (``load_or_build(mined=False)``: mining reads curated edges, not earlier mined ones);
    ``mee``: the entity extractor (default: ``MEE(kg.vocabulary(), llm=None, fuzzy=False)``: exact vocabulary
    matching, no fuzzy linking of misspellings, which reference prose does not need)."""

    def __init__(self, kg: Any, mee: Any = None, question_types: Sequence[str] = QUESTION_TYPES) -> None:
        self.kg = kg
        if mee is None:
            from .mee import MEE  # noqa: PLC0415

            mee = MEE(kg.vocabulary(), llm=None, fuzzy=False)
        self.mee = mee
        self.question_types = tuple(question_types)
        g = kg.graph
        self._cat = {n: a.get("category") for n, a in g.nodes(data=True)}
        self._names = {n: a.get("name") or n for n, a in g.nodes(data=True)}
        self._cui: dict[str, list[str]] = {}
        for n, a in g.nodes(data=True):
            if a.get("category") == "disease":
                for cui in (a.get("xrefs") or {}).get("UMLS_CUI", ()):
                    self._cui.setdefault(cui.upper(), []).append(n)
        self._equiv: dict[str, frozenset[str]] = {}
        self._links: dict[tuple, list[tuple[str, str]]] = {}
        self._topic: dict[str, frozenset[str]] = {}
        self._desc: dict[str, int] = {}

    # ---- linking ---------------------------------------------------------------------------------------------
    def equivalents(self, cid: str) -> frozenset[str]:
        e = self._equiv.get(cid)
        if e is None:
            e = self._equiv[cid] = frozenset(self.kg.equivalents(cid))
        return e

    def _do_of(self, cid: str) -> tuple[str, bool]:
        """A Disease Ontology disease for ``cid`` (itself, else its first cross-referenced DO equivalent)."""
        if cid.startswith("DOID:"):
            return cid, False
        do = sorted(e for e in self.equivalents(cid) if e.startswith("DOID:") and self._cat.get(e) == "disease")
        return (do[0], True) if do else (cid, False)

    def link(self, doc: Any) -> list[tuple[str, str]]:
        """``[(disease id, how)]`` for a document's focus (``how``: "cui", "xref" or "name"); [] when its focus
        names no disease of the graph. A definition document names its disease itself (``disease_id``)."""
        own = getattr(doc, "disease_id", None)
        if own:
            return [(own, "xref")] if own in self._cat and self.descendants(own) <= MAX_DESCENDANTS else []
        focus_cui = (doc.focus_cui or "").upper()
        cuis = tuple(dict.fromkeys(c.upper() for c in (focus_cui, *(doc.cuis or ())) if c))
        key = (cuis, doc.focus)
        hit = self._links.get(key)
        if hit is not None:
            return hit
        if _GUIDE_PAGE.search(doc.focus or ""):
            self._links[key] = []
            return []
        primary = self._cui_diseases(focus_cui) if focus_cui else {}
        further: dict[str, str] = {}
        for cui in cuis:
            if cui != focus_cui:
                for d, how in self._cui_diseases(cui).items():
                    further.setdefault(d, how)
        title = (doc.focus or "").split(":", 1)[0]
        names = [n for n in dict.fromkeys((doc.focus, title, _singular(title),
                                           *(getattr(doc, "synonyms", ()) or ()))) if n]
        named: list[str] = []          # the diseases the focus's own name names, in name order
        for name in names:
            for c in self.kg.exact_matches(name, categories=("disease",)):
                d, _ = self._do_of(c.id)
                if d not in named and self.descendants(d) <= MAX_DESCENDANTS:
                    named.append(d)
        found: dict[str, str]
        linked = {**further, **primary}
        # the page's CUIs name its own disease (the focus CUI is sometimes a broader one: "Purpura" on the
        # "Thrombotic Thrombocytopenic Purpura" page): those, and the narrower diseases of its CUIs
        anchors = [d for d in linked if any(d == n or d in self.equivalents(n) for n in named)]
        if not anchors:
            anchors = list(primary)
        if anchors:
            found = {d: linked[d] for d in anchors}
            for d, how in linked.items():
                if d not in found and any(self._narrower_or_same(d, a) for a in anchors):
                    found[d] = how
        elif named:
            found = {named[0]: "name"}
        else:
            found = further
        out = sorted(found.items(), key=lambda x: (_LINK_RANK[x[1]], x[0]))
        self._links[key] = out
        return out

    def _cui_diseases(self, cui: str) -> dict[str, str]:
        """The diseases (DO ones first) a UMLS CUI names, each with how it was reached ("cui" or "xref")."""
        out: dict[str, str] = {}
        nodes = self._cui.get(cui, ())
        do_nodes = [n for n in nodes if n.startswith("DOID:")]
        for n in do_nodes or nodes:
            d, via = self._do_of(n)
            if self.descendants(d) <= MAX_DESCENDANTS:
                out.setdefault(d, "xref" if via else "cui")
        return out

    def _narrower_or_same(self, d: str, p: str) -> bool:
        """``d`` is ``p``, equivalent to it or below it in the is_a hierarchy."""
        target = {p, *self.equivalents(p)}
        return d in target or not target.isdisjoint(self.kg.ancestors(d))

    # ---- sentences -------------------------------------------------------------------------------------------
    @staticmethod
    def sentence_spans(text: str) -> list[tuple[int, int, bool]]:
        """``(start, end, list item)`` of the sentences of an answer worth reading (see the module docstring), into
        ``text``. A line of items joined by " - " (flattened HTML lists) gives one span per item."""
        m = _HPO_TABLE.search(text)
        end_of_prose = m.start() if m else len(text)
        out = []
        in_list = False                  # the previous line led into a list (ends with ':') or was one of its lines
        for a0, b0 in _merge_abbreviations(text, sentences(text[:end_of_prose])):
            pieces = [(a0, b0)]
            seps = list(_LIST_SEPARATOR.finditer(text, a0, b0))
            if seps:
                cuts = [a0, *(x for sep in seps for x in (sep.start(), sep.end())), b0]
                pieces = [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts), 2)]
            for a, b in pieces:
                item = bool(seps) or text[a] in _BULLETS
                while a < b and text[a] in _BULLETS:
                    a += 1
                while b > a and text[b - 1].isspace():
                    b -= 1
                if b - a < 3 or not any(c.isalpha() for c in text[a:b]):
                    continue
                s = text[a:b]
                if is_question(s) or _QUESTION_HEADING.match(s):
                    in_list = False
                    continue
                # a list that lost its bullets: lines without closing punctuation after a line ending in ':'
                # ("Confusion" there is an item, not a heading)
                bare = _is_bare_line(text, a, b)
                open_end = bare and bool(_OPEN_END.search(s))
                item = item or (in_list and bare and not open_end)
                if not item and _is_heading(text, a, b):
                    in_list = False
                    continue
                in_list = item or open_end or s.endswith(":")
                out.append((a, b, item))
        return out

    # ---- findings --------------------------------------------------------------------------------------------
    def reject_reason(self, sentence: str, ent: Any, diseases: Iterable[str],
                      others: Sequence[tuple[int, int]] = (),
                      own_names: Sequence[tuple[int, int]] = ()) -> str | None:
        """Why a mention is no finding of the page's disease (None: it is one). ``others``: spans of the sentence
        that name other diseases; ``own_names``: spans that name the page's disease ("febrile" in "acute febrile
        neutrophilic dermatosis" is no fever)."""
        cid = ent.concept_id
        if not cid or cid not in self._cat:
            return "unlinked"
        cat = self._cat[cid]
        if cat == "disease":
            return "a disease"
        if cat not in FINDING_CATEGORIES:
            return f"not a finding ({cat})"
        if ent.negated:
            return "negated"
        if ent.uncertain or ent.hypothetical:
            return "hedged"
        if ent.family:
            return "family"
        if ent.historical:
            return "history"
        if normalise(self._names.get(cid, "")) in GENERIC_FINDINGS or normalise(ent.text) in GENERIC_FINDINGS:
            return "generic"
        for d in diseases:
            if cid in self.equivalents(d) or d in self.equivalents(cid) or \
                    normalise(self._names.get(cid, "")) == normalise(self._names.get(d, "")):
                return "the disease itself"
        if any(n0 <= ent.start and ent.end <= n1 and (n0, n1) != (ent.start, ent.end) for n0, n1 in own_names):
            return "part of the disease's name"
        a, b = _clause(sentence, ent.start, ent.end)
        clause = sentence[a:b]
        if _NEGATION.search(clause):
            return "negation in the clause"
        if _HEDGE.search(sentence[a:ent.start]):
            return "hedge before the mention"
        if _RISK.search(clause):
            return "risk wording"
        if _COMPARISON.search(clause):
            return "comparison"
        if any(a <= o0 and o1 <= b for o0, o1 in others):
            return "another disease in the clause"
        return None

    def names_of(self, doc: Any, diseases: Sequence[str]) -> list[str]:
        """Lower-cased names of the page's disease(s): the focus, its MedQuAD synonyms, the diseases' names and
        synonyms (three words or more only: shorter ones are findings' names too often)."""
        out = {doc.focus, *(getattr(doc, "synonyms", ()) or ())}
        for d in diseases:
            a = self.kg.graph.nodes[d]
            out.update([a.get("name") or "", *(a.get("synonyms") or ())])
        return sorted({n.lower() for n in out if n and len(n.split()) >= 3})

    def own_words(self, doc: Any, diseases: Sequence[str]) -> frozenset[str]:
        """Word stems (four letters or more) of the page's focus, its synonyms and its diseases' names and synonyms,
        with those of their ancestors and descendants two levels down (:meth:`topic`)."""
        names = [doc.focus, *(getattr(doc, "synonyms", ()) or ())]
        for d in diseases:
            for t in self.topic(d):
                a = self.kg.graph.nodes.get(t) or {}
                names += [a.get("name") or "", *(a.get("synonyms") or ())]
        return name_stems(names)

    def topic(self, disease: str) -> frozenset[str]:
        """The disease, its equivalents, ancestors and descendants (two levels): the names that do not make a
        sentence about another disease."""
        t = self._topic.get(disease)
        if t is None:
            kg = self.kg
            keep = {disease, *self.equivalents(disease), *kg.ancestors(disease)}
            level = [disease]
            for _ in range(2):
                level = [c for x in level for c in kg.children(x)]
                keep.update(level)
            for x in list(keep):
                keep.update(self.equivalents(x))
            t = self._topic[disease] = frozenset(keep)
        return t

    def descendants(self, cid: str, cap: int = MAX_DESCENDANTS) -> int:
        """How many is_a descendants a concept has (counting stops past ``cap``)."""
        n = self._desc.get(cid)
        if n is None:   # the ontologies' own subtree, as the ranker judges it
            n = self._desc[cid] = subtree_size(cid, self.kg.children, self._cat.get, cap)
        return n

    def _canonical(self, disease: str, finding: str, chosen: dict[str, str]) -> str:
        """One id per equivalent finding group and disease: the one the disease has a curated edge to, else the
        first seen (``chosen``: member -> id, per disease)."""
        hit = chosen.get(finding)
        if hit is not None:
            return hit
        group = {finding} | {e for e in self.equivalents(finding) if self._cat.get(e) in FINDING_CATEGORIES}
        g = self.kg.graph
        curated = sorted(f for f in group if f in g[disease] and any(k in ("has_symptom", "has_phenotype")
                                                                    for k in g[disease][f]))
        seen = [chosen[f] for f in group if f in chosen]
        target = curated[0] if curated else seen[0] if seen else finding
        for f in group:
            chosen[f] = target
        return target

    # ---- mining ----------------------------------------------------------------------------------------------
    def mine(self, documents: Iterable[Any], progress: Callable[[int, int], None] | None = None,
             limit: int | None = None) -> MineResult:
        """Edges from the documents (``knowledge.corpus.Document`` objects; those of other question types are
        passed over). ``progress(done, total)`` is called after each selected document; ``limit`` stops after
        that many selected documents."""
        t0 = time.perf_counter()
        docs = [d for d in documents if d.question_type in self.question_types]
        if limit is not None:
            docs = docs[:limit]
        stats: Counter = Counter()
        rejected: Counter = Counter()
        linked_by: Counter = Counter()
        per_org: Counter = Counter()
        found: dict[tuple[str, str], _Found] = {}
        chosen: dict[str, dict[str, str]] = {}
        total = len(docs)
        for i, doc in enumerate(docs):
            stats["documents"] += 1
            diseases = self.link(doc)
            if not diseases:
                stats["documents_unlinked"] += 1
                if progress:
                    progress(i + 1, total)
                continue
            stats["documents_linked"] += 1
            for _, how in diseases:
                linked_by[how] += 1
            ids = [d for d, _ in diseases]
            text = doc.text
            doc_edges = 0
            topic = frozenset().union(*(self.topic(d) for d in ids))
            cue = _SENTENCE_CUES.get(doc.question_type)
            names = self.names_of(doc, ids)
            own_words = self.own_words(doc, ids)
            lead_other = False           # the sentence that leads into a list names another disease
            lead_cue = False             # ... speaks of findings ("Symptoms include:"): its items do too
            last_named_other = False     # the previous sentence named other diseases and not the page's
            for a, b, item in self.sentence_spans(text):
                stats["sentences"] += 1
                sent = text[a:b]
                low = sent.lower()
                ents = [e for e in self.mee.extract(sent).entities if e.category != "demographic" and e.start >= 0]
                others = [(e.start, e.end) for e in ents
                          if e.concept_id and self._cat.get(e.concept_id) == "disease" and e.concept_id not in topic]
                own = [(m.start(), m.end()) for name in names for m in re.finditer(re.escape(name), low)]
                own_at = [x for x, _ in own] + [e.start for e in ents if e.concept_id in topic]
                # "These symptoms may include:" after "... you may have symptoms of a stroke", "As the disease gets
                # worse it can cause ..." after "... you may develop chronic kidney disease": the other disease's
                refers_back = not others and not own_at and last_named_other and bool(_REFERS_BACK.search(sent))
                if not item:
                    # ("... similar to those of natural menopause:" compares: its items are the page's disease's)
                    lead_other = (bool(others) and not _COMPARISON.search(sent)) or refers_back or \
                        bool(_RISK.search(sent) or _FAMILY_LEAD.search(sent))
                    lead_cue = cue is not None and bool(cue.search(sent))
                # what the next sentence may refer back to: other diseases only, not the page's own
                last_named_other = bool(others) and not own_at
                if cue is not None and not cue.search(sent) and not (item and lead_cue):
                    stats["sentences_without_cue"] += 1
                    continue
                if signs_of_another(sent, own_words) is not None or (refers_back and not item):
                    stats["sentences_about_another_condition"] += 1
                    continue
                for ent in ents:
                    why = self.reject_reason(sent, ent, ids, others, own)
                    if why is None and item and lead_other:
                        why = "the list's lead-in: another disease, a risk, a relative"
                    if why is not None:
                        rejected[why] += 1
                        continue
                    stats["mentions_kept"] += 1
                    for d, how in diseases:
                        f = self._canonical(d, ent.concept_id, chosen.setdefault(d, {}))
                        rank = (_QTYPE_RANK.get(doc.question_type, 9), _LINK_RANK[how], i, a)
                        hit = found.get((d, f))
                        if hit is None or rank < hit.rank:
                            record = {"disease": d, "finding": f, "doc_id": doc.doc_id, "span": (a, b),
                                      "sentence": sent, "mention": (a + ent.start, a + ent.end),
                                      "surface": text[a + ent.start:a + ent.end],
                                      "question_type": doc.question_type, "organisation": doc.organisation,
                                      "focus": doc.focus, "url": doc.url or "", "linked_by": how}
                            if hit is None:
                                hit = found[(d, f)] = _Found(rank, record)
                                doc_edges += 1
                            else:
                                hit.rank, hit.record = rank, record
                        hit.sentences.add((doc.doc_id, a))
                        hit.docs.add(doc.doc_id)
            if doc_edges:
                per_org[doc.organisation] += 1
            if progress:
                progress(i + 1, total)
        edges = []
        for (d, f), item in sorted(found.items()):
            r = item.record
            edges.append(mined_format.MinedEdge(
                disease=d, finding=f, doc_id=r["doc_id"], span=r["span"], sentence=r["sentence"],
                question_type=r["question_type"], organisation=r["organisation"], focus=r["focus"],
                linked_by=r["linked_by"], disease_name=self._names.get(d, d), finding_name=self._names.get(f, f),
                mention=r["mention"], surface=r["surface"], url=r["url"], n_sentences=len(item.sentences),
                n_docs=len(item.docs)))
        seconds = time.perf_counter() - t0
        out_stats = {**dict(stats), "edges": len(edges), "diseases": len({e.disease for e in edges}),
                     "findings": len({e.finding for e in edges}),
                     "docs_with_edges": len({doc_id for it in found.values() for doc_id in it.docs}),
                     "linked_by": dict(linked_by), "new_edge_docs_per_organisation": dict(per_org),
                     "rejected": dict(rejected), "question_types": list(self.question_types),
                     "seconds": round(seconds, 2),
                     "docs_per_second": round(stats["documents"] / seconds, 1) if seconds > 0 else None}
        log.info("mined %d edges (%d diseases) from %d documents in %.1fs", len(edges), out_stats["diseases"],
                 stats["documents"], seconds)
        return MineResult(edges, out_stats)


def _merge_abbreviations(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join a sentence cut after "e.g.", "i.e.", "etc." or an initial with the next one on the same line."""
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and _ABBREVIATION_END.search(text[out[-1][0]:out[-1][1]]) and "\n" not in text[out[-1][1]:a]:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _is_bare_line(text: str, a: int, b: int) -> bool:
    """A whole line without closing punctuation ("Sudden weakness"): a list item when a lead-in precedes it."""
    return text[b - 1] not in ".!?:;" and (a == 0 or text[a - 1] == "\n") and (b == len(text) or text[b] == "\n")


def _is_heading(text: str, a: int, b: int) -> bool:
    """A section heading: a whole short line, no closing punctuation, its longer words capitalised
    ("Adrenal Crisis", "Signs and Symptoms")."""
    words = _TITLE_WORD.findall(text[a:b])
    if text[b - 1] in ",)" or not _is_bare_line(text, a, b) or not words or len(words) > 8:
        return False
    return all(w[0].isupper() for w in words if len(w) >= 4)


def _clause(sentence: str, start: int, end: int) -> tuple[int, int]:
    """The clause of a sentence around a mention: between the nearest clause breaks (";", ":", a dash, "but",
    "although", ...) before ``start`` and after ``end``."""
    a, b = 0, len(sentence)
    for m in _CLAUSE_BREAK.finditer(sentence):
        if m.end() <= start:
            a = m.end()
        elif m.start() >= end:
            b = m.start()
            break
    return a, b


@dataclass(frozen=True)
class DefinitionDocument:
    """A disease's NCI Thesaurus definition, read by the miner like a reference page (question type
    "definition"); its id and URL are the NCIt concept's, so an edge mined from it cites the definition."""

    doc_id: str
    disease_id: str
    focus: str
    text: str
    url: str
    question_type: str = "definition"
    organisation: str = DEFINITION_ORGANISATION
    focus_cui: str | None = None
    cuis: tuple[str, ...] = ()
    synonyms: tuple[str, ...] = ()


def definition_documents(kg: Any) -> list[DefinitionDocument]:
    """One document per (disease, NCIt definition) the graph keeps (``Concept.definitions``), in id order."""
    return [DefinitionDocument(doc_id=did, disease_id=cid, focus=name, text=text, url=ncit_url(did))
            for cid, name, did, text in ncit_definitions(kg)]


def mine_medquad(kg: Any, mee: Any = None, organisations: Iterable[str] | None = None,
                 question_types: Sequence[str] = QUESTION_TYPES, limit: int | None = None,
                 progress: Callable[[int, int], None] | None = None, path: Any = None) -> MineResult:
    """Mine the MedQuAD release (``knowledge.corpus.iter_documents``; ``path``: another tarball) against ``kg``,
    and, with question type "definition", the graph's NCI Thesaurus definitions (when ``organisations`` is None or
    names "NCI Thesaurus")."""
    from knowledge.corpus import iter_documents  # noqa: PLC0415

    t0 = time.perf_counter()
    qtypes = set(question_types)
    orgs = None if organisations is None else set(organisations)
    medquad = None if orgs is None else orgs - {DEFINITION_ORGANISATION}     # None: every MedQuAD collection
    docs: list[Any] = []
    if medquad is None or medquad:
        docs = [d for d in iter_documents(path, organisations=medquad) if d.question_type in qtypes]
    if "definition" in qtypes and (orgs is None or DEFINITION_ORGANISATION in orgs):
        docs += definition_documents(kg)
    read_seconds = time.perf_counter() - t0
    res = Miner(kg, mee=mee, question_types=question_types).mine(docs, progress=progress, limit=limit)
    res.stats["read_seconds"] = round(read_seconds, 2)
    res.stats["organisations"] = sorted(organisations) if organisations is not None else None
    res.stats["limit"] = limit
    return res


def common_diseases(kg: Any, diseases: Iterable[str], prior: Any = None) -> dict[str, float]:
    """The commonness prior's part of the utility of each disease (:class:`agents.prior.CommonnessPrior`; 0 is an
    average candidate of the fit, above 0 more common): ``{disease: logit}``. ``prior`` defaults to the packaged
    model over the commonness features of ``kg`` (:meth:`knowledge.prior.PriorFeatures.for_kg`)."""
    from .prior import CommonnessPrior  # noqa: PLC0415
    from .types import Candidate  # noqa: PLC0415

    if prior is None:
        from knowledge.prior import PriorFeatures  # noqa: PLC0415

        prior = CommonnessPrior.load(PriorFeatures.for_kg(kg))
    ids = list(dict.fromkeys(diseases))
    if not ids:
        return {}
    logits = prior.prior_logits([Candidate(concept_id=d, name=d, score=1.0) for d in ids])
    return dict(zip(ids, logits))


def report(kg: Any, edges: Sequence[mined_format.MinedEdge], prior: Any = None, sample: int = 20, seed: int = 0,
           top: int = 15) -> dict[str, Any]:
    """What mining added to ``kg`` (the built graph): edges, how many are new (no curated edge links the pair),
    the diseases that gain new edges and how many of them are common (commonness prior > 0,
    :func:`common_diseases`), the diseases with most new edges, and a random sample of edges to check by hand."""
    import random  # noqa: PLC0415

    g = kg.graph

    def curated(e: mined_format.MinedEdge) -> bool:
        return e.finding in g[e.disease] and any(k in ("has_symptom", "has_phenotype") for k in g[e.disease][e.finding])

    new = [e for e in edges if e.disease in g and e.finding in g and not curated(e)]
    per_disease = Counter(e.disease for e in new)
    logit = common_diseases(kg, sorted({e.disease for e in edges}), prior) if edges else {}
    gaining = sorted(per_disease)
    common = [d for d in gaining if logit.get(d, 0.0) > 0]
    names = {e.disease: e.disease_name for e in edges}
    rng = random.Random(seed)
    picked = rng.sample(list(edges), min(sample, len(edges)))
    return {
        "edges": len(edges), "new_edges": len(new), "on_curated_edges": len(edges) - len(new),
        "diseases": len({e.disease for e in edges}), "findings": len({e.finding for e in edges}),
        "docs": len({e.doc_id for e in edges}),
        "diseases_gaining_edges": len(gaining), "common_diseases_gaining_edges": len(common),
        "common_definition": "commonness prior logit > 0 (agents/prior.py over knowledge.prior features)",
        "edges_per_question_type": dict(Counter(e.question_type for e in edges).most_common()),
        "edges_per_organisation": dict(Counter(e.organisation for e in edges).most_common()),
        "edges_per_link_method": dict(Counter(e.linked_by for e in edges).most_common()),
        "top_diseases": [{"disease": d, "name": names.get(d, d), "new_edges": n,
                          "common": logit.get(d, 0.0) > 0, "prior_logit": round(logit.get(d, 0.0), 3)}
                         for d, n in sorted(per_disease.items(), key=lambda x: (-x[1], x[0]))[:top]],
        "sample": [{"disease": e.disease, "disease_name": e.disease_name, "finding": e.finding,
                    "finding_name": e.finding_name, "surface": e.surface, "sentence": e.sentence,
                    "doc_id": e.doc_id, "span": list(e.span), "question_type": e.question_type,
                    "new": not curated(e)} for e in picked],
    }


__all__ = ["MINER_VERSION", "QUESTION_TYPES", "miner_version", "Miner", "MineResult", "mine_medquad",
           "common_diseases", "report"]

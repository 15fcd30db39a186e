"""KRG agent: the reference list of an answer.

:meth:`KRG.references` turns the evidence behind an answer into numbered references:

1. **De-duplication** (union-find over the evidence items): two items are the same reference when
   - their normalised texts have the same sha256 (same content, e.g. one chunk retrieved from B and O), or
   - they come from the same document (``doc_id``, else ``url``) and their character spans overlap, or
   - they are near-duplicates: Jaccard similarity of word 3-shingles ``>= near_dup_threshold`` (only for
     texts of at least 8 words; short KG triples are never merged this way).
2. **KG triples** are grouped by source and subject: all triples of "asthma" from the Disease Ontology become
   one reference titled ``asthma: has symptom wheezing; has symptom cough``. A triple mined from a reference answer
   (it carries the page's ``doc_id`` and the sentence's span) is cited as that page, like a chunk.
3. **Order**: references with a cited member first (when ``cited_ids`` is given), then by relevance score
   (the best member's score), then by first appearance.
4. **Format**: each reference carries source, title, organisation, URL, license and span; render with
   :meth:`agents.types.Reference.format`.

Returns the references and a mapping evidence id -> reference number (every supplied id, and every cited
id as written, e.g. with a ``:start-end`` span suffix).
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from .types import Draft, Evidence, Reference

_ROLE_SOURCE = {"G": "Knowledge graph", "B": "Reference base", "O": "Web source"}
_SPAN_SUFFIX = re.compile(r"^(?P<base>.+?):(?P<a>\d+)-(?P<b>\d+)$")
_WORD = re.compile(r"[a-z0-9]+")
# browsable pages for KG concepts (used only when the evidence carries no URL)
_CONCEPT_URL = {
    "DOID": "https://disease-ontology.org/?id={id}",
    "HP": "https://hpo.jax.org/browse/term/{id}",
    "SYMP": "https://www.ebi.ac.uk/ols4/ontologies/symp/classes?obo_id={id}",
    "UBERON": "https://www.ebi.ac.uk/ols4/ontologies/uberon/classes?obo_id={id}",
}


def _norm_text(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def content_hash(text: str) -> str:
    return hashlib.sha256(_norm_text(text).encode()).hexdigest()


def shingles(text: str, k: int = 3) -> set[tuple[str, ...]]:
    toks = _WORD.findall(text.lower())
    if len(toks) < k:
        return {tuple(toks)} if toks else set()
    return {tuple(toks[i:i + k]) for i in range(len(toks) - k + 1)}


def jaccard(a: set, b: set) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _spans_overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    if a is None or b is None:
        return False
    return a[0] < b[1] and b[0] < a[1]


def parse_triple_id(ev_id: str) -> tuple[str, str, str] | None:
    """``G:DOID:2841|has_symptom|SYMP:0000604`` -> (subject, relation, object)."""
    if not ev_id.startswith("G:"):
        return None
    parts = ev_id[2:].split("|")
    if len(parts) != 3:
        return None
    return parts[0], parts[1], parts[2]


def _kg_triple(ev: Evidence) -> tuple[str, str, str] | None:
    """A knowledge-graph triple cited as a triple (subject, relation, object); None for other evidence and for a
    triple mined from a reference page (``doc_id`` set), which is cited as its page."""
    if ev.kind != "triple" or ev.doc_id:
        return None
    return parse_triple_id(ev.id)


class _DSU:
    def __init__(self, n: int):
        self.p = list(range(n))

    def find(self, i: int) -> int:
        while self.p[i] != i:
            self.p[i] = self.p[self.p[i]]
            i = self.p[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.p[max(ra, rb)] = min(ra, rb)


class KRG:
    def __init__(self, min_shingle_words: int = 8):
        self.min_shingle_words = min_shingle_words

    # ------------------------------------------------------------------------------------------------
    @staticmethod
    def _source(ev: Evidence) -> str:
        return ev.source or _ROLE_SOURCE.get(ev.role, ev.role)

    @staticmethod
    def _triple_phrase(ev: Evidence, subject_name: str) -> str:
        """The predicate part of a triple: "has symptom wheezing", "is equivalent to excessive tearing"."""
        meta = ev.meta or {}
        t = parse_triple_id(ev.id)
        rel = relation_words(meta.get("relation") or (t[1] if t else ""))
        obj = meta.get("object_name") or meta.get("tail_name")
        if obj:
            return f"{rel} {obj}".strip()
        text = ev.text.strip().rstrip(".")
        if subject_name and text.lower().startswith(subject_name.lower()):
            rest = text[len(subject_name):].strip(" :,-")
            if rest:
                return rest
        return text

    def for_answer(self, draft: Draft, evidence: list[Evidence], answer: str | None = None,
                   fallback: int = 10) -> tuple[list[Reference], dict[str, int]]:
        """The reference list of an answer: the evidence it cites (in the differential's citation lists and
        inline in ``answer``, default the draft's text), cited items first. An answer that cites nothing lists
        the ``fallback`` most relevant evidence items. All evidence stays in the structured result either way."""
        from .verifier import parse_citations  # noqa: PLC0415

        known = {e.id for e in evidence}
        cited = [c for d in draft.differential for c in d.citations]
        wanted = {c.id for c in parse_citations(draft.text if answer is None else answer, known)}
        for raw in cited:            # "id" or "id:start-end"
            m = _SPAN_SUFFIX.match(raw.strip())
            wanted.add(m.group("base") if m and m.group("base") in known else raw.strip())
        listed = [e for e in evidence if e.id in wanted]
        return self.references(listed or evidence[:fallback], cited_ids=cited or None)

    def references(self, evidence: list[Evidence], cited_ids: Iterable[str] | None = None,
                   near_dup_threshold: float = 0.9) -> tuple[list[Reference], dict[str, int]]:
        items: list[Evidence] = []
        seen: set[str] = set()
        for ev in evidence:
            if ev.id not in seen:
                seen.add(ev.id)
                items.append(ev)
        by_id = {ev.id: i for i, ev in enumerate(items)}

        cited_raw = list(cited_ids or [])
        cited_base: dict[str, int] = {}     # evidence id -> order of first citation
        raw_to_base: dict[str, str] = {}
        for raw in cited_raw:
            raw = raw.strip()
            base = raw
            if raw not in by_id:
                m = _SPAN_SUFFIX.match(raw)
                base = m.group("base") if m and m.group("base") in by_id else raw
            if base in by_id:
                raw_to_base[raw] = base
                cited_base.setdefault(base, len(cited_base))

        n = len(items)
        dsu = _DSU(n)
        # exact content
        first_by_hash: dict[str, int] = {}
        for i, ev in enumerate(items):
            h = content_hash(ev.text)
            if h in first_by_hash and _norm_text(ev.text):
                dsu.union(first_by_hash[h], i)
            else:
                first_by_hash.setdefault(h, i)
        # same document, overlapping spans
        chunks = [i for i, ev in enumerate(items) if _kg_triple(ev) is None]
        for x in range(len(chunks)):
            a = items[chunks[x]]
            key_a = a.doc_id or a.url
            if not key_a:
                continue
            for y in range(x + 1, len(chunks)):
                b = items[chunks[y]]
                if (b.doc_id or b.url) == key_a and _spans_overlap(a.span, b.span):
                    dsu.union(chunks[x], chunks[y])
        # near-duplicates by shingle Jaccard
        sh = {i: shingles(items[i].text) for i in chunks
              if len(_WORD.findall(items[i].text.lower())) >= self.min_shingle_words}
        keys = sorted(sh)
        for x in range(len(keys)):
            for y in range(x + 1, len(keys)):
                i, j = keys[x], keys[y]
                if dsu.find(i) != dsu.find(j) and jaccard(sh[i], sh[j]) >= near_dup_threshold:
                    dsu.union(i, j)
        # KG triples: group by (source, subject)
        group_of: dict[tuple[str, str], int] = {}
        for i, ev in enumerate(items):
            t = _kg_triple(ev)
            if t is None:
                continue
            key = (self._source(ev), t[0])
            if key in group_of:
                dsu.union(group_of[key], i)
            else:
                group_of[key] = i

        clusters: dict[int, list[int]] = {}
        for i in range(n):
            clusters.setdefault(dsu.find(i), []).append(i)

        def rank_key(members: list[int]) -> tuple:
            cited = [cited_base[items[i].id] for i in members if items[i].id in cited_base]
            best = max(items[i].score for i in members)
            return (0 if cited else 1, -best, min(members))

        ordered = sorted(clusters.values(), key=rank_key)
        refs: list[Reference] = []
        mapping: dict[str, int] = {}
        for num, members in enumerate(ordered, 1):
            members = sorted(members, key=lambda i: (-items[i].score, i))
            refs.append(self._make(num, [items[i] for i in members]))
            for i in members:
                mapping[items[i].id] = num
        for raw, base in raw_to_base.items():
            mapping[raw] = mapping[base]
        return refs, mapping

    # ------------------------------------------------------------------------------------------------
    def _make(self, num: int, members: list[Evidence]) -> Reference:
        top = members[0]
        ids = [m.id for m in members]
        score = max(m.score for m in members)
        triples = [m for m in members if _kg_triple(m)]
        if triples and len(triples) == len(members):
            subj_id = parse_triple_id(top.id)[0]  # type: ignore[index]
            subj = (top.meta or {}).get("subject_name") or top.title or subj_id
            phrases = list(dict.fromkeys(self._triple_phrase(m, subj) for m in triples))
            shown = "; ".join(phrases[:6]) + (f"; and {len(phrases) - 6} more" if len(phrases) > 6 else "")
            url = top.url
            if not url:
                prefix = subj_id.split(":", 1)[0]
                if prefix in _CONCEPT_URL:
                    url = _CONCEPT_URL[prefix].format(id=subj_id)
            return Reference(n=num, evidence_ids=ids, source=self._source(top), title=f"{subj}: {shown}",
                             organisation=top.organisation, url=url, license=top.license, span=None,
                             score=score)
        title = top.title or top.doc_id or _first_words(top.text)
        span = top.span
        key = top.doc_id or top.url
        for m in members[1:]:  # same-document overlaps: cover the union of the spans
            if key and (m.doc_id or m.url) == key and span and m.span and _spans_overlap(span, m.span):
                span = (min(span[0], m.span[0]), max(span[1], m.span[1]))
        return Reference(n=num, evidence_ids=ids, source=self._source(top), title=title,
                         organisation=top.organisation or _first(members, "organisation"),
                         url=top.url or _first(members, "url"), license=top.license or _first(members, "license"),
                         span=span, score=score)


def relation_words(relation: str) -> str:
    """A knowledge-graph relation as the graph's own verb phrase ("xref" -> "is equivalent to", "has_symptom" ->
    "has symptom"), never the relation's name."""
    from knowledge.kg.build import RELATIONS  # noqa: PLC0415

    return RELATIONS[relation][0] if relation in RELATIONS else relation.replace("_", " ")


def _first(members: list[Evidence], attr: str):
    for m in members:
        v = getattr(m, attr)
        if v:
            return v
    return None


def _first_words(text: str, n: int = 12) -> str:
    ws = text.split()
    return " ".join(ws[:n]) + (" ..." if len(ws) > n else "")


__all__ = ["KRG", "content_hash", "shingles", "jaccard", "parse_triple_id", "relation_words"]

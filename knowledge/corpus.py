"""The text corpora B (reference base) and O (web sources), both built from MedQuAD.

MedQuAD (Ben Abacha & Demner-Fushman, 2019; CC-BY-4.0) holds question-answer pairs taken from 12 NIH
websites. Every QA pair with an answer becomes one ``Document`` whose ``text`` is the answer
(whitespace-normalised). Source B = the NIH reference fact sheets (GARD, GHR, NIDDK, NINDS, NHLBI,
CancerGov); source O = consumer web pages (MedlinePlus health topics, CDC, NIHSeniorHealth). The
A.D.A.M., MedlinePlus drug and herb collections had their answers removed upstream and are skipped.

The tarball is read as a stream (no extraction). ``chunk_document`` splits an answer into chunks of at
most ``max_tokens`` tokens of the project tokenizer (``knowledge.tokens``) whose character spans index
exactly into ``Document.text``.
"""
from __future__ import annotations

import hashlib
import logging
import re
import statistics
import tarfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

log = logging.getLogger(__name__)

LICENSE = "CC-BY-4.0"
SOURCE_ID = "medquad"

EVIDENCE_TYPES = {"B": "reference fact sheet", "O": "consumer web page"}


@dataclass(frozen=True)
class Collection:
    folder: str
    organisation: str           # short name (the XML ``source`` attribute)
    publisher: str              # who publishes the pages
    role: str | None            # "B", "O", or None (answers removed upstream: skipped)


COLLECTIONS: dict[str, Collection] = {c.folder: c for c in [
    Collection("1_CancerGov_QA", "CancerGov", "National Cancer Institute (cancer.gov)", "B"),
    Collection("2_GARD_QA", "GARD", "Genetic and Rare Diseases Information Center (NIH)", "B"),
    Collection("3_GHR_QA", "GHR", "Genetics Home Reference (NLM)", "B"),
    Collection("4_MPlus_Health_Topics_QA", "MPlusHealthTopics", "MedlinePlus Health Topics (NLM)", "O"),
    Collection("5_NIDDK_QA", "NIDDK", "National Institute of Diabetes and Digestive and Kidney Diseases", "B"),
    Collection("6_NINDS_QA", "NINDS", "National Institute of Neurological Disorders and Stroke", "B"),
    Collection("7_SeniorHealth_QA", "NIHSeniorHealth", "NIHSeniorHealth (NIA/NLM)", "O"),
    Collection("8_NHLBI_QA_XML", "NHLBI", "National Heart, Lung, and Blood Institute", "B"),
    Collection("9_CDC_QA", "CDC", "Centers for Disease Control and Prevention", "O"),
    Collection("10_MPlus_ADAM_QA", "ADAM", "A.D.A.M. Medical Encyclopedia (answers removed)", None),
    Collection("11_MPlusDrugs_QA", "MPlusDrugs", "MedlinePlus Drugs (answers removed)", None),
    Collection("12_MPlusHerbsSupplements_QA", "MPlusHerbsSupplements",
               "MedlinePlus Herbs and Supplements (answers removed)", None),
]}
ORGANISATIONS: dict[str, Collection] = {c.organisation: c for c in COLLECTIONS.values()}


@dataclass
class Document:
    """One MedQuAD QA pair with an answer. ``text`` is the answer; chunk spans index into it."""

    doc_id: str                 # "<organisation>_<file id>-<QA pid>", e.g. "NHLBI_0000001-1"
    role: str                   # "B" or "O"
    organisation: str           # e.g. "GARD"
    publisher: str
    collection: str             # MedQuAD folder, e.g. "2_GARD_QA"
    url: str
    focus: str
    focus_cui: str | None       # first UMLS CUI of the focus
    cuis: tuple[str, ...]
    semantic_types: tuple[str, ...]
    semantic_group: str | None
    synonyms: tuple[str, ...]
    category: str | None
    question: str
    question_id: str
    question_type: str          # MedQuAD qtype: information, symptoms, causes, treatment, ...
    text: str
    title: str
    source_file: str            # path inside the tarball
    license: str = LICENSE
    evidence_type: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------------------------- parsing
_HSPACE = re.compile(r"[ \t\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_WIDE_GAP = re.compile(r"[ \t\u00a0]{3,}")


def normalise_whitespace(text: str) -> str:
    """Collapse whitespace, keeping the paragraph/line structure: runs of horizontal whitespace become one
    space, except runs of 3+ inside a line (flattened HTML paragraphs and list items) which become a line
    break; blank lines separate paragraphs (one empty line); no leading/trailing whitespace."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines: list[str] = []
    for raw in text.split("\n"):
        for part in _WIDE_GAP.split(raw):
            lines.append(_HSPACE.sub(" ", part).strip())
    out: list[str] = []
    blank = False
    for line in lines:
        if not line:
            blank = bool(out)
            continue
        if out:
            out.append("\n\n" if blank else "\n")
        out.append(line)
        blank = False
    return "".join(out)


def _lower_tags(root: ET.Element) -> None:
    for el in root.iter():
        if isinstance(el.tag, str):
            el.tag = el.tag.lower()


def _texts(root: ET.Element, tag: str) -> tuple[str, ...]:
    out = []
    for el in root.iter(tag):
        t = " ".join((el.text or "").split())
        if t and t not in out:
            out.append(t)
    return tuple(out)


def parse_medquad_xml(data: bytes, collection: Collection, source_file: str) -> tuple[list[Document], int]:
    """Documents of one MedQuAD XML file, and how many QA pairs were skipped for an empty answer.

    Handles the three root layouts found in the data (``Document``, ``DiseaseFile``, and the older
    lower-case ``doc``/``pair`` files of NINDS)."""
    root = ET.fromstring(data)
    _lower_tags(root)
    stem = source_file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    url = root.get("url", "")
    focus_el = root.find("focus")
    if focus_el is None:
        focus_el = root.find("doctitle-focus")
    focus = " ".join(((focus_el.text if focus_el is not None else "") or "").split())
    cuis = _texts(root, "cui")
    stypes = _texts(root, "semantictype")
    sgroups = _texts(root, "semanticgroup")
    synonyms = _texts(root, "synonym")
    categories = _texts(root, "category")
    docs: list[Document] = []
    skipped = 0
    for pair in [*root.iter("qapair"), *root.iter("pair")]:
        pid = pair.get("pid") or str(len(docs) + skipped + 1)
        q_el = pair.find("question")
        a_el = pair.find("answer")
        text = normalise_whitespace("".join(a_el.itertext())) if a_el is not None else ""
        if not text:
            skipped += 1
            continue
        question = " ".join(((q_el.text if q_el is not None else "") or "").split())
        qtype = (q_el.get("qtype") if q_el is not None else None) or "information"
        docs.append(Document(
            doc_id=f"{collection.organisation}_{stem}-{pid}",
            role=collection.role or "",
            organisation=collection.organisation,
            publisher=collection.publisher,
            collection=collection.folder,
            url=url,
            focus=focus,
            focus_cui=cuis[0] if cuis else None,
            cuis=cuis,
            semantic_types=stypes,
            semantic_group=sgroups[0] if sgroups else None,
            synonyms=synonyms,
            category=categories[0] if categories else None,
            question=question,
            question_id=(q_el.get("qid") if q_el is not None else None) or f"{stem}-{pid}",
            question_type=qtype,
            text=text,
            title=f"{focus} — {question}" if focus else question,
            source_file=source_file,
            evidence_type=EVIDENCE_TYPES.get(collection.role or "", ""),
        ))
    return docs, skipped


def iter_documents(path: Path | str | None = None, roles: Iterable[str] = ("B", "O"),
                   organisations: Iterable[str] | None = None,
                   counts: Counter | None = None) -> Iterator[Document]:
    """Stream documents from the MedQuAD tarball (default: ``sources.ensure("medquad")``).

    ``counts`` (optional) is filled with "files", "qa_pairs", "skipped_empty", "skipped_collection"."""
    from . import sources  # noqa: PLC0415

    path = Path(path) if path is not None else sources.ensure(SOURCE_ID)
    roles = set(roles)
    bad_roles = roles - set(EVIDENCE_TYPES)
    if bad_roles:
        raise ValueError(f"unknown role(s) {sorted(bad_roles)}; MedQuAD provides 'B' and 'O'")
    orgs = set(organisations) if organisations is not None else None
    if orgs is not None:
        unknown = orgs - set(ORGANISATIONS)
        if unknown:
            raise ValueError(f"unknown organisation(s) {sorted(unknown)}; known: {', '.join(ORGANISATIONS)}")
    counts = counts if counts is not None else Counter()
    try:
        tf = tarfile.open(path, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise ValueError(f"{path} is not a readable MedQuAD tarball: {exc}") from exc
    with tf:
        for member in tf:
            if not member.isfile() or not member.name.endswith(".xml"):
                continue
            parts = member.name.split("/")
            if len(parts) < 3:
                continue
            coll = COLLECTIONS.get(parts[-2])
            if coll is None:
                counts["unknown_folder_files"] += 1
                continue
            if coll.role is None or coll.role not in roles or (orgs is not None and coll.organisation not in orgs):
                counts["skipped_collection_files"] += 1
                continue
            fh = tf.extractfile(member)
            if fh is None:
                continue
            rel = "/".join(parts[1:])
            try:
                docs, skipped = parse_medquad_xml(fh.read(), coll, rel)
            except ET.ParseError as exc:
                log.warning("skipping malformed XML %s: %s", rel, exc)
                counts["malformed_files"] += 1
                continue
            counts["files"] += 1
            counts["qa_pairs"] += len(docs) + skipped
            counts["skipped_empty"] += skipped
            yield from docs


def load_documents(path: Path | str | None = None, roles: Iterable[str] = ("B", "O"), limit: int | None = None,
                   organisations: Iterable[str] | None = None) -> list[Document]:
    """All documents (QA pairs with answers) of the given roles/organisations, in tarball order.
    ``limit`` stops after that many documents. Logs the counts per role and organisation."""
    t0 = time.perf_counter()
    counts: Counter = Counter()
    docs: list[Document] = []
    seen: set[str] = set()
    for doc in iter_documents(path, roles=roles, organisations=organisations, counts=counts):
        if doc.doc_id in seen:       # defensive: ids are unique in the pinned release
            log.warning("duplicate document id %s skipped", doc.doc_id)
            continue
        seen.add(doc.doc_id)
        docs.append(doc)
        if limit is not None and len(docs) >= limit:
            break
    per_org = Counter(d.organisation for d in docs)
    per_role = Counter(d.role for d in docs)
    log.info("MedQuAD: %d documents in %.1fs (roles %s; organisations %s; %d empty answers skipped in %d files)",
             len(docs), time.perf_counter() - t0, dict(per_role), dict(per_org), counts["skipped_empty"],
             counts["files"])
    return docs


# ------------------------------------------------------------------------------------------ chunking
@dataclass
class Chunk:
    chunk_id: str               # "<doc_id>#<n>"
    doc_id: str
    text: str                   # == document.text[start:end]
    start: int
    end: int
    role: str
    focus: str
    focus_cui: str | None
    section: str                # the question type
    question: str
    url: str
    organisation: str
    license: str
    evidence_type: str
    title: str
    n_tokens: int
    content_hash: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.content_hash:
            self.content_hash = hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def to_metadata(self, include_text: bool = True) -> dict[str, Any]:
        """Flat metadata for a vector store (scalars only; ``None`` values dropped)."""
        d = asdict(self)
        extra = d.pop("extra")
        if not include_text:
            d.pop("text")
        d.update({k: v for k, v in extra.items() if k not in d})
        return {k: v for k, v in d.items() if v is not None}


# boundary strength between two tokens: higher = better place to cut
_NO_CUT, _IN_WORD, _WORD, _CLAUSE, _SENTENCE, _LINE, _PARAGRAPH = -1, 0, 1, 2, 3, 4, 5


def _boundaries(text: str, offsets: list[tuple[int, int]], word_ids: list[int | None]) -> list[int]:
    """``levels[i]`` = how good it is to cut before token ``i`` (i in 1..n-1; levels[0] unused)."""
    levels = [_NO_CUT] * len(offsets)
    for i in range(1, len(offsets)):
        prev_end, start = offsets[i - 1][1], offsets[i][0]
        if word_ids[i] is not None and word_ids[i] == word_ids[i - 1]:
            continue                                  # inside a word (WordPiece continuation)
        gap = text[prev_end:start]
        last = text[prev_end - 1] if prev_end > 0 else ""
        if "\n\n" in gap:
            levels[i] = _PARAGRAPH
        elif "\n" in gap:
            levels[i] = _LINE
        elif gap and last in ".!?":
            levels[i] = _SENTENCE
        elif gap and last in ";:":
            levels[i] = _CLAUSE
        elif gap:
            levels[i] = _WORD
        else:
            levels[i] = _IN_WORD                      # punctuation boundary without whitespace
    return levels


def _best(levels: list[int], lo: int, hi: int, target: int) -> int | None:
    """Cut position in [lo, hi] with the strongest boundary, ties broken by closeness to ``target``."""
    best, key = None, None
    for i in range(max(lo, 1), hi + 1):
        if i >= len(levels) or levels[i] == _NO_CUT:
            continue
        k = (levels[i], -abs(i - target))
        if key is None or k > key:
            best, key = i, k
    return best


def _split(text: str, offsets: list[tuple[int, int]], word_ids: list[int | None], max_tokens: int,
           overlap: float, count) -> list[tuple[int, int, int]]:
    """Token-window splitting of one text: ``[(char start, char end, n_tokens)]``. ``count(slice, n)``
    returns the token count of a slice spanning ``n`` tokens of the whole-text encoding (exact count, or
    ``n`` itself when the caller verifies afterwards)."""
    n = len(offsets)
    if n == 0:
        return []
    if n <= max_tokens:
        return [(offsets[0][0], offsets[-1][1], n)]
    levels = _boundaries(text, offsets, word_ids)
    ov = round(overlap * max_tokens)
    spans: list[tuple[int, int, int]] = []
    s = 0
    while s < n:
        if n - s <= max_tokens:
            c = n
        else:
            hi = s + max_tokens
            c = _best(levels, s + max_tokens // 2, hi, hi) or _best(levels, s + 1, hi, hi) or hi
        # the slice is tokenised on its own downstream: make sure it still fits (it does when cut between words)
        while True:
            cs, ce = offsets[s][0], offsets[c - 1][1]
            k = count(text[cs:ce], c - s)
            if k <= max_tokens or c - s <= 1:
                break
            c = next((j for j in range(c - 1, s, -1) if levels[j] != _NO_CUT), c - 1)
        spans.append((cs, ce, k))
        if c >= n:
            break
        if ov == 0:
            nxt = c
        else:
            target = c - ov
            nxt = _best(levels, c - round(1.5 * ov), c - round(0.5 * ov), target)
            if nxt is None or nxt <= s:
                nxt = _best(levels, s + 1, c, target) or c
        s = nxt
    return spans


def _check_args(max_tokens: int, overlap: float) -> None:
    if max_tokens < 8:
        raise ValueError("max_tokens must be at least 8")
    if not 0 <= overlap < 0.5:
        raise ValueError("overlap must be in [0, 0.5)")


def _make_chunks(doc: Document, spans: list[tuple[int, int, int]]) -> list[Chunk]:
    text = doc.text
    return [Chunk(
        chunk_id=f"{doc.doc_id}#{i}", doc_id=doc.doc_id, text=text[cs:ce], start=cs, end=ce,
        role=doc.role, focus=doc.focus, focus_cui=doc.focus_cui, section=doc.question_type,
        question=doc.question, url=doc.url, organisation=doc.organisation, license=doc.license,
        evidence_type=doc.evidence_type, title=doc.title, n_tokens=k,
        extra={"semantic_group": doc.semantic_group, "publisher": doc.publisher,
               "chunk_index": i, "n_chunks": len(spans)},
    ) for i, (cs, ce, k) in enumerate(spans)]


def chunk_document(doc: Document, max_tokens: int = 256, overlap: float = 0.25) -> list[Chunk]:
    """Split ``doc.text`` into chunks of at most ``max_tokens`` tokens.

    One answer = one chunk when it fits; longer answers are cut preferably at paragraph, line, then
    sentence boundaries (never inside a word), consecutive chunks overlapping by about
    ``overlap * max_tokens`` tokens. Every chunk satisfies ``doc.text[c.start:c.end] == c.text``, has
    ``n_tokens <= max_tokens`` (counted on the chunk text alone), and together the chunks cover every
    token of the answer."""
    from .tokens import count_tokens, get_tokenizer  # noqa: PLC0415

    _check_args(max_tokens, overlap)
    enc = get_tokenizer().encode(doc.text, add_special_tokens=False)
    spans = _split(doc.text, [tuple(o) for o in enc.offsets], list(enc.word_ids), max_tokens, overlap,
                   lambda sl, _n: count_tokens(sl))
    return _make_chunks(doc, spans)


def chunk_documents(docs: Iterable[Document], max_tokens: int = 256, overlap: float = 0.25,
                    batch_size: int = 2048) -> list[Chunk]:
    """``chunk_document`` over many documents, with batched tokenisation (same result, faster)."""
    from .tokens import get_tokenizer  # noqa: PLC0415

    _check_args(max_tokens, overlap)
    tok = get_tokenizer()
    docs = list(docs)
    out: list[Chunk] = []
    for b in range(0, len(docs), batch_size):
        batch = docs[b:b + batch_size]
        encs = tok.encode_batch([d.text for d in batch], add_special_tokens=False)
        planned = [_split(d.text, [tuple(o) for o in e.offsets], list(e.word_ids), max_tokens, overlap,
                          lambda _sl, n: n) for d, e in zip(batch, encs)]
        # verify the count of every cut slice on its own, in one batch; redo exactly where it differs
        to_check = [(i, j) for i, spans in enumerate(planned) if len(spans) > 1 for j in range(len(spans))]
        if to_check:
            counts = tok.encode_batch([batch[i].text[planned[i][j][0]:planned[i][j][1]] for i, j in to_check],
                                      add_special_tokens=False)
            redo = {i for (i, j), e in zip(to_check, counts) if len(e.ids) != planned[i][j][2]}
        else:
            redo = set()
        for i, (doc, spans) in enumerate(zip(batch, planned)):
            out.extend(chunk_document(doc, max_tokens, overlap) if i in redo else _make_chunks(doc, spans))
    return out


def corpus_stats(docs: list[Document], chunks: list[Chunk]) -> dict[str, Any]:
    """Counts per role and organisation, chunk token statistics, question types."""
    toks = [c.n_tokens for c in chunks]
    per_doc = Counter(c.doc_id for c in chunks)
    return {
        "documents": len(docs),
        "chunks": len(chunks),
        "documents_per_role": dict(sorted(Counter(d.role for d in docs).items())),
        "chunks_per_role": dict(sorted(Counter(c.role for c in chunks).items())),
        "documents_per_organisation": dict(Counter(d.organisation for d in docs).most_common()),
        "chunks_per_organisation": dict(Counter(c.organisation for c in chunks).most_common()),
        "question_types": dict(Counter(d.question_type for d in docs).most_common()),
        "distinct_foci": len({d.focus.lower() for d in docs}),
        "documents_with_cui": sum(1 for d in docs if d.focus_cui),
        "documents_split": sum(1 for v in per_doc.values() if v > 1),
        "tokens_total": sum(toks),
        "tokens_per_chunk": {
            "mean": round(statistics.fmean(toks), 1) if toks else 0,
            "median": statistics.median(toks) if toks else 0,
            "max": max(toks, default=0),
            "min": min(toks, default=0),
        },
        "chars_total": sum(len(d.text) for d in docs),
    }


# --------------------------------------------------------------------------------------- chunk cache
CHUNKER_VERSION = 1   # bump when chunking or parsing changes the output


def _tokenizer_fingerprint() -> str:
    import os  # noqa: PLC0415

    from .tokens import default_model_dir  # noqa: PLC0415

    path = os.environ.get("CLINICALRAG_TOKENIZER") or str(default_model_dir() / "tokenizer.json")
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def load_chunks(path: Path | str | None = None, roles: Iterable[str] = ("B", "O"),
                organisations: Iterable[str] | None = None, max_tokens: int = 256, overlap: float = 0.25,
                cache: bool = True) -> list[Chunk]:
    """Parse and chunk MedQuAD, caching the chunks under ``paths.build_dir()/corpus/`` (gzip JSON lines)
    keyed by the tarball's sha256, the selection, the chunking parameters, the tokenizer and
    ``CHUNKER_VERSION``; a second call reads the cache (about a second instead of a full tokenisation)."""
    import gzip  # noqa: PLC0415
    import json  # noqa: PLC0415

    from . import paths, sources  # noqa: PLC0415

    src_path = Path(path) if path is not None else sources.ensure(SOURCE_ID)
    roles = tuple(sorted(set(roles)))
    orgs = tuple(sorted(set(organisations))) if organisations is not None else None
    key_data = {"sha256": sources.file_sha256(src_path), "roles": roles, "organisations": orgs,
                "max_tokens": max_tokens, "overlap": overlap, "tokenizer": _tokenizer_fingerprint(),
                "version": CHUNKER_VERSION}
    key = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()[:16]
    cache_file = paths.build_dir() / "corpus" / f"medquad-chunks-{key}.jsonl.gz"
    if cache and cache_file.is_file():
        try:
            with gzip.open(cache_file, "rt", encoding="utf-8") as fh:
                chunks = [Chunk(**json.loads(line)) for line in fh]
            log.info("read %d chunks from %s", len(chunks), cache_file)
            return chunks
        except (OSError, ValueError, TypeError) as exc:
            log.warning("ignoring unreadable chunk cache %s: %s", cache_file, exc)
    docs = load_documents(src_path, roles=roles, organisations=orgs)
    chunks = chunk_documents(docs, max_tokens=max_tokens, overlap=overlap)
    if cache:
        from .atomic import writing  # noqa: PLC0415

        with writing(cache_file) as raw, gzip.open(raw, "wt", encoding="utf-8", compresslevel=3) as fh:
            for c in chunks:
                fh.write(json.dumps(asdict(c), ensure_ascii=False) + "\n")
    return chunks

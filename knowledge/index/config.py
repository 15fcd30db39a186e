"""What goes into the index (:class:`IndexConfig`, every field part of the index version) and what a search
returns (:class:`SearchHit`, :class:`EntityHit`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

INDEX_FORMAT = 2
SOURCES = ("G", "B", "O")
CHUNKS = "chunks"
G_CATEGORIES = ("disease", "symptom", "phenotype", "drug", "anatomy")


class IndexNotBuilt(RuntimeError):
    pass


@dataclass
class EntityHit:
    source: str                         # "G", "B" or "O"
    key: str                            # the matched string (concept name/synonym, or document focus)
    score: float                        # cosine similarity
    concept_id: str | None = None       # G: best concept id for the key
    focus: str | None = None            # B/O: the focus string
    ids: list[str] = field(default_factory=list)   # G: concept ids; B/O: document ids
    name: str | None = None             # G: the concept's preferred name
    category: str | None = None         # G: concept category
    knowledge: list[Any] = field(default_factory=list)  # G: Triples; B/O: chunk dicts

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["knowledge"] = [_jsonable(k) for k in self.knowledge]
        return d


@dataclass
class SearchHit:
    chunk_id: str
    score: float                        # fused score (hybrid), BM25 score or cosine
    text: str
    role: str
    metadata: dict[str, Any]
    bm25_score: float | None = None
    dense_score: float | None = None
    ranks: dict[str, int] = field(default_factory=dict)   # 1-based rank per ranking ("bm25", "dense")

    @property
    def doc_id(self) -> str:
        return self.metadata.get("doc_id", self.chunk_id.split("#")[0])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _jsonable(x: Any) -> Any:
    if hasattr(x, "to_dict"):
        return x.to_dict()
    if hasattr(x, "__dataclass_fields__"):
        return asdict(x)
    return x


@dataclass
class IndexConfig:
    """What goes into the index. Every field is part of the index version."""

    embedder: str | None = None              # embedder spec (see embeddings.get_embedder); None = default
    max_tokens: int = 200                    # chunk size (project tokenizer tokens)
    overlap: float = 0.2                     # chunk overlap (fraction of max_tokens; 20–30 % keeps context across cuts)
    card_max_findings: int = 8               # findings (symptoms/phenotypes) listed on a concept card
    card_max_synonyms: int = 4
    card_max_definition_chars: int = 300
    card_min_content: int = 2                # a disease gets a card only with >= this many content items
    g_definitions: bool = True               # index the graph's NCI Thesaurus disease definitions (citable text)
    # Dense vectors: "lead" = one per document (B/O) or card (G), from its first chunk cut at dense_max_tokens
    # word pieces (focus, section heading and opening sentences); "chunk" = one per chunk, cut at the model's
    # limit. BM25 always covers every chunk in full. Leads cost ~1/7 of the model time of full chunks and rank
    # at least as well on our query set (docs/retrieval.md).
    dense_unit: str = "lead"
    dense_max_tokens: int = 48
    # G names and synonyms (68k strings) are all in the name index (exact normalised match, then BM25 over
    # name words); those of these categories are also embedded for dense entity search. Symptoms (1.2k names)
    # by default: lay wording ("belly pain") reaches them; embedding every category costs ~95 s more build
    # and gains little beyond (docs/retrieval.md, entity linking).
    g_entity_vectors: tuple[str, ...] = ("symptom",)
    g_categories: tuple[str, ...] = G_CATEGORIES
    organisations: tuple[str, ...] | None = None   # MedQuAD organisations (None = all)
    doc_limit: int | None = None             # first N documents (tests, benchmarks)
    per_organisation_limit: int | None = None  # first N documents of each organisation (subsets)
    g_concepts: tuple[str, ...] | None = None  # restrict G entities and cards to these concept ids (subsets)
    batch_size: int = 64

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["g_categories"] = list(self.g_categories)
        d["g_entity_vectors"] = list(self.g_entity_vectors)
        d["organisations"] = list(self.organisations) if self.organisations else None
        d["g_concepts"] = sorted(self.g_concepts) if self.g_concepts else None
        return d

"""Fuzzy linking of words outside the vocabulary ("wheezng", "dyspnoea"): scispaCy's ``CandidateGenerator`` over
a char-3-gram TF-IDF nearest-neighbour index of the vocabulary aliases, built once and cached on disk."""
from __future__ import annotations

import json
import time
from pathlib import Path

from knowledge.atomic import building

from .lexicon import CATEGORY_PRIORITY, Lexicon

# HNSW parameters of the fuzzy-linking index (scispaCy uses M=100, efConstruction=2000 for 3M UMLS aliases).
ANN_M = 16
ANN_EF_CONSTRUCTION = 100
ANN_EF_SEARCH = 200


class Linker:
    """scispaCy ``CandidateGenerator`` over a TF-IDF char-3-gram ANN index of the vocabulary aliases."""

    def __init__(self, lexicon: Lexicon, cache_dir: Path, *, ef_search: int = ANN_EF_SEARCH):
        from scispacy.candidate_generation import (  # noqa: PLC0415
            CandidateGenerator,
            LinkerPaths,
            create_tfidf_ann_index,
        )
        from scispacy.linking_utils import Entity as KBEntity  # noqa: PLC0415
        from scispacy.linking_utils import KnowledgeBase  # noqa: PLC0415

        by_concept: dict[str, list[str]] = {}
        for alias, ids in lexicon.kb_aliases.items():
            for cid in ids:
                by_concept.setdefault(cid, []).append(alias)
        kb = KnowledgeBase([KBEntity(cid, lexicon.concepts[cid].name.lower(), aliases)
                            for cid, aliases in by_concept.items()])
        self.lexicon = lexicon
        self.build_seconds = 0.0
        if not (cache_dir.is_dir() and LinkerPaths.from_directory(cache_dir).is_locally_cached()):
            t0 = time.perf_counter()
            # built next to the final folder, then renamed: a concurrent start never sees half an index
            with building(cache_dir, keep_existing=True) as tmp:
                _build_ann_index(kb, LinkerPaths.from_directory(tmp))
            self.build_seconds = time.perf_counter() - t0
        # Loads the cached vectorizer, alias list and index (scispaCy's own loader).
        aliases, vectorizer, index = create_tfidf_ann_index(str(cache_dir), kb, ef_search=ef_search)
        self.generator = CandidateGenerator(ann_index=index, tfidf_vectorizer=vectorizer,
                                            ann_concept_aliases_list=aliases, kb=kb)

    def candidates(self, mentions: list[str], k: int = 8) -> list[list[tuple[str, str, float]]]:
        """For each mention: (concept id, best alias, similarity) sorted best first."""
        if not mentions:
            return []
        out = []
        for cands in self.generator([m.lower() for m in mentions], k):
            best = []
            for c in cands:
                j = max(range(len(c.similarities)), key=lambda i: c.similarities[i])
                best.append((c.concept_id, c.aliases[j], float(c.similarities[j])))
            best.sort(key=lambda t: (-t[2], CATEGORY_PRIORITY.get(self.lexicon.concepts[t[0]].category, 9), t[0]))
            out.append(best)
        return out


def _build_ann_index(kb, paths) -> None:
    """Fit the TF-IDF vectorizer and the nmslib HNSW index in scispaCy's file layout.

    scispaCy's ``create_tfidf_ann_index`` needs scipy<1.11 (float16 sparse) and uses hyper-parameters sized for
    the 3M-alias UMLS (hours on a laptop); the same artefacts are written here with float32 vectors and
    parameters sized for a vocabulary of ~10^5 aliases, and then loaded by scispaCy's loader.
    """
    import joblib  # noqa: PLC0415
    import nmslib  # noqa: PLC0415
    import numpy  # noqa: PLC0415
    import scipy.sparse  # noqa: PLC0415
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: PLC0415

    aliases = list(kb.alias_to_cuis.keys())
    min_df = 2 if len(aliases) > 5000 else 1
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), min_df=min_df, dtype=numpy.float32)
    vectors = vectorizer.fit_transform(aliases)
    keep = numpy.asarray(vectors.sum(axis=1) != 0).reshape(-1)
    aliases = [a for a, k in zip(aliases, keep) if k]
    vectors = vectors[keep].astype(numpy.float32)
    index = nmslib.init(method="hnsw", space="cosinesimil_sparse", data_type=nmslib.DataType.SPARSE_VECTOR)
    index.addDataPointBatch(vectors)
    index.createIndex({"M": ANN_M, "efConstruction": ANN_EF_CONSTRUCTION, "indexThreadQty": 2, "post": 0}, print_progress=False)
    tmp = Path(paths.ann_index).parent
    joblib.dump(vectorizer, paths.tfidf_vectorizer)
    scipy.sparse.save_npz(paths.tfidf_vectors, vectors)
    with open(paths.concept_aliases_list, "w") as f:
        json.dump(aliases, f)
    index.saveIndex(paths.ann_index, save_data=False)
    (tmp / "built.json").write_text(json.dumps({"aliases": len(aliases), "min_df": min_df}))


__all__ = ["ANN_M", "ANN_EF_CONSTRUCTION", "ANN_EF_SEARCH", "Linker"]

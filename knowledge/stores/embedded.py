"""In-process vector store persisted on disk; cosine search.

Layout under ``path``: one folder per collection with ``vectors.npy`` (float32, L2-normalised rows,
memory-mapped on open), ``ids.json``, ``metadata.pkl`` and, for collections of at least ``ann_min`` rows, an
HNSW graph (``hnsw.faiss``, faiss ``IndexHNSWFlat`` over inner products). A collection is written to a
temporary folder and swapped in by rename, so a crash while writing never leaves a half-written collection.

Search is exact (one matrix product) for collections below ``ann_min`` rows (250k: about 2.5 ms for 50k rows
here) and for filters that keep few rows; larger collections are searched through the HNSW graph (``ef_search``
candidates, filters applied inside the graph walk).

Filters: ``{"field": value}`` (equality) or ``{"field": [v1, v2]}`` (membership); several fields are ANDed.
A metadata value that is itself a list matches when any of its items matches.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..atomic import building
from .base import Hit

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


# collections at least this large get an HNSW graph. Below it search is exact: a 50k x 384 product takes about
# 2.5 ms here, and an approximate graph built on two threads differs from build to build, so a rebuilt index could
# move a benchmark case without any change of data (recall@10 0.985 at 45k vectors)
ANN_MIN = 250_000
ANN_M = 32             # HNSW neighbours per node
ANN_EF_CONSTRUCTION = 80
ANN_EF_SEARCH = 64     # candidates kept during a search, at least twice k (recall 0.985 at k=10, measured)
EXACT_MAX = 4000       # a filter that keeps at most this many rows is searched exactly


class _Collection:
    __slots__ = ("ids", "vectors", "metadata", "index", "columns", "dirty", "ann", "masks")

    def __init__(self, ids: list[str], vectors: np.ndarray, metadata: list[dict[str, Any]], ann: Any = None):
        self.ids = ids
        self.vectors = vectors
        self.metadata = metadata
        self.index = {i: n for n, i in enumerate(ids)}
        self.columns: dict[str, np.ndarray] = {}
        self.dirty = False
        self.ann = ann                                  # faiss index over the rows, or None
        self.masks: dict[str, tuple[np.ndarray, Any]] = {}   # filter key -> (bool mask, faiss selector)

    def column(self, field: str) -> np.ndarray:
        col = self.columns.get(field)
        if col is None:
            col = np.empty(len(self.metadata), dtype=object)
            col[:] = [m.get(field) for m in self.metadata]
            self.columns[field] = col
        return col


def _normalise(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32, copy=False)


class EmbeddedStore:
    """Named collections of (id, vector, metadata) in numpy arrays, persisted under ``path``."""

    name = "embedded"

    def __init__(self, path: str | Path | None = None, autoflush: bool = True, mmap: bool = True,
                 ann_min: int = ANN_MIN, ef_search: int = ANN_EF_SEARCH):
        if path is None:
            from .. import paths  # noqa: PLC0415

            path = paths.build_dir() / "stores" / "embedded"
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.autoflush = autoflush
        self.mmap = mmap
        self.ann_min = ann_min
        self.ef_search = ef_search
        self._cols: dict[str, _Collection] = {}
        self._lock = threading.RLock()

    # -- persistence ---------------------------------------------------------------------------------
    def _dir(self, collection: str) -> Path:
        if not _NAME_RE.match(collection):
            raise ValueError(f"invalid collection name {collection!r} (letters, digits, _ . - only)")
        return self.path / collection

    def _load(self, collection: str, create: bool = False) -> _Collection:
        col = self._cols.get(collection)
        if col is not None:
            return col
        d = self._dir(collection)
        if (d / "ids.json").exists():
            ids = json.loads((d / "ids.json").read_text(encoding="utf-8"))
            vectors = np.load(d / "vectors.npy", mmap_mode="r" if self.mmap else None)
            with open(d / "metadata.pkl", "rb") as fh:
                metadata = pickle.load(fh)
            if len(ids) != len(vectors) or len(ids) != len(metadata):
                raise RuntimeError(f"collection {collection!r} at {d} is inconsistent "
                                   f"({len(ids)} ids, {len(vectors)} vectors, {len(metadata)} metadata)")
            ann = _read_ann(d / "hnsw.faiss") if len(ids) >= self.ann_min else None   # written by another setting
            col = _Collection(ids, vectors, metadata, ann=ann)
        elif create:
            col = _Collection([], np.zeros((0, 0), dtype=np.float32), [])
        else:
            raise KeyError(f"no collection {collection!r} in store {self.path}")
        self._cols[collection] = col
        return col

    def _write(self, collection: str, col: _Collection) -> None:
        with building(self._dir(collection)) as tmp:
            np.save(tmp / "vectors.npy", np.ascontiguousarray(col.vectors, dtype=np.float32))
            (tmp / "ids.json").write_text(json.dumps(col.ids), encoding="utf-8")
            with open(tmp / "metadata.pkl", "wb") as fh:
                pickle.dump(col.metadata, fh, protocol=pickle.HIGHEST_PROTOCOL)
            col.ann = _build_ann(col.vectors) if len(col.ids) >= self.ann_min else None
            if col.ann is not None:
                import faiss  # noqa: PLC0415

                faiss.write_index(col.ann, str(tmp / "hnsw.faiss"))
        col.dirty = False

    def flush(self) -> None:
        with self._lock:
            for name, col in self._cols.items():
                if col.dirty:
                    self._write(name, col)

    # -- writes ----------------------------------------------------------------------------------------
    def upsert(self, collection: str, ids: Sequence[str], vectors: np.ndarray,
               metadata: Sequence[dict[str, Any]] | None = None) -> None:
        ids = [str(i) for i in ids]
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(ids):
            raise ValueError(f"upsert: {len(ids)} ids but vectors of shape {vectors.shape}")
        metadata = list(metadata) if metadata is not None else [{} for _ in ids]
        if len(metadata) != len(ids):
            raise ValueError(f"upsert: {len(ids)} ids but {len(metadata)} metadata records")
        if len(set(ids)) != len(ids):
            raise ValueError("upsert: duplicate ids in one call")
        vectors = _normalise(vectors)
        with self._lock:
            col = self._load(collection, create=True)
            if len(col.ids) and col.vectors.shape[1] != vectors.shape[1]:
                raise ValueError(f"collection {collection!r} has dim {col.vectors.shape[1]}, got {vectors.shape[1]}")
            vecs = np.array(col.vectors, dtype=np.float32) if len(col.ids) else np.zeros((0, vectors.shape[1]),
                                                                                          dtype=np.float32)
            new_rows = []
            for n, i in enumerate(ids):
                pos = col.index.get(i)
                if pos is None:
                    new_rows.append(n)
                else:
                    vecs[pos] = vectors[n]
                    col.metadata[pos] = dict(metadata[n])
            if new_rows:
                vecs = np.concatenate([vecs, vectors[new_rows]], axis=0)
                for n in new_rows:
                    col.index[ids[n]] = len(col.ids)
                    col.ids.append(ids[n])
                    col.metadata.append(dict(metadata[n]))
            col.vectors = vecs
            col.columns.clear()
            col.masks.clear()
            col.ann = None
            col.dirty = True
            if self.autoflush:
                self._write(collection, col)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        with self._lock:
            try:
                col = self._load(collection)
            except KeyError:
                return
            drop = {col.index[i] for i in ids if i in col.index}
            if not drop:
                return
            keep = [n for n in range(len(col.ids)) if n not in drop]
            new = _Collection([col.ids[n] for n in keep], np.array(col.vectors[keep], dtype=np.float32),
                              [col.metadata[n] for n in keep])
            new.dirty = True
            self._cols[collection] = new
            if self.autoflush:
                self._write(collection, new)

    def drop(self, collection: str) -> None:
        """Remove a whole collection (memory and disk)."""
        with self._lock:
            self._cols.pop(collection, None)
            shutil.rmtree(self._dir(collection), ignore_errors=True)

    # -- reads -----------------------------------------------------------------------------------------
    def _mask(self, col: _Collection, filters: dict[str, Any] | None) -> tuple[np.ndarray, Any] | None:
        """(bool mask, faiss selector) of the rows a filter keeps; cached per filter (collections are read
        far more often than written, and the same few filters recur: one per source role)."""
        if not filters:
            return None
        key = repr(sorted((f, sorted(map(repr, w)) if isinstance(w, (list, tuple, set, frozenset)) else repr(w))
                          for f, w in filters.items()))
        hit = col.masks.get(key)
        if hit is not None:
            return hit
        mask = np.ones(len(col.ids), dtype=bool)
        for field, want in filters.items():
            values = col.column(field)
            wanted = set(want) if isinstance(want, (list, tuple, set, frozenset)) else {want}

            def ok(v, wanted=wanted):
                if isinstance(v, (list, tuple, set)):
                    return any(x in wanted for x in v)
                return v in wanted

            mask &= np.fromiter((ok(v) for v in values), dtype=bool, count=len(values))
        selector = None
        if col.ann is not None and int(mask.sum()) > EXACT_MAX:
            import faiss  # noqa: PLC0415

            bits = np.packbits(mask, bitorder="little")
            selector = (faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits)), bits)  # keep bits alive
        if len(col.masks) > 64:
            col.masks.clear()
        col.masks[key] = (mask, selector)
        return col.masks[key]

    def search(self, collection: str, vector: np.ndarray, k: int = 10,
               filters: dict[str, Any] | None = None, min_score: float | None = None) -> list[Hit]:
        return self.search_many(collection, np.asarray(vector, dtype=np.float32)[None, :], k, filters,
                                min_score)[0]

    def search_many(self, collection: str, vectors: np.ndarray, k: int = 10,
                    filters: dict[str, Any] | None = None, min_score: float | None = None) -> list[list[Hit]]:
        """Batch search: one list of hits per query row."""
        q = np.asarray(vectors, dtype=np.float32)
        if q.ndim == 1:
            q = q[None, :]
        q = _normalise(q)
        with self._lock:
            col = self._load(collection)
            if not len(col.ids):
                return [[] for _ in range(len(q))]
            if q.shape[1] != col.vectors.shape[1]:
                raise ValueError(f"query dim {q.shape[1]} != collection {collection!r} dim {col.vectors.shape[1]}")
            masked = self._mask(col, filters)
            mask = masked[0] if masked is not None else None
            kk = min(k, len(col.ids))
            if kk <= 0:
                return [[] for _ in range(len(q))]
            if col.ann is not None and (mask is None or masked[1] is not None):
                return self._search_ann(col, q, kk, masked[1][0] if masked is not None else None, min_score)
            if mask is not None and 4 * int(mask.sum()) < len(mask):     # few rows: gather them
                rows = np.flatnonzero(mask)
                scores = q @ np.asarray(col.vectors)[rows].T if len(rows) else np.zeros((len(q), 0), np.float32)
            elif mask is not None:          # most rows: one product over the matrix (no copy), the rest masked off
                rows = None
                scores = q @ np.asarray(col.vectors).T
                scores[:, ~mask] = -np.inf
                kk = min(kk, int(mask.sum()))
            else:
                rows = None
                scores = q @ np.asarray(col.vectors).T  # (nq, n)
            out: list[list[Hit]] = []
            kk = min(kk, scores.shape[1])
            for row in scores:
                if kk <= 0:
                    out.append([])
                    continue
                top = np.argpartition(-row, kk - 1)[:kk] if kk < len(row) else np.arange(len(row))
                top = top[np.argsort(-row[top], kind="stable")]
                hits = []
                for n in top:
                    s = float(row[n])
                    if min_score is not None and s < min_score:
                        continue
                    pos = int(rows[n]) if rows is not None else int(n)
                    hits.append(Hit(col.ids[pos], s, col.metadata[pos]))
                out.append(hits)
            return out

    def _search_ann(self, col: _Collection, q: np.ndarray, k: int, selector: Any,
                    min_score: float | None) -> list[list[Hit]]:
        import faiss  # noqa: PLC0415

        params = faiss.SearchParametersHNSW()
        params.efSearch = max(self.ef_search, 2 * k)
        if selector is not None:
            params.sel = selector
        # one query is faster on one thread than split across two (thread start-up costs more than it saves)
        faiss.omp_set_num_threads(1 if len(q) <= 4 else max(1, os.cpu_count() or 1))
        scores, idx = col.ann.search(np.ascontiguousarray(q, dtype=np.float32), k, params=params)
        out: list[list[Hit]] = []
        for srow, irow in zip(scores, idx):
            hits = []
            for s, n in zip(srow.tolist(), irow.tolist()):
                if n < 0 or (min_score is not None and s < min_score):
                    continue
                hits.append(Hit(col.ids[n], float(s), col.metadata[n]))
            out.append(hits)
        return out

    def get(self, collection: str, ids: Sequence[str]) -> list[Hit | None]:
        """Metadata of the given ids (score 0.0), None where unknown."""
        with self._lock:
            col = self._load(collection)
            return [Hit(i, 0.0, col.metadata[col.index[i]]) if i in col.index else None for i in ids]

    def vectors(self, collection: str, ids: Sequence[str]) -> np.ndarray:
        with self._lock:
            col = self._load(collection)
            return np.asarray(col.vectors)[[col.index[i] for i in ids]]

    def ids(self, collection: str) -> list[str]:
        with self._lock:
            try:
                return list(self._load(collection).ids)
            except KeyError:
                return []

    def count(self, collection: str) -> int:
        with self._lock:
            try:
                return len(self._load(collection).ids)
            except KeyError:
                return 0

    def collections(self) -> list[str]:
        on_disk = {p.name for p in self.path.iterdir() if p.is_dir() and not p.name.startswith(".")}
        return sorted(on_disk | set(self._cols))


def _build_ann(vectors: np.ndarray) -> Any:
    """An HNSW graph over the rows (inner product = cosine on unit vectors), or None without faiss."""
    try:
        import faiss  # noqa: PLC0415
    except ImportError:
        return None
    vecs = np.ascontiguousarray(vectors, dtype=np.float32)
    faiss.omp_set_num_threads(max(1, os.cpu_count() or 1))
    index = faiss.IndexHNSWFlat(vecs.shape[1], ANN_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ANN_EF_CONSTRUCTION
    index.add(vecs)
    return index


def _read_ann(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        import faiss  # noqa: PLC0415
    except ImportError:
        return None            # exact search still works
    return faiss.read_index(str(path))

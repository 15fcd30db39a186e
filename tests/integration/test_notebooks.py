"""The notebooks run top to bottom on the test knowledge (a tiny benchmark sample), as a reader would run them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _execute(path: Path, tmp_path: Path, env: dict[str, str]):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)          # the kernel inherits this process's environment
    try:
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def test_bench_notebook(knowledge, tmp_path):
    nb = _execute(NOTEBOOKS / "bench.ipynb", tmp_path, {"CLINICALRAG_NOTEBOOK_LIMIT": "6",
                                                         "CLINICALRAG_NOTEBOOK_RUN": str(tmp_path)})
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    markdown = "".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert "Table 1" in markdown and "bm25" in markdown
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert len((tmp_path / "s2d" / "records.jsonl").read_text().splitlines()) == 6 * 4

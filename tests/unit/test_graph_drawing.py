"""docs/graph.mmd is the diagram of the compiled graph (regenerate: python -m graph.workflow --mermaid)."""
from __future__ import annotations

from pathlib import Path

from graph.workflow import graph

MMD = Path(__file__).resolve().parents[2] / "docs" / "graph.mmd"


def test_checked_in_mermaid_matches_the_compiled_graph():
    assert MMD.read_text(encoding="utf-8") == graph.get_graph().draw_mermaid(), (
        "docs/graph.mmd is stale: run `python -m graph.workflow --mermaid > docs/graph.mmd`")


def test_architecture_doc_shows_the_same_diagram():
    doc = (MMD.parent / "architecture.md").read_text(encoding="utf-8")
    assert "```mermaid\n" + graph.get_graph().draw_mermaid() + "```" in doc, (
        "docs/architecture.md shows a stale diagram: paste docs/graph.mmd into its mermaid block")

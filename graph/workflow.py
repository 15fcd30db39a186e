"""The ClinicalRAG StateGraph: intake → MEE → propose (LLM) → HKI → grade → KNL → generate → verify → KRG → must-not-miss →
finalize → audit, with corrective re-retrieval and escalation. See docs/architecture.md (the diagram there is drawn
from this graph).

    StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)

- input ``{"message": "..."}``; output ``{"result": {...}}`` (:class:`graph.state.Result`);
- the run's configuration and the shared resources come in the :class:`graph.context.Context`;
- nodes are the functions of :mod:`graph.nodes`, routers those of :mod:`graph.routing`.

The graph is compiled once per process: :data:`graph` without a checkpointer (single turns, LangGraph's server
and Studio, which bring their own persistence), and :func:`compile_graph` with the checkpointer a caller passes
(conversation threads).
"""
from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from . import nodes
from .config import PipelineConfig
from .context import Context
from .routing import route_generate, route_grade, route_intake, route_verify
from .state import InputState, OutputState, State

NAME = "clinicalrag"


def build() -> StateGraph:
    g = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    for fn in (nodes.intake, nodes.mee, nodes.propose, nodes.hki, nodes.grade, nodes.correct, nodes.escalate_retrieval, nodes.knl,
               nodes.generate, nodes.direct, nodes.verify, nodes.escalate, nodes.krg, nodes.must_not_miss,
               nodes.finalize, nodes.audit):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_conditional_edges("intake", route_intake)
    g.add_edge("mee", "propose")
    g.add_edge("propose", "hki")
    g.add_edge("hki", "grade")
    g.add_conditional_edges("grade", route_grade)
    g.add_edge("correct", "hki")
    g.add_edge("escalate_retrieval", "knl")
    g.add_edge("knl", "generate")
    g.add_conditional_edges("generate", route_generate)
    g.add_conditional_edges("verify", route_verify)
    g.add_edge("escalate", "krg")
    g.add_edge("krg", "must_not_miss")
    g.add_edge("must_not_miss", "finalize")
    g.add_edge("direct", "finalize")
    g.add_edge("finalize", "audit")
    g.add_edge("audit", END)
    return g


def compile_graph(checkpointer=None):
    """The compiled graph with ``checkpointer`` (None: no persistence). Its default recursion limit covers the
    longest path the configuration allows (``max_attempts`` = 5 corrective loops)."""
    limit = PipelineConfig.model_fields["recursion_limit"].default
    return build().compile(checkpointer=checkpointer, name=NAME).with_config(recursion_limit=limit)


graph = compile_graph()
"""The process's graph without a checkpointer."""


if __name__ == "__main__":   # python -m graph.workflow --mermaid > docs/graph.mmd
    import sys

    if sys.argv[1:] != ["--mermaid"]:
        raise SystemExit("usage: python -m graph.workflow --mermaid")
    sys.stdout.write(graph.get_graph().draw_mermaid())

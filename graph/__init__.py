"""The ClinicalRAG LangGraph: typed state and context, module-level nodes and routers, the compiled workflow,
the result and audit record, the product API (pipeline) and the audit trail (tracing)."""

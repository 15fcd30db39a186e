"""The ClinicalRAG LangGraph: state, workflow (nodes + conditional edges), typed config, tracing."""

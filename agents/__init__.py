"""Agents: each a small typed function/class (typed input -> typed output). No LangGraph here."""

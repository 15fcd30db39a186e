"""Benchmarks and local-model helpers (not part of the installed package)."""

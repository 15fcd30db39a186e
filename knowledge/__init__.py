"""Knowledge layer: sources, knowledge graph (G), corpora (B, O), embeddings, stores and the index.

This package never imports ``agents``, ``graph`` or ``clinicalrag``.
"""

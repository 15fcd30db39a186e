"""ClinicalRAG faces: command line, HTTP API, web page and benchmark runner."""
__version__ = "0.1.0"

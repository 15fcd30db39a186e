"""Diagnosis-benchmark experiments: datasets, systems, runs, metrics and reports (`clinicalrag bench`)."""

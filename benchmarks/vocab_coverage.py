"""Vocabulary coverage: how many gold diagnoses of the benchmark datasets name a disease concept of the KG?

A gold label resolves when ``kg.lookup(label, categories=["disease"])`` finds at least one concept (by preferred
name, synonym of any scope, abbreviation or identifier, insensitive to case and punctuation). Datasets: the
MedQA diagnosis questions (``medqa-free``: the correct option's text), Symptom2Disease labels, DDXPlus
condition names and the project's hand-written cases (``cases``: the gold name). Each row counts distinct
labels and cases (a label shared by many cases counts once in the first, as often as it occurs in the second).

    python benchmarks/vocab_coverage.py                       # the KG of the current sources (load_or_build)
    python benchmarks/vocab_coverage.py --artefact kg-xxxx.pkl --missing 20
    python benchmarks/vocab_coverage.py --json coverage.json

``load_or_build`` builds the graph when no artefact matches the current sources; ``--artefact`` reads a saved
graph as it is and never builds.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASETS = ("medqa-free", "symptom2disease", "ddxplus", "cases")


@dataclass
class Coverage:
    dataset: str
    labels: int
    labels_resolved: int
    cases: int
    cases_resolved: int
    missing: list[str] = field(default_factory=list)     # unresolved labels, most frequent first

    @property
    def label_share(self) -> float:
        return self.labels_resolved / self.labels if self.labels else 0.0

    @property
    def case_share(self) -> float:
        return self.cases_resolved / self.cases if self.cases else 0.0


def coverage(kg, name: str, labels: list[str]) -> Coverage:
    """Coverage of one dataset's gold labels (one entry per case) by ``kg``."""
    counts = Counter(labels)
    resolved = {lab: bool(kg.lookup(lab, categories=["disease"])) for lab in counts}
    missing = sorted((lab for lab, ok in resolved.items() if not ok), key=lambda lab: (-counts[lab], lab))
    return Coverage(dataset=name, labels=len(counts), labels_resolved=sum(resolved.values()),
                    cases=len(labels), cases_resolved=sum(n for lab, n in counts.items() if resolved[lab]),
                    missing=missing)


def dataset_labels(name: str) -> list[str]:
    """The gold label of every case of a registered benchmark dataset."""
    from clinicalrag.bench.datasets import load_dataset  # noqa: PLC0415

    return [c.label for c in load_dataset(name).cases]


def markdown(rows: list[Coverage], version: str) -> str:
    out = [f"Gold labels resolving to a disease concept (KG {version})", "",
           "| dataset | labels | resolved | share | cases | resolved | share |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r.dataset} | {r.labels} | {r.labels_resolved} | {r.label_share:.1%} | {r.cases} | "
                   f"{r.cases_resolved} | {r.case_share:.1%} |")
    labels = sum(r.labels for r in rows)
    cases = sum(r.cases for r in rows)
    if len(rows) > 1 and labels and cases:
        lab_ok = sum(r.labels_resolved for r in rows)
        case_ok = sum(r.cases_resolved for r in rows)
        out.append(f"| all | {labels} | {lab_ok} | {lab_ok / labels:.1%} | {cases} | {case_ok} | "
                   f"{case_ok / cases:.1%} |")
    return "\n".join(out)


def load_kg(artefact: str | None, sources: str | None):
    from knowledge.kg import KnowledgeGraph, load_or_build  # noqa: PLC0415

    if artefact:
        return KnowledgeGraph.load(artefact)
    ids = [s.strip() for s in sources.split(",") if s.strip()] if sources else None
    return load_or_build(sources=ids)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artefact", help="a saved knowledge-graph artefact (.pkl) to read instead of load_or_build")
    ap.add_argument("--sources", help="comma-separated KG source ids for load_or_build (default: the default set)")
    ap.add_argument("--datasets", default=",".join(DATASETS), help=f"comma-separated (default {','.join(DATASETS)})")
    ap.add_argument("--missing", type=int, default=0, metavar="N", help="list up to N unresolved labels per dataset")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers (and every unresolved label) as JSON")
    args = ap.parse_args(argv)

    kg = load_kg(args.artefact, args.sources)
    rows = [coverage(kg, name, dataset_labels(name)) for name in args.datasets.split(",") if name.strip()]
    print(markdown(rows, kg.version))
    if args.missing:
        for r in rows:
            if r.missing:
                print(f"\n{r.dataset}: {len(r.missing)} unresolved, e.g. " + "; ".join(r.missing[:args.missing]))
    if args.json:
        payload = {"kg_version": kg.version,
                   "datasets": [dict(asdict(r), label_share=r.label_share, case_share=r.case_share) for r in rows]}
        Path(args.json).write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

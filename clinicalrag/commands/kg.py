"""`clinicalrag kg`: build the disease knowledge graph, show its statistics, show one concept."""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict


def register(subparsers) -> None:
    p = subparsers.add_parser("kg", help="disease knowledge graph (build, stats, show)",
                              description="The disease knowledge graph (source G): Disease Ontology, Symptom "
                                          "Ontology, HPO, HSDN and PharmacotherapyDB in one graph, with the names "
                                          "of NCIt, MeSH, ICD-10-CM and Mondo merged into the DO concepts.")
    sub = p.add_subparsers(dest="kg_command", metavar="SUBCOMMAND")
    sub.required = True

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--with-ddxplus", action="store_true",
                        help="include the optional DDXPlus conditions (keep off when evaluating on DDXPlus)")
        sp.add_argument("--sources", help="comma-separated source ids (default: every default KG source)")

    b = sub.add_parser("build", help="build the graph (or reuse the artefact matching the current sources)")
    common(b)
    b.add_argument("--rebuild", action="store_true", help="rebuild even if a matching artefact exists")
    b.set_defaults(func=_cmd_build)

    s = sub.add_parser("stats", help="node counts per category and source, edge counts per relation and source")
    common(s)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=_cmd_stats)

    sh = sub.add_parser("show", help="concept card: names, definition, cross-references and triples")
    common(sh)
    sh.add_argument("concept", help="a name, synonym or id (e.g. 'heart attack', DOID:2841, OMIM:154700)")
    sh.add_argument("--json", action="store_true", help="machine-readable output")
    sh.add_argument("--limit", type=int, default=10, help="triples shown per relation (default 10; 0 = all)")
    sh.add_argument("--category", choices=["disease", "symptom", "phenotype", "drug", "anatomy"],
                    help="only concepts of this category")
    sh.set_defaults(func=_cmd_show)


def _load(args, rebuild: bool = False, progress: bool = False):
    from clinicalrag.cli import UserError
    from knowledge.kg import BuildError, load_or_build

    sources = [s.strip() for s in args.sources.split(",") if s.strip()] if args.sources else None
    try:
        return load_or_build(sources=sources, include_ddxplus=args.with_ddxplus, rebuild=rebuild,
                             progress=progress)
    except BuildError as exc:
        raise UserError(str(exc)) from exc
    except FileNotFoundError as exc:
        raise UserError(f"a knowledge-graph source is missing: {exc} (run `clinicalrag data fetch`)") from exc


def _cmd_build(args) -> int:
    from knowledge.kg import artefact_path

    t0 = time.perf_counter()
    kg = _load(args, rebuild=args.rebuild, progress=True)
    path = artefact_path(kg.version)
    st = kg.stats()
    print(f"knowledge graph {kg.version}: {st['nodes']:,} nodes, {st['edges']:,} edges "
          f"({time.perf_counter() - t0:.1f}s)")
    print(f"artefact: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    dropped = {k: v for k, v in kg.report.items() if "unknown" in k or "unresolved" in k}
    if dropped:
        print("dropped: " + ", ".join(f"{k}={v}" for k, v in dropped.items()))
    return 0


def _cmd_stats(args) -> int:
    kg = _load(args)
    st = kg.stats()
    st["build_report"] = kg.report
    if args.json:
        json.dump(st, sys.stdout, indent=2)
        print()
        return 0
    print(f"knowledge graph {st['version']}: {st['nodes']:,} nodes, {st['edges']:,} edges")
    for title, key in [("nodes per category", "nodes_per_category"), ("nodes per source", "nodes_per_source"),
                       ("edges per relation", "edges_per_relation"), ("edges per source", "edges_per_source"),
                       ("edges per relation/source", "edges_per_relation_and_source")]:
        print(f"\n{title}:")
        for k, v in sorted(st[key].items(), key=lambda kv: -kv[1]):
            print(f"  {k:<40} {v:>9,}")
    return 0


def _cmd_show(args) -> int:
    from clinicalrag.cli import UserError
    from knowledge.sources import CATALOG

    kg = _load(args)
    cats = [args.category] if args.category else None
    matches = kg.lookup(args.concept, categories=cats)
    if not matches:
        near = kg.suggest(args.concept, n=5, categories=cats)
        hint = ("; closest: " + ", ".join(f"{c.name} ({c.id})" for c in near)) if near else ""
        raise UserError(f"no concept named {args.concept!r} in the knowledge graph{hint}")
    c = matches[0]
    limit = args.limit if args.limit and args.limit > 0 else None
    groups: dict[str, list] = {}
    for t in kg.neighbors(c.id, direction="out"):
        groups.setdefault(t.relation, []).append(t)
    incoming = [t for t in kg.neighbors(c.id, direction="in") if t.relation != "xref"]
    if c.category in ("symptom", "phenotype"):
        incoming = [t for t in incoming if t.relation not in ("has_symptom", "has_phenotype")]
        findings = kg.diseases_with_finding(c.id)
        if findings:
            groups["diseases with this finding"] = findings
    for t in incoming:
        groups.setdefault(f"{t.relation} (incoming)", []).append(t)
    for g, ts in groups.items():
        if g == "diseases with this finding":
            continue  # keep diseases_with_finding's order
        ts.sort(key=lambda t: (-(t.frequency if t.frequency is not None else -1), -(t.weight or 0), t.subject,
                               t.object))
    if args.json:
        out = {"concept": asdict(c), "other_matches": [{"id": m.id, "name": m.name, "category": m.category}
                                                       for m in matches[1:]],
               "triples": {g: {"total": len(ts), "shown": [dict(asdict(t), id=t.id, text=t.text())
                                                          for t in ts[:limit]]}
                           for g, ts in groups.items()}}
        json.dump(out, sys.stdout, indent=2, default=str)
        print()
        return 0
    print(f"{c.name}  [{c.id}]  ({c.category})")
    if c.synonyms:
        print(f"  synonyms: {'; '.join(c.synonyms)}")
    if c.definition:
        print(f"  definition: {c.definition}")
    for d in c.definitions:
        print(f"  definition ({d.get('source')} {d.get('id', '')}): {d.get('text')}")
    if c.xrefs:
        print("  xrefs: " + "; ".join(f"{p}:{','.join(v)}" for p, v in sorted(c.xrefs.items())))
    print(f"  sources: {', '.join(c.sources)}")
    if len(matches) > 1:
        print("  other matches: " + ", ".join(f"{m.name} ({m.id}, {m.category})" for m in matches[1:6]))
    for g, ts in groups.items():
        print(f"\n  {g} ({len(ts)}):")
        for t in ts[:limit]:
            bits = [t.source]
            if t.weight is not None:
                bits.append(f"tfidf {t.weight:.1f}")
            if t.extra.get("also_sources"):
                bits.append("also " + ",".join(t.extra["also_sources"]))
            other = t.object if t.subject == c.id else t.subject
            print(f"    - {t.text()}  [{other}; {'; '.join(bits)}; {t.license}]")
        if limit and len(ts) > limit:
            print(f"    … {len(ts) - limit} more (--limit 0 for all)")
    used = sorted({t.source for ts in groups.values() for t in ts})
    if used:
        print("\n  provenance:")
        for sid in used:
            src = CATALOG.get(sid)
            if src:
                print(f"    {sid}: {src.title} — {src.license}. {src.citation}")
    return 0

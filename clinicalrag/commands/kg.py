"""`clinicalrag kg`: build the disease knowledge graph, mine edges from the reference texts, show its statistics, show
one concept."""
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
    b.add_argument("--no-mine", action="store_true",
                   help="do not mine MedQuAD for disease -> finding edges when the mined-edges file is missing")
    b.set_defaults(func=_cmd_build)

    m = sub.add_parser("mine", help="mine disease -> finding edges from the MedQuAD answers (symptoms, causes, "
                                    "tests, general pages)",
                       description="Read the MedQuAD answers about symptoms, causes and tests, and the symptom "
                                   "sentences of general pages, with the entity extractor and write the affirmed "
                                   "disease -> finding edges, each citing its sentence (document id and character "
                                   "span). The file is laid over the graph whenever it loads (see "
                                   "docs/mined-edges.md).")
    common(m)
    m.add_argument("--limit", type=int, help="mine only the first N documents of the chosen question types")
    m.add_argument("--organisations", help="comma-separated MedQuAD collections (e.g. GARD,NHLBI,NIDDK), and/or "
                                          "'NCI Thesaurus' for the graph's NCIt definitions (default all)")
    m.add_argument("--question-types", default=",".join(_question_types()),
                   help="comma-separated question types (MedQuAD's, and 'definition' for the NCIt definitions; "
                        "default: %(default)s)")
    m.add_argument("--out", help="the mined-edges file to write (default: next to the graph artefact, where "
                                 "loading the graph picks it up)")
    m.add_argument("--report", action="store_true",
                   help="also report what the edges add: diseases gaining edges, how many are common, the top "
                        "diseases, and a random sample to check by hand")
    m.add_argument("--sample", type=int, default=20, help="edges in the report's random sample (default 20)")
    m.add_argument("--seed", type=int, default=0, help="seed of the random sample (default 0)")
    m.add_argument("--json", action="store_true", help="machine-readable output")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.set_defaults(func=_cmd_mine)

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


def _question_types() -> tuple[str, ...]:
    from agents.miner import QUESTION_TYPES

    return QUESTION_TYPES


def _load(args, rebuild: bool = False, progress: bool = False, mined: bool | None = None):
    from clinicalrag.cli import UserError
    from knowledge.kg import BuildError, load_or_build

    sources = [s.strip() for s in args.sources.split(",") if s.strip()] if args.sources else None
    try:
        return load_or_build(sources=sources, include_ddxplus=args.with_ddxplus, rebuild=rebuild,
                             progress=progress, mined=mined)
    except BuildError as exc:
        raise UserError(str(exc)) from exc
    except FileNotFoundError as exc:
        raise UserError(f"a knowledge-graph source is missing: {exc} (run `clinicalrag data fetch`)") from exc


def mined_file_state(kg) -> tuple[object, str]:
    """(path, state) of the default mined-edges file of a built graph: "missing", "stale" (mined by another miner
    version, another extractor vocabulary or phrase table, or for another graph) or "current"."""
    from agents.miner import miner_version
    from knowledge.kg import mined

    path = mined.default_path(kg.base_version)
    if not path.is_file():
        return path, "missing"
    try:
        header = mined.read(path).header
    except (OSError, ValueError):
        return path, "stale"
    ok = header.get("miner") == miner_version() and header.get("kg_version") == kg.base_version
    return path, "current" if ok else "stale"


def _mine(kg, progress: bool, bar=None, **selection):
    """``agents.miner.mine_medquad`` with a progress bar: ``bar`` (a tqdm bar to advance) or one made here."""
    from agents.miner import mine_medquad

    own = bar is None
    if own:
        from tqdm import tqdm

        bar = tqdm(total=0, desc="mining MedQuAD", unit="doc", disable=not progress, dynamic_ncols=True)

    def step(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
            bar.refresh()
        bar.update(done - bar.n)

    try:
        return mine_medquad(kg, progress=step, **selection)
    finally:
        if own:
            bar.close()


def mine_into_home(kg, progress: bool = True, bar=None) -> dict:
    """Mine the whole MedQuAD release against ``kg`` (a graph without mined edges), write the default mined-edges
    file and lay it over ``kg``; returns the overlay counts. ``bar``: a tqdm bar to advance (else one is made)."""
    from knowledge.kg import mined

    res = _mine(kg, progress, bar)
    path = mined.write(mined.default_path(kg.base_version), res.edges, header=res.header(kg.base_version))
    return mined.overlay(kg, mined=True, path=path) or {}


def _cmd_build(args) -> int:
    from knowledge.kg import artefact_path

    t0 = time.perf_counter()
    kg = _load(args, rebuild=args.rebuild, progress=True, mined=False)
    path = artefact_path(kg.base_version)
    mpath, state = mined_file_state(kg)
    if state != "current" and not args.no_mine:
        print(f"mining MedQuAD for disease -> finding edges ({state} file {mpath})", flush=True)
        mine_into_home(kg, progress=True)
    elif state != "missing":
        from knowledge.kg import mined

        mined.overlay(kg, mined=True, path=mpath)
    st = kg.stats()
    print(f"knowledge graph {kg.version}: {st['nodes']:,} nodes, {st['edges']:,} edges "
          f"({time.perf_counter() - t0:.1f}s)")
    print(f"artefact: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    rep = kg.report.get("medquad_mined")
    if rep:
        print(f"mined from MedQuAD: {rep['edges']:,} edges ({rep['added']:,} new, {rep['on_existing_edges']:,} on "
              f"curated edges) for {rep['diseases']:,} diseases, from {rep['docs']:,} pages: {mpath}")
    elif args.no_mine:
        print("mined edges: none (--no-mine)")
    dropped = {k: v for k, v in kg.report.items() if isinstance(v, int) and ("unknown" in k or "unresolved" in k)}
    if dropped:
        print("dropped: " + ", ".join(f"{k}={v}" for k, v in dropped.items()))
    return 0


def _cmd_mine(args) -> int:
    from agents.miner import DEFINITION_ORGANISATION, report
    from clinicalrag.cli import UserError
    from knowledge.corpus import ORGANISATIONS
    from knowledge.kg import mined

    orgs = [o.strip() for o in args.organisations.split(",") if o.strip()] if args.organisations else None
    known = (*ORGANISATIONS, DEFINITION_ORGANISATION)
    unknown = sorted(set(orgs or ()) - set(known))
    if unknown:
        raise UserError(f"unknown organisation(s) {', '.join(unknown)}; known: {', '.join(known)}")
    qtypes = [q.strip() for q in args.question_types.split(",") if q.strip()]
    if not qtypes:
        raise UserError("--question-types is empty")
    if args.limit is not None and args.limit < 1:
        raise UserError("--limit must be at least 1")
    kg = _load(args, mined=False)
    res = _mine(kg, not (args.no_progress or args.json), None, organisations=orgs, question_types=qtypes,
                limit=args.limit)
    out = mined.write(args.out or mined.default_path(kg.base_version), res.edges, header=res.header(kg.base_version))
    st = res.stats
    summary = {"path": str(out), "digest": mined.digest(res.edges), "kg_version": kg.base_version,
               "version_with_edges": mined.mined_version(kg.base_version, mined.digest(res.edges)), **st}
    rep = report(kg, res.edges, sample=args.sample, seed=args.seed) if args.report else None
    if args.json:
        json.dump({"mining": summary, "report": rep} if rep is not None else {"mining": summary}, sys.stdout,
                  indent=2, default=str)
        print()
        return 0
    print(f"mined {st['edges']:,} edges ({st['diseases']:,} diseases, {st['findings']:,} findings) from "
          f"{st['documents']:,} documents ({st['documents_linked']:,} linked to a disease) in {st['seconds']:.1f}s "
          f"({st['docs_per_second']} docs/s, {st['edges'] / max(1, st['documents']):.2f} edges per document)")
    print(f"written: {out}")
    if not args.out:
        print(f"the graph now loads as version {summary['version_with_edges']}")
    if rep is None:
        return 0
    print(f"\nedges: {rep['edges']:,} ({rep['new_edges']:,} new, {rep['on_curated_edges']:,} already curated)")
    print(f"diseases gaining edges: {rep['diseases_gaining_edges']:,}, of which common: "
          f"{rep['common_diseases_gaining_edges']:,} ({rep['common_definition']})")
    print("edges per question type: " + ", ".join(f"{k} {v:,}" for k, v in rep["edges_per_question_type"].items()))
    print("edges per organisation: " + ", ".join(f"{k} {v:,}" for k, v in rep["edges_per_organisation"].items()))
    print("\ntop diseases by new edges:")
    for t in rep["top_diseases"]:
        print(f"  {t['new_edges']:>4}  {t['name']} ({t['disease']}){'  [common]' if t['common'] else ''}")
    print(f"\nrandom sample of {len(rep['sample'])} edges (seed {args.seed}) to check by hand:")
    for x in rep["sample"]:
        print(f"  - {x['disease_name']} -> {x['finding_name']} [{x['surface']}]{'' if x['new'] else ' (curated too)'}"
              f"\n      {x['doc_id']} chars {x['span'][0]}-{x['span'][1]} ({x['question_type']}): {x['sentence']}")
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
            cit = t.extra.get("citation")
            if cit:
                bits.append(f"{cit.get('organisation')} {cit.get('doc_id')} chars {cit['span'][0]}-{cit['span'][1]}: "
                            f"\"{cit.get('sentence')}\"")
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

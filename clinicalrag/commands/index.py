"""`clinicalrag index`: build the heterogeneous knowledge index (G, B, O) and show its status."""
from __future__ import annotations

import argparse
import json


def register(subparsers) -> None:
    p = subparsers.add_parser("index", help="build and inspect the knowledge index (KG + MedQuAD chunks)")
    sub = p.add_subparsers(dest="index_command", metavar="SUBCOMMAND")
    sub.required = True

    b = sub.add_parser("build", help="build the index (skipped when sources, model and settings are unchanged)")
    b.add_argument("--sources", default="G,B,O", help="comma-separated sources among G, B, O (default: G,B,O)")
    b.add_argument("--rebuild", action="store_true",
                   help="build again even if up to date (vectors still come from the embedding cache)")
    b.add_argument("--no-progress", action="store_true", help="no progress bars")
    b.add_argument("--json", action="store_true", help="print the build summary as JSON")
    b.set_defaults(func=cmd_build)

    s = sub.add_parser("status", help="counts, versions, model, build time, size on disk")
    s.add_argument("--json", action="store_true", help="print as JSON")
    s.set_defaults(func=cmd_status)


def _parse_sources(spec: str) -> tuple[str, ...]:
    from clinicalrag.cli import UserError  # noqa: PLC0415

    out = tuple(dict.fromkeys(x.strip().upper() for x in spec.split(",") if x.strip()))
    bad = [x for x in out if x not in ("G", "B", "O")]
    if bad or not out:
        raise UserError(f"--sources: unknown source(s) {', '.join(bad) or spec!r}; choose from G, B, O")
    return out


def cmd_build(args: argparse.Namespace) -> int:
    from clinicalrag.cli import UserError  # noqa: PLC0415
    from knowledge.index import KnowledgeIndex  # noqa: PLC0415

    srcs = _parse_sources(args.sources)
    ix = KnowledgeIndex()
    try:
        res = ix.build(sources=srcs, rebuild=args.rebuild, progress=not args.no_progress)
    except FileNotFoundError as exc:
        raise UserError(f"{exc} (run `clinicalrag data fetch` first)") from None
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.json:
        print(json.dumps(res, indent=2, default=str))
        return 0
    if res["skipped"]:
        print(f"index {res['version']} is up to date ({ix.root}); use --rebuild to build again")
    else:
        c = res["counts"]
        print(f"built index {res['version']} in {res['seconds']:.1f}s at {ix.root}")
        print(f"  chunks: {c['chunks']} {c['chunks_by_role']}; documents: {c['documents']}; "
              f"entity keys: {c['entities']}")
        print(f"  embedded {res['embedded']} new texts, {res['cached']} from the cache")
    return 0


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return str(n)


def cmd_status(args: argparse.Namespace) -> int:
    from knowledge.index import KnowledgeIndex  # noqa: PLC0415

    st = KnowledgeIndex().status()
    if args.json:
        print(json.dumps(st, indent=2, default=str))
        return 0
    if not st["built"]:
        print(f"index not built ({st['path']}): run `clinicalrag index build`")
        return 1
    c = st["counts"]
    print(f"index {st['version']} at {st['path']}")
    print(f"  sources:  {', '.join(st['sources'])}")
    print(f"  model:    {st['model']} (dim {st['dim']})")
    print(f"  built at: {st['built_at']} in {st['build_seconds']}s")
    print(f"  chunks:   {c['chunks']} {c['chunks_by_role']}; documents: {c['documents']}")
    print(f"  entities: {c['entities']}")
    v = st["versions"]
    for key in ("medquad", "kg"):
        if key in v:
            print(f"  {key + ':':9} {v[key]}")
    print(f"  size:     {_human(st['size_bytes'])}")
    return 0

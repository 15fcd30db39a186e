"""`clinicalrag search`: hybrid (BM25 + dense) search over the knowledge index."""
from __future__ import annotations

import argparse
import json
import shutil
import textwrap


def register(subparsers) -> None:
    p = subparsers.add_parser("search", help="search the knowledge index (chunks of G, B, O)")
    p.add_argument("text", help="the query")
    p.add_argument("--source", action="append", choices=["G", "B", "O", "g", "b", "o"], default=None,
                   help="restrict to a source (repeatable); default: all")
    p.add_argument("--k", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--mode", choices=["hybrid", "bm25", "dense"], default="hybrid")
    p.add_argument("--fusion", choices=["rrf", "alpha"], default="rrf", help="hybrid fusion (default rrf)")
    p.add_argument("--alpha", type=float, default=0.5, help="dense weight for --fusion alpha (default 0.5)")
    p.add_argument("--entities", action="store_true", help="entity-keyed search instead of chunk search")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    p.set_defaults(func=cmd_search)


def cmd_search(args: argparse.Namespace) -> int:
    from clinicalrag.cli import UserError  # noqa: PLC0415
    from knowledge.index import IndexNotBuilt, KnowledgeIndex  # noqa: PLC0415

    if not args.text.strip():
        raise UserError("empty query")
    if args.k < 1:
        raise UserError("--k must be at least 1")
    if not 0.0 <= args.alpha <= 1.0:
        raise UserError("--alpha must be between 0 and 1")
    ix = KnowledgeIndex()
    try:
        ix.open()
    except IndexNotBuilt:
        raise UserError("index not built: run `clinicalrag index build`") from None
    sources = [s.upper() for s in args.source] if args.source else None
    if sources:
        missing = [s for s in sources if s not in ix.sources]
        if missing:
            raise UserError(f"source(s) {', '.join(missing)} not in the index (built with {', '.join(ix.sources)})")
    if args.entities:
        res = ix.entity_search(args.text, k=args.k, sources=sources or ix.sources, with_knowledge=args.json)
        if args.json:
            print(json.dumps({s: [h.to_dict() for h in hits] for s, hits in res.items()}, indent=2, default=str))
            return 0
        for s, hits in res.items():
            print(f"[{s}]")
            for r, h in enumerate(hits, 1):
                ref = h.concept_id or f"{len(h.ids)} doc(s)"
                extra = f" -> {h.name} ({h.category})" if h.name and h.name != h.key else ""
                print(f"  {r:>2}. {h.score:.3f}  {h.key}{extra}  [{ref}]")
        return 0
    hits = ix.search(args.text, k=args.k, sources=sources, mode=args.mode, fusion=args.fusion, alpha=args.alpha)
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], indent=2, default=str))
        return 0
    if not hits:
        print("no results")
        return 0
    width = shutil.get_terminal_size((110, 20)).columns
    for r, h in enumerate(hits, 1):
        m = h.metadata
        title = m.get("focus") or m.get("title") or ""
        sec = m.get("section")
        label = f"{title} — {sec}" if sec else title
        span = f"[{m.get('start', 0)}:{m.get('end', len(h.text))}]"
        print(f"{r:>2}. {h.score:.4f}  {h.role}  {label}  ({m.get('organisation', '')})  {h.chunk_id} {span}")
        snippet = " ".join(h.text.split())
        print(textwrap.indent(textwrap.shorten(snippet, width=max(40, width - 8) * 2, placeholder=" ..."),
                              "      "))
    return 0

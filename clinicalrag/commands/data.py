"""`clinicalrag data`: fetch the open sources, show their status, list the catalog."""
from __future__ import annotations

import argparse
import json
import sys

from knowledge import sources


def register(subparsers) -> None:
    p = subparsers.add_parser("data", help="fetch and inspect the open data sources")
    sub = p.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    sub.required = True

    f = sub.add_parser("fetch", help="fetch sources (from a mirror folder or over HTTPS)")
    f.add_argument("--sources", default=None,
                   help="comma-separated source ids, 'all' or 'default' (default: the default sources)")
    f.add_argument("--mirror", default=None, metavar="DIR",
                   help="read <DIR>/<host>/<path> instead of downloading "
                        "(default: $CLINICALRAG_DATA_MIRROR or a detected mirror)")
    f.add_argument("--no-mirror", action="store_true", help="always download, ignore any mirror")
    f.add_argument("--force", action="store_true", help="fetch again even when a verified copy is present")
    f.add_argument("--no-progress", action="store_true", help="no progress bars")
    f.add_argument("--timeout", type=float, default=60, help="network timeout in seconds (default 60)")
    f.add_argument("--json", action="store_true", help="print results as JSON")
    f.set_defaults(func=cmd_fetch)

    s = sub.add_parser("status", help="which sources are present and verified")
    s.add_argument("--sources", default="all", help="comma-separated source ids, 'all' or 'default'")
    s.add_argument("--json", action="store_true", help="print as JSON")
    s.set_defaults(func=cmd_status)

    c = sub.add_parser("sources", help="the source catalog: id, role, license, citation")
    c.add_argument("--json", action="store_true", help="print as JSON")
    c.set_defaults(func=cmd_sources)


def _user_error(exc: Exception):
    from clinicalrag.cli import UserError  # noqa: PLC0415

    return UserError(str(exc))


def _ids(spec: str | None) -> list[str]:
    try:
        return sources.resolve_ids(spec)
    except ValueError as exc:
        raise _user_error(exc) from None


def cmd_fetch(args: argparse.Namespace) -> int:
    ids = _ids(args.sources)
    if args.no_mirror and args.mirror:
        raise _user_error(ValueError("--mirror and --no-mirror exclude each other"))
    mirror = None if args.no_mirror else (args.mirror or "auto")
    try:
        results = sources.fetch(ids, mirror=mirror, force=args.force, progress=not args.no_progress,
                                timeout=args.timeout)
    except ValueError as exc:
        raise _user_error(exc) from None
    failed = [r for r in results if not r.ok]
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1))
    else:
        width = max(len(r.id) for r in results) if results else 0
        for r in results:
            print(f"{r.id:<{width}}  {r.status:<8}  {r.message}")
        print(f"{len(results) - len(failed)}/{len(results)} sources ready"
              + (f"; {len(failed)} failed: {', '.join(r.id for r in failed)}" if failed else ""),
              file=sys.stderr)
    return 1 if failed else 0


def _fmt_size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_status(args: argparse.Namespace) -> int:
    rows = sources.status(_ids(args.sources))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max(len(r["id"]) for r in rows)
    print(f"{'id':<{width}}  {'role':<9}  {'present':<7}  {'verified':<8}  {'size':>9}  fetched")
    for r in rows:
        ver = {True: "yes", False: "NO", None: "-"}[r["verified"]]
        print(f"{r['id']:<{width}}  {r['role']:<9}  {'yes' if r['present'] else 'no':<7}  {ver:<8}  "
              f"{_fmt_size(r['size']):>9}  {r['fetched_at'] or ''}")
    return 0


def cmd_sources(args: argparse.Namespace) -> int:
    cat = list(sources.CATALOG.values())
    if args.json:
        print(json.dumps([{"id": s.id, "role": s.role, "default": s.default, "title": s.title, "url": s.url,
                           "license": s.license, "citation": s.citation, "sha256": s.sha256, "size": s.size}
                          for s in cat], indent=1))
        return 0
    width = max(len(s.id) for s in cat)
    for s in cat:
        flag = "" if s.default else " (optional)"
        print(f"{s.id:<{width}}  {s.role:<9}  {s.license}{flag}\n{'':<{width}}  {s.title}\n"
              f"{'':<{width}}  {s.citation}\n")
    return 0

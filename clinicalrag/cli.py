"""`clinicalrag` command line. Each command group lives in ``clinicalrag/commands/<name>.py`` and
exposes ``register(subparsers)``; adding a group is one module plus one line in ``COMMANDS``."""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

COMMANDS = ["demo", "data", "kg", "index", "search", "ask", "trace", "bench"]


class UserError(Exception):
    """An error caused by the user's input: printed as one clear line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clinicalrag",
        description="Clinical decision support: a cited, verified differential diagnosis from a knowledge graph, "
                    "a reference base and web sources. Decision support only; a clinician decides.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"clinicalrag.commands.{name}")
        except ModuleNotFoundError as exc:  # a group not built yet must not break the others
            if exc.name == f"clinicalrag.commands.{name}":
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

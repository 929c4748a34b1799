"""The ``wop-langgraph`` console command: ``demo``, ``serve`` and ``worker``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "serve":
        from wop_langgraph.server.cli import serve_main

        return serve_main(args[1:])
    if args and args[0] == "worker":
        from wop_langgraph.worker_cli import worker_main

        return worker_main(args[1:])
    parser = argparse.ArgumentParser(prog="wop-langgraph", description="OpenWOP interrupts for LangGraph.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run one approval end to end on an embedded SQLite file")
    demo.add_argument("--db", type=Path, default=None, help="SQLite file to keep (default: a temporary one)")
    commands.add_parser(
        "serve", help="serve registered graphs over HTTP ([MODULE:ATTR] [--definitions DIR] [--db URL] ...)"
    )
    commands.add_parser("worker", help="drive queued runs in this process (MODULE:ATTR [--db URL] ...)")
    parsed = parser.parse_args(args)
    if parsed.command == "demo":
        from wop_langgraph.demo import run_demo

        final = run_demo(parsed.db)
        return 0 if final["status"] == "completed" else 1
    return 2


if __name__ == "__main__":
    raise SystemExit(main())

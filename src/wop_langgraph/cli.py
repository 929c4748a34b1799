"""The ``wop-langgraph`` console command: ``demo``, ``serve``, ``worker``, and the proof
commands ``export``, ``verify`` and ``keygen``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["main"]

_PROOF_COMMANDS = ("export", "verify", "keygen")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "serve":
        from wop_langgraph.server.cli import serve_main

        return serve_main(args[1:])
    if args and args[0] == "worker":
        from wop_langgraph.worker_cli import worker_main

        return worker_main(args[1:])
    if args and args[0] in _PROOF_COMMANDS:
        from wop_langgraph import proof_cli

        command: Callable[[list[str]], int] = getattr(proof_cli, f"{args[0]}_main")
        return command(args[1:])
    parser = argparse.ArgumentParser(prog="wop-langgraph", description="OpenWOP interrupts for LangGraph.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run one approval end to end on an embedded SQLite file")
    demo.add_argument("--db", type=Path, default=None, help="SQLite file to keep (default: a temporary one)")
    commands.add_parser(
        "serve", help="serve registered graphs over HTTP ([MODULE:ATTR] [--definitions DIR] [--db URL] ...)"
    )
    commands.add_parser("worker", help="drive queued runs in this process (MODULE:ATTR [--db URL] ...)")
    commands.add_parser("export", help="write a run's proof bundle (RUN_ID [--db URL] [-o FILE])")
    commands.add_parser("verify", help="verify a proof bundle offline (BUNDLE [--keys FILE])")
    commands.add_parser("keygen", help="print a new receipt signing key entry (KID)")
    parsed = parser.parse_args(args)
    if parsed.command == "demo":
        from wop_langgraph.demo import run_demo

        final = run_demo(parsed.db)
        return 0 if final["status"] == "completed" else 1
    return 2


if __name__ == "__main__":
    raise SystemExit(main())

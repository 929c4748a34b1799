"""``wop-langgraph serve MODULE:ATTR``: serve registered graphs over HTTP with uvicorn.

``ATTR`` is a compiled graph (served as the workflow named after ``ATTR``) or a dict
``{workflowId: graph}``. Configuration comes from ``WOP_*`` variables (see
:class:`~wop_langgraph.server.Settings`); ``--db`` overrides ``WOP_DATABASE_URL``.
``--conversations`` and ``--credentials`` enable the host's ``conversation.*`` node calls and
``request_credential`` (``WopHost(..., conversations=True, credentials=True)``).
``--definitions DIR`` also loads every ``*.json`` OpenWOP WorkflowDefinition in ``DIR`` under its
``id`` (a definition the host cannot run is refused with its reason on stderr; the rest load).
``WOP_NOTIFY_DIRECTORY`` (and ``WOP_NOTIFY_SMTP_*``, ...) turns on email/chat notifications of
interrupts with personal links (see :mod:`wop_langgraph.notify.serving` and the README).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from wop_langgraph._extras import MISSING_EXTRA_STATUS, missing_extra
from wop_langgraph._heap import freeze_startup_heap
from wop_langgraph.targets import load_langgraph_config, load_workflows

__all__ = ["DESCRIPTION", "build_parser", "load_workflows", "serve_main"]

DESCRIPTION = """\
Serve LangGraph graphs over the OpenWOP HTTP interface (needs the 'server' extra; a
postgresql+psycopg:// database also needs the 'postgres' extra).

MODULE:ATTR names a compiled graph (served as the workflow ATTR), a {workflowId: graph} dict, or a
function without arguments returning either. Configuration comes from WOP_* environment
variables: WOP_SIGNING_KEYS (required), WOP_API_KEYS, WOP_DATABASE_URL (--db overrides it),
WOP_PUBLIC_URL, WOP_TOKEN_TTL_SECONDS, WOP_SWEEP_INTERVAL_SECONDS, and WOP_NOTIFY_* for email/chat
notifications of interrupts with personal links (see the README).

examples:
  wop-langgraph serve wop_langgraph.examples.review:workflows --db sqlite:///runs.db --port 8000
  wop-langgraph serve --config langgraph.json --db sqlite:///runs.db --port 2024
  (the LangGraph Server API is at /langgraph: WOP_LANGGRAPH_PREFIX moves it, 'off' removes it)
"""


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The ``serve`` arguments (on ``parser`` when the caller owns the top-level CLI)."""
    parser = parser or argparse.ArgumentParser(
        prog="wop-langgraph serve",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "target",
        metavar="MODULE:ATTR",
        nargs="?",
        help="a compiled graph or a {workflowId: graph} dict (optional with --definitions)",
    )
    parser.add_argument(
        "--definitions", metavar="DIR", help="load every *.json OpenWOP WorkflowDefinition in DIR"
    )
    parser.add_argument(
        "--config",
        metavar="LANGGRAPH_JSON",
        help="serve the graphs (and env) of a LangGraph project's langgraph.json, as `langgraph dev` does",
    )
    parser.add_argument("--db", dest="database_url", help="database URL (default: $WOP_DATABASE_URL)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker threads driving runs in this process (default 4, $WOP_WORKERS); 0 serves the API "
        "only, for use with separate `wop-langgraph worker` processes",
    )
    parser.add_argument(
        "--conversations", action="store_true", help="enable conversation.* node calls (off by default)"
    )
    parser.add_argument(
        "--credentials", action="store_true", help="enable request_credential (off by default)"
    )
    return parser


def serve_main(argv: Sequence[str] | None = None) -> int:
    """Run the server until interrupted; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.target is None and args.definitions is None and args.config is None:
        parser.error("give MODULE:ATTR, --config langgraph.json, --definitions DIR, or several")
    problem = missing_extra("server", "wop-langgraph serve")
    if problem:
        print(problem, file=sys.stderr)
        return MISSING_EXTRA_STATUS
    import uvicorn

    from wop_langgraph.host import WopHost
    from wop_langgraph.notify.serving import notifier_from_settings
    from wop_langgraph.server import ConfigurationError, Settings, create_app
    from wop_langgraph.store.engine import normalize_url

    # A langgraph.json's env is set first: its graphs, and WOP_* settings in it, read it.
    workflows = load_langgraph_config(args.config) if args.config else {}
    overrides: dict[str, Any] = {"database_url": args.database_url} if args.database_url else {}
    if args.workers is not None:
        overrides["workers"] = args.workers
    settings = Settings(**overrides)
    if normalize_url(settings.database_url).get_backend_name() == "postgresql":
        problem = missing_extra("postgres", "wop-langgraph serve --db postgresql")
        if problem:
            print(problem, file=sys.stderr)
            return MISSING_EXTRA_STATUS
    workflows.update(load_workflows(args.target) if args.target else {})
    try:
        settings.keyring()
        settings.api_keyring()
        notifier_from_settings(settings)  # WOP_NOTIFY_*: refuse a bad directory before serving
    except ConfigurationError as exc:
        print(f"wop-langgraph serve: {exc}", file=sys.stderr)
        return 2
    host = WopHost.from_url(
        settings.database_url,
        conversations=args.conversations,
        credentials=args.credentials,
        lease_seconds=settings.lease_seconds,
    )
    for workflow_id, graph in workflows.items():
        host.register(workflow_id, graph)
    if args.definitions:
        try:
            report = host.load_definitions(args.definitions)
        except FileNotFoundError as exc:
            print(f"wop-langgraph serve: {exc}", file=sys.stderr)
            host.saver.close()
            return 2
        for name, reason in sorted(report.refused.items()):
            print(f"wop-langgraph serve: refused {name}: {reason}", file=sys.stderr)
    app = create_app(host, settings)
    freeze_startup_heap()
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    finally:
        host.saver.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(serve_main())

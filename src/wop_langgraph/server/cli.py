"""``wop-langgraph serve MODULE:ATTR``: serve registered graphs over HTTP with uvicorn.

``ATTR`` is a compiled graph (served as the workflow named after ``ATTR``) or a dict
``{workflowId: graph}``. Configuration comes from ``WOP_*`` variables (see
:class:`~wop_langgraph.server.Settings`); ``--db`` overrides ``WOP_DATABASE_URL``.
``--conversations`` and ``--credentials`` enable the host's ``conversation.*`` node calls and
``request_credential`` (``WopHost(..., conversations=True, credentials=True)``).
``--definitions DIR`` also loads every ``*.json`` OpenWOP WorkflowDefinition in ``DIR`` under its
``id`` (a definition the host cannot run is refused with its reason on stderr; the rest load).
``WOP_NOTIFY_DIRECTORY`` (and ``WOP_NOTIFY_SMTP_*``, ...) turns on email/chat notifications of
interrupts with personal links (see :mod:`wop_langgraph.server.notifying` and docs/server.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from wop_langgraph._extras import MISSING_EXTRA_STATUS, missing_extra
from wop_langgraph._heap import freeze_startup_heap
from wop_langgraph.langgraph_config import load_langgraph_config
from wop_langgraph.startup import (
    STARTUP_ERROR_STATUS,
    StartupError,
    check_database_url,
    load_workflows,
    open_host,
    redacted,
)

if TYPE_CHECKING:
    from wop_langgraph.server.settings import Settings

__all__ = ["DESCRIPTION", "banner", "build_parser", "load_workflows", "serve_main"]

COMMAND: Final = "wop-langgraph serve"

DESCRIPTION = """\
Serve LangGraph graphs over the OpenWOP HTTP interface (needs the 'server' extra; a
postgresql+psycopg:// database also needs the 'postgres' extra).

MODULE:ATTR names a compiled graph (served as the workflow ATTR), a {workflowId: graph} dict, or a
function without arguments returning either. Configuration comes from WOP_* environment
variables: WOP_SIGNING_KEYS (required), WOP_API_KEYS, WOP_DATABASE_URL (--db overrides it),
WOP_PUBLIC_URL, WOP_TOKEN_TTL_SECONDS, WOP_SWEEP_INTERVAL_SECONDS, and WOP_NOTIFY_* for email/chat
notifications of interrupts with personal links (see docs/server.md).

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
    """Run the server until interrupted; returns the exit status.

    A configuration error (a missing extra, a bad database URL or an unreachable database, a
    target that does not import or is not a compiled graph, bad ``WOP_*`` settings) prints one
    line naming the fix and returns 2.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.target is None and args.definitions is None and args.config is None:
        parser.error("give MODULE:ATTR, --config langgraph.json, --definitions DIR, or several")
    problem = missing_extra("server", COMMAND)
    if problem:
        print(problem, file=sys.stderr)
        return MISSING_EXTRA_STATUS
    try:
        return _serve(args)
    except StartupError as exc:
        print(exc, file=sys.stderr)
        return STARTUP_ERROR_STATUS


def _serve(args: argparse.Namespace) -> int:
    import uvicorn
    from pydantic import ValidationError

    from wop_langgraph.definitions import load_definitions
    from wop_langgraph.log_redaction import install_log_redaction
    from wop_langgraph.server import ConfigurationError, Settings, create_app
    from wop_langgraph.server.notifying import notifier_from_settings

    install_log_redaction()  # review links carry live tokens: none may reach a log line
    # A langgraph.json's env is set first: its graphs, and WOP_* settings in it, read it.
    workflows = load_langgraph_config(args.config, COMMAND) if args.config else {}
    overrides: dict[str, Any] = {"database_url": args.database_url} if args.database_url else {}
    if args.workers is not None:
        overrides["workers"] = args.workers
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "WOP_" + "_".join(str(part) for part in first["loc"]).upper()
        raise StartupError(f"{COMMAND}: {name}: {first['msg']}") from None
    check_database_url(settings.database_url, COMMAND)
    workflows.update(load_workflows(args.target, COMMAND) if args.target else {})
    try:
        settings.keyring()
        settings.api_keyring()
        notifier = notifier_from_settings(settings)  # WOP_NOTIFY_*: refuse a bad directory before serving
    except ConfigurationError as exc:
        raise StartupError(f"{COMMAND}: {exc}") from None
    host = open_host(
        settings.database_url,
        COMMAND,
        conversations=args.conversations,
        credentials=args.credentials,
        lease_seconds=settings.lease_seconds,
    )
    try:
        for workflow_id, graph in workflows.items():
            host.register(workflow_id, graph)
        if args.definitions:
            try:
                report = load_definitions(host, args.definitions)
            except FileNotFoundError as exc:
                raise StartupError(f"{COMMAND}: {exc}") from None
            for name, reason in sorted(report.refused.items()):
                print(f"{COMMAND}: refused {name}: {reason}", file=sys.stderr)
        app = create_app(host, settings)
        print(banner(args, settings, host.registry.workflow_ids(), notifier is not None), file=sys.stderr)
        sys.stderr.flush()
        freeze_startup_heap()
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    finally:
        host.saver.close()
    return 0


def banner(args: argparse.Namespace, settings: Settings, workflow_ids: list[str], notifying: bool) -> str:
    """What this server serves: its URL, database (password hidden), workflows, workers, surfaces."""
    url = f"http://{args.host}:{args.port}"
    workers = (
        f"{settings.workers} in this process"
        if settings.workers
        else "none in this process (run `wop-langgraph worker` against the same database)"
    )
    links = f"on ({settings.public_url})" if settings.public_url else "off (set WOP_PUBLIC_URL to mint links)"
    api_keys = len(settings.api_keyring().principals)
    keys = f"{api_keys}" if api_keys else "none (every API call answers 401: set WOP_API_KEYS)"

    def on(flag: bool) -> str:
        return "on" if flag else "off"

    return "\n".join(
        [
            f"{COMMAND}: {url} (API docs: {url}/docs)",
            f"  database:      {redacted(settings.database_url)}",
            f"  workflows:     {', '.join(sorted(workflow_ids)) or 'none'}",
            f"  workers:       {workers}",
            f"  API keys:      {keys}",
            f"  links/pages:   {links}",
            f"  conversations: {on(args.conversations)}; credentials: {on(args.credentials)}; "
            f"notifications: {on(notifying)}",
        ]
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(serve_main())

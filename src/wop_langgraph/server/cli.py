"""``wop-langgraph serve MODULE:ATTR``: serve registered graphs over HTTP with uvicorn.

``ATTR`` is a compiled graph (served as the workflow named after ``ATTR``) or a dict
``{workflowId: graph}``. Configuration comes from ``WOP_*`` variables (see
:class:`~wop_langgraph.server.Settings`); ``--db`` overrides ``WOP_DATABASE_URL``.
``--conversations`` and ``--credentials`` enable the host's ``conversation.*`` node calls and
``request_credential`` (``WopHost(..., conversations=True, credentials=True)``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.pregel import Pregel

from wop_langgraph._extras import MISSING_EXTRA_STATUS, missing_extra

__all__ = ["DESCRIPTION", "build_parser", "load_workflows", "serve_main"]

DESCRIPTION = """\
Serve LangGraph graphs over the OpenWOP HTTP interface (needs the 'server' extra; a
postgresql+psycopg:// database also needs the 'postgres' extra).

MODULE:ATTR names a compiled graph (served as the workflow ATTR), a {workflowId: graph} dict, or a
function without arguments returning either. Configuration comes from WOP_* environment
variables: WOP_SIGNING_KEYS (required), WOP_API_KEYS, WOP_DATABASE_URL (--db overrides it),
WOP_PUBLIC_URL, WOP_TOKEN_TTL_SECONDS, WOP_SWEEP_INTERVAL_SECONDS.

example:
  wop-langgraph serve wop_langgraph.examples.review:workflows --db sqlite:///runs.db --port 8000
"""


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The ``serve`` arguments (on ``parser`` when the caller owns the top-level CLI)."""
    parser = parser or argparse.ArgumentParser(
        prog="wop-langgraph serve",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "target", metavar="MODULE:ATTR", help="a compiled graph or a {workflowId: graph} dict"
    )
    parser.add_argument("--db", dest="database_url", help="database URL (default: $WOP_DATABASE_URL)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    parser.add_argument(
        "--conversations", action="store_true", help="enable conversation.* node calls (off by default)"
    )
    parser.add_argument(
        "--credentials", action="store_true", help="enable request_credential (off by default)"
    )
    return parser


def load_workflows(target: str) -> dict[str, Pregel[Any, Any, Any, Any]]:
    """Import ``MODULE:ATTR`` and return ``{workflowId: graph}``.

    ``ATTR`` is a compiled graph (registered under the name ``ATTR``), a ``{workflowId: graph}``
    dict, or a function without arguments returning either.

    Raises:
        SystemExit: a malformed target, a missing module or attribute, or something not a graph.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"serve: expected MODULE:ATTR, got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SystemExit(f"serve: cannot import {module_name!r}: {exc}") from None
    value = getattr(module, attr, None)
    if value is None:
        raise SystemExit(f"serve: {module_name!r} has no attribute {attr!r}")
    if callable(value) and not isinstance(value, Pregel):
        value = value()  # a factory: build the graphs now, not when the module is imported
    if isinstance(value, Pregel):
        return {attr: value}
    if isinstance(value, Mapping) and value and all(isinstance(g, Pregel) for g in value.values()):
        return {str(k): g for k, g in value.items()}
    raise SystemExit(f"serve: {target!r} is neither a compiled graph nor a {{workflowId: graph}} dict")


def serve_main(argv: Sequence[str] | None = None) -> int:
    """Run the server until interrupted; returns the exit status."""
    args = build_parser().parse_args(argv)
    problem = missing_extra("server", "wop-langgraph serve")
    if problem:
        print(problem, file=sys.stderr)
        return MISSING_EXTRA_STATUS
    import uvicorn

    from wop_langgraph.host import WopHost
    from wop_langgraph.server import ConfigurationError, Settings, create_app
    from wop_langgraph.store.engine import normalize_url

    overrides = {"database_url": args.database_url} if args.database_url else {}
    settings = Settings(**overrides)
    if normalize_url(settings.database_url).get_backend_name() == "postgresql":
        problem = missing_extra("postgres", "wop-langgraph serve --db postgresql")
        if problem:
            print(problem, file=sys.stderr)
            return MISSING_EXTRA_STATUS
    workflows = load_workflows(args.target)
    try:
        settings.keyring()
        settings.api_keyring()
    except ConfigurationError as exc:
        print(f"wop-langgraph serve: {exc}", file=sys.stderr)
        return 2
    host = WopHost.from_url(
        settings.database_url, conversations=args.conversations, credentials=args.credentials
    )
    for workflow_id, graph in workflows.items():
        host.register(workflow_id, graph)
    app = create_app(host, settings)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    finally:
        host.saver.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(serve_main())

"""Start-up checks of the console commands: every configuration error is one line naming the fix.

``wop-langgraph serve`` and ``wop-langgraph worker`` import their graphs, check the database
URL and open the store through these functions. What a person can fix before starting again
(a misspelled URL scheme, a folder that does not exist, a database that does not answer, a graph
that was not compiled, a missing extra) raises :class:`StartupError`, whose message is the one
line the command prints before exiting with :data:`STARTUP_ERROR_STATUS`, without a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from langgraph.pregel import Pregel

from wop_langgraph._extras import EXTRAS, missing_extra
from wop_langgraph.host.registry import require_compiled
from wop_langgraph.protocol.errors import StoreError
from wop_langgraph.store.engine import URL, parse_url

if TYPE_CHECKING:
    from wop_langgraph.host import WopHost

__all__ = [
    "STARTUP_ERROR_STATUS",
    "StartupError",
    "check_database_url",
    "import_target",
    "load_workflows",
    "open_host",
    "redacted",
]

STARTUP_ERROR_STATUS: Final = 2
"""Exit status of a command stopped by a configuration error (as for a usage error)."""

_SQLITE_DRIVERS: Final = ("sqlite", "sqlite+pysqlite")
_POSTGRES_DRIVERS: Final = ("postgresql", "postgres", "postgresql+psycopg")
_URL_EXAMPLES: Final = "sqlite:///runs.db or postgresql://user:password@host:5432/database"


class StartupError(Exception):
    """A configuration error found at start-up; ``str()`` is the one line to print."""


def redacted(url: str | URL) -> str:
    """``url`` with its password shown as ``***`` (for banners and error lines)."""
    parsed = parse_url(url) if isinstance(url, str) else url
    if parsed is None:
        return "<not a URL>"
    return parsed.render_as_string(hide_password=True)


def check_database_url(url: str, command: str) -> URL:
    """The parsed ``url`` if the store can use it.

    Raises:
        StartupError: not a URL, a scheme other than SQLite or PostgreSQL, a SQLite file whose
            folder does not exist, or PostgreSQL without the ``postgres`` extra.
    """
    parsed = parse_url(url)
    if parsed is None:
        raise StartupError(f"{command}: {url!r} is not a database URL; give one such as {_URL_EXAMPLES}")
    if parsed.drivername in _POSTGRES_DRIVERS:
        problem = missing_extra("postgres", f"{command} --db postgresql")
        if problem:
            raise StartupError(problem)
        return parsed
    if parsed.drivername not in _SQLITE_DRIVERS:
        raise StartupError(
            f"{command}: the database URL scheme {parsed.drivername!r} is not supported; use {_URL_EXAMPLES}"
        )
    database = parsed.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        folder = Path(database).expanduser().resolve().parent
        if not folder.is_dir():
            raise StartupError(
                f"{command}: the folder {str(folder)!r} of the SQLite file does not exist; "
                f"create it (mkdir -p {folder}) or give another path in the URL"
            )
    return parsed


def open_host(url: str, command: str, **options: Any) -> WopHost:
    """A host over ``url`` (checked first with :func:`check_database_url`), schema set up.

    Raises:
        StartupError: the URL is refused, or the database cannot be opened or set up.
    """
    from wop_langgraph.host import WopHost

    check_database_url(url, command)
    try:
        return WopHost.from_url(url, **options)
    except StoreError as exc:
        reason = str(exc).removeprefix("setup failed in the database: ")
        raise StartupError(
            f"{command}: cannot open the database {redacted(url)} ({reason}); check that the server is "
            "running and that the URL, user and password are right"
        ) from None


def import_target(target: str, command: str) -> Any:
    """The object ``MODULE:ATTR`` names, imported as uvicorn does: the working directory first.

    Raises:
        StartupError: a malformed target, a module that cannot be found, a module that imports
            something not installed (naming the extra when one provides it), or a missing attribute.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise StartupError(f"{command}: expected MODULE:ATTR (e.g. my_app:workflows), got {target!r}")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)  # `serve my_app:workflows` from the folder holding my_app.py
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise StartupError(_not_found(exc, module_name, command, here)) from None
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise StartupError(
                f"{command}: module {module_name!r} has no attribute {attr!r}; check MODULE:ATTR"
            )
        value = getattr(value, part)
    return value


def _not_found(exc: ModuleNotFoundError, module_name: str, command: str, here: str) -> str:
    missing = exc.name or module_name
    if module_name == missing or module_name.startswith(f"{missing}."):
        return (
            f"{command}: no module named {missing!r} in {here} or on PYTHONPATH; run the command from "
            "the folder that holds it, or add that folder to PYTHONPATH"
        )
    top = missing.partition(".")[0]
    for extra, modules in EXTRAS.items():
        if top in modules:
            return (
                f"{command}: {module_name!r} needs the '{extra}' extra ({top} is not installed); "
                f'install it with: pip install "wop-langgraph[{extra}]"'
            )
    return (
        f"{command}: {module_name!r} imports {missing!r}, which is not installed; "
        f"install it (pip install {top})"
    )


def load_workflows(target: str, command: str = "serve") -> dict[str, Pregel[Any, Any, Any, Any]]:
    """Import ``MODULE:ATTR`` and return ``{workflowId: graph}``.

    ``ATTR`` is a compiled graph (registered under the name ``ATTR``), a ``{workflowId: graph}``
    dict, or a function without arguments returning either.

    Raises:
        StartupError: see :func:`import_target`; also an uncompiled ``StateGraph`` (call
            ``.compile()``) or anything that is not a graph.
    """
    value = import_target(target, command)
    name = target.partition(":")[2]
    if callable(value) and not isinstance(value, Pregel) and not hasattr(value, "compile"):
        value = value()  # a factory: build the graphs now, not when the module is imported
    try:
        if isinstance(value, Mapping) and value:
            return {str(k): require_compiled(g, f"{target}[{k!r}]") for k, g in value.items()}
        return {name.rpartition(".")[2]: require_compiled(value, target)}
    except TypeError as exc:
        raise StartupError(f"{command}: {exc}") from None

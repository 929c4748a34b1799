"""Benchmark only: the event log's hash chain turned off and on again, in one process.

``chain_off()`` replaces what the chain costs an append with constants: the event digest
(canonical text and SHA-256), the chain step (SQLite in Python, PostgreSQL in the append's
statement: its ``sha256`` expressions become the genesis value, its statements are built and
compiled anew, once) and SQLite's new head in the counter bump and its check of the guessed
one (the guess itself, a dictionary look-up, is still made and bound, unused). The
payload is then written as ``json.dumps`` writes it, as the JSON column would without the
chain. ``chain_on()`` puts everything back (each side's statements stay compiled). Nothing
here is a setting of the library: it patches private names of ``wop_langgraph.store.events``
and ``._event_sql``, so a rename there breaks this module (and ``tests/test_benchmarks.py``)
loudly, never silently.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from sqlalchemy import String, literal, true
from sqlalchemy.dialects import postgresql

from wop_langgraph.proof.chain import GENESIS
from wop_langgraph.store import _event_sql, events

_ZERO = bytes(32)
#: The statement builders, cached per side: each side's statements are built (and compiled by
#: the statement engine) once, whichever side runs.
_BUILDERS = ("reserve_statement", "append_statement", "gated_append_statement")


def _no_digest(run_json: str, event_id: str, type: str, payload: Any, *_: Any) -> tuple[str, bytes]:
    return json.dumps(payload), _ZERO


def _no_chain(previous: str | None, digests: Any) -> list[str]:
    return [GENESIS] * len(digests)


def _constant_chain(previous: Any, count: int) -> list[Any]:
    return [literal(GENESIS, String)] * count


def _constant_chained(previous: Any, count: int) -> Any:
    return postgresql.array([literal(GENESIS, String)] * count)


def _unchained(*, guessed: bool) -> tuple[dict[str, Any], Any]:
    return {}, true()


_OFF: dict[tuple[Any, str], Any] = {
    (events, "appended_digest"): _no_digest,
    (events, "chain_raw"): _no_chain,
    (_event_sql, "_pg_chain"): _constant_chain,
    (_event_sql, "_pg_chained"): _constant_chained,
    (_event_sql, "sqlite_chain_condition"): _unchained,
}
for _name in _BUILDERS:  # (events calls them by the names it imported, _event_sql by its own)
    _OFF[(_event_sql, _name)] = _OFF[(events, _name)] = functools.cache(
        getattr(_event_sql, _name).__wrapped__
    )
_ON = {(module, name): getattr(module, name) for module, name in _OFF}


def chain_off() -> None:
    """Appends from now on compute no digest and no chain (their chain values are constants)."""
    for (module, name), value in _OFF.items():
        setattr(module, name, value)


def chain_on() -> None:
    """Appends compute the chain again, as the library does."""
    for (module, name), value in _ON.items():
        setattr(module, name, value)

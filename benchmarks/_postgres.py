"""Scratch databases for the benchmarks on the server named by a PostgreSQL URL.

Only the URL's server part must be right: ``CREATE``/``DROP DATABASE`` go through the database it
names when that exists, else through the server's default ``postgres`` database.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool


def admin_url(server_url: str) -> URL:
    """A connectable psycopg URL on the server: the named database, else ``postgres``."""
    server = make_url(server_url).set(drivername="postgresql+psycopg")
    for database in dict.fromkeys([server.database, "postgres", "template1"]):
        if database is None:
            continue
        engine = create_engine(server.set(database=database), poolclass=NullPool)
        try:
            with engine.connect():
                return server.set(database=database)
        except OperationalError:
            continue
        finally:
            engine.dispose()
    raise SystemExit(f"cannot reach the PostgreSQL server at {server.render_as_string()}")


@contextmanager
def scratch_database(server_url: str) -> Iterator[URL]:
    """A new, empty database on the server (psycopg URL), dropped on exit."""
    admin_target = admin_url(server_url)
    name = f"wop_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_target, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield admin_target.set(database=name)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

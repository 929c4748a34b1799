"""Fixtures shared by every test: one database per test, on SQLite and (when configured) PostgreSQL.

PostgreSQL tests read the server's URL from ``WOP_TEST_POSTGRES_URL`` and skip with a clear
reason when it is unset, so the suite passes on a laptop without a server. The database the URL
names need not exist: the fixtures create (and drop) uniquely named databases of their own,
issuing ``CREATE DATABASE`` through the named database or the server's default ``postgres``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

POSTGRES_ENV = "WOP_TEST_POSTGRES_URL"
BACKENDS = ["sqlite", "postgres"]


def postgres_server_url() -> str:
    """The URL of the test PostgreSQL server, or skip the calling test.

    Only its server part has to be right: the database it names may not exist (see
    :func:`postgres_admin_url`).
    """
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV} (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    return url


# Where CREATE/DROP DATABASE is sent when the URL's own database cannot be reached: every server
# has `postgres` (the default maintenance database) unless someone dropped it; `template1` always.
_MAINTENANCE_DATABASES = ("postgres", "template1")


@cache
def _admin_url(server_url: str) -> URL:
    server = make_url(server_url).set(drivername="postgresql+psycopg")
    candidates = [server.database, *_MAINTENANCE_DATABASES] if server.database else _MAINTENANCE_DATABASES
    failures: list[str] = []
    for database in dict.fromkeys(candidates):
        candidate = server.set(database=database)
        engine = create_engine(candidate, poolclass=NullPool)
        try:
            with engine.connect():
                return candidate
        except OperationalError as exc:
            failures.append(f"{database}: {str(exc.orig).strip().splitlines()[-1]}")
        finally:
            engine.dispose()
    raise RuntimeError(f"cannot reach the PostgreSQL server of {POSTGRES_ENV}: " + "; ".join(failures))


def postgres_admin_url() -> URL:
    """A connectable URL on the test server for ``CREATE``/``DROP DATABASE``.

    The database named in ``WOP_TEST_POSTGRES_URL`` when it exists, else the server's default
    ``postgres`` database (``template1`` as a last resort), so any database name works.
    """
    return _admin_url(postgres_server_url())


def create_postgres_database() -> str:
    """Create an empty, uniquely named database on the test server and return its psycopg URL."""
    admin_url = postgres_admin_url()
    name = f"wop_test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    return admin_url.set(database=name).render_as_string(hide_password=False)


def drop_postgres_database(url: str) -> None:
    """Drop a database made by :func:`create_postgres_database`, closing its sessions."""
    admin = create_engine(postgres_admin_url(), isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A URL of a new SQLite file in the test's temporary folder."""
    return f"sqlite:///{tmp_path / 'wop.db'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL of a new, empty PostgreSQL database, dropped after the test."""
    url = create_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(url)


@pytest.fixture(scope="session")
def _session_postgres_database() -> Iterator[str]:
    """One PostgreSQL database holding the per-test schemas, dropped at the end of the session."""
    url = create_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(url)


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """One empty database per test, on each backend in turn.

    SQLite gets a new file. PostgreSQL gets a fresh, empty *schema* in one database made for the
    session (``CREATE SCHEMA`` takes ~0.05 s where ``CREATE DATABASE`` takes ~1 s), selected
    through the connection's ``search_path`` (``?options=-csearch_path=...``), so every engine the
    test makes, child processes included, sees only that schema. Tests that need a database of
    their own (killing its connections, say) use ``postgres_url``.
    """
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'wop.db'}"
        return
    base = request.getfixturevalue("_session_postgres_database")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        admin.dispose()

"""Fixtures shared by every test: one database per test, on SQLite and (when configured) PostgreSQL.

PostgreSQL tests read the server's URL from ``WOP_TEST_POSTGRES_URL`` and skip with a clear
reason when it is unset, so the suite passes on a laptop without a server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

POSTGRES_ENV = "WOP_TEST_POSTGRES_URL"
BACKENDS = ["sqlite", "postgres"]


def postgres_server_url() -> str:
    """The admin URL of the test PostgreSQL server, or skip the calling test."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV} (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    return url


def create_postgres_database() -> str:
    """Create an empty database on the test server and return its psycopg URL."""
    server = make_url(postgres_server_url()).set(drivername="postgresql+psycopg")
    name = f"wop_test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT", poolclass=None)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    return server.set(database=name).render_as_string(hide_password=False)


def drop_postgres_database(url: str) -> None:
    """Drop a database made by :func:`create_postgres_database`, closing its sessions."""
    target = make_url(url)
    admin = create_engine(
        target.set(database=make_url(postgres_server_url()).database), isolation_level="AUTOCOMMIT"
    )
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{target.database}" WITH (FORCE)'))
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

"""Host fixtures: hosts over the test's database (disposed afterwards) and per-test side-effect counts.

After every test, every event of every run in the database is validated against the official
schemas and the run invariants of :func:`tests.host._support.check_run_invariants` are checked.

``db_url`` is overridden here for speed: on PostgreSQL each test gets a fresh, empty *schema*
(``CREATE SCHEMA`` takes ~0.05 s where ``CREATE DATABASE`` takes ~1 s) in one database created for
the session, selected through the connection's ``search_path`` (``?options=-csearch_path=...``),
so every engine the test makes, child processes included, sees only that schema. SQLite still
gets a new file per test. The parameter ids stay ``sqlite`` and ``postgres``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.conftest import BACKENDS, create_postgres_database, drop_postgres_database
from tests.host._graphs import reset_counts
from tests.host._support import HostFactory, all_run_ids, check_run_invariants
from wop_langgraph.host import WopHost


@pytest.fixture(scope="session")
def _host_tests_database() -> Iterator[str]:
    """One PostgreSQL database for the host tests' schemas, dropped at the end of the session."""
    url = create_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(url)


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """One empty database per test on each backend (a fresh schema on PostgreSQL, see above)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'wop.db'}"
        return
    base = request.getfixturevalue("_host_tests_database")
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


@pytest.fixture(autouse=True)
def _fresh_counts() -> Iterator[None]:
    reset_counts()
    yield
    reset_counts()


@pytest.fixture
def schema_waivers() -> list[str]:
    """Regular expressions of official-schema errors the end-of-test check sets aside.

    Empty unless a test documents a known, reported conflict (see test_topologies.py).
    """
    return []


@pytest.fixture
def make_host(db_url: str, schema_waivers: list[str]) -> Iterator[HostFactory]:
    """Build hosts over the test's database (``WopHost.from_url(db_url, **options)``)."""
    made: list[WopHost] = []

    def make(**options: Any) -> WopHost:
        host = WopHost.from_url(db_url, **options)
        made.append(host)
        return host

    yield make
    try:
        if made:
            for run_id in all_run_ids(made[0]):
                check_run_invariants(made[0], run_id, waive=schema_waivers)
    finally:
        for host in made:
            host.saver.close()


@pytest.fixture
def host(make_host: HostFactory) -> WopHost:
    """A default host (no conversations, no credentials, principal refs only)."""
    return make_host()

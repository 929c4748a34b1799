"""The PostgreSQL fixtures make their own databases: the URL's database need not exist.

``WOP_TEST_POSTGRES_URL`` only has to reach a server. The fixtures issue ``CREATE DATABASE``
through the database it names when that exists, else through the server's default ``postgres``
database, and drop what they made.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tests import conftest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.postgres


def _databases() -> set[str]:
    engine = create_engine(conftest.postgres_admin_url(), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return set(conn.execute(text("SELECT datname FROM pg_database")).scalars())
    finally:
        engine.dispose()


def _missing_database_url() -> str:
    server = make_url(conftest.postgres_server_url())
    return server.set(database=f"wop_nonexistent_{uuid.uuid4().hex[:8]}").render_as_string(
        hide_password=False
    )


def test_a_url_naming_a_missing_database_still_creates_and_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = _missing_database_url()
    monkeypatch.setenv(conftest.POSTGRES_ENV, missing)
    assert conftest.postgres_admin_url().database in {make_url(missing).database, "postgres", "template1"}
    before = _databases()
    assert make_url(missing).database not in before
    url = conftest.create_postgres_database()
    name = make_url(url).database
    assert name not in before and name in _databases()
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT current_database()")).scalar() == name
    finally:
        engine.dispose()
    conftest.drop_postgres_database(url)
    after = _databases()
    assert name not in after
    assert make_url(missing).database not in after, "the named database is never created"


def test_fixture_databases_are_empty_and_usable(db_url: str, postgres_url: str) -> None:
    for url in (db_url, postgres_url):
        engine = create_engine(url, poolclass=NullPool)
        try:
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE probe (x int)"))
                conn.execute(text("INSERT INTO probe VALUES (1)"))
                assert conn.execute(text("SELECT count(*) FROM probe")).scalar() == 1
        finally:
            engine.dispose()


def test_pytest_runs_postgres_tests_with_a_url_naming_a_missing_database() -> None:
    env = {**os.environ, conftest.POSTGRES_ENV: _missing_database_url()}
    env.pop("PYTEST_ADDOPTS", None)  # it could select this very test again, recursively
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_postgres_fixtures.py::test_fixture_databases_are_empty_and_usable",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 passed" in proc.stdout  # sqlite and postgres, neither skipped

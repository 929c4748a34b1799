"""Host fixtures: hosts over the test's database (disposed afterwards) and per-test side-effect counts.

After every test, every event of every run in the database is validated against the official
schemas and the run invariants of :func:`tests.host._support.check_run_invariants` are checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.host._graphs import reset_counts
from tests.host._support import HostFactory, all_run_ids, check_run_invariants
from wop_langgraph.host import WopHost


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
            host.close()
            host.saver.close()


@pytest.fixture
def host(make_host: HostFactory) -> WopHost:
    """A default host (no conversations, no credentials, principal refs only)."""
    return make_host()

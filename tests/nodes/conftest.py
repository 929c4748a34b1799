"""Node API fixtures: the host fixtures of tests/host, and plain LangGraph checkpointers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.host.conftest import _fresh_counts, make_host, schema_waivers
from wop_langgraph.store.saver import AsyncSQLModelSaver, SQLModelSaver

__all__ = ["_fresh_counts", "make_host", "schema_waivers"]


@pytest.fixture
def sqlmodel_saver(tmp_path: Path) -> Iterator[SQLModelSaver]:
    """Our checkpointer on a SQLite file of its own, used as plain LangGraph uses any saver."""
    saver = SQLModelSaver.from_url(f"sqlite:///{tmp_path / 'plain.db'}")
    saver.setup()
    yield saver
    saver.close()


@pytest.fixture
def async_sqlmodel_saver(tmp_path: Path) -> Iterator[AsyncSQLModelSaver]:
    """The asyncio twin, on a SQLite file of its own."""
    saver = AsyncSQLModelSaver.from_url(f"sqlite:///{tmp_path / 'plain-async.db'}")
    saver.setup()
    yield saver
    saver.close()

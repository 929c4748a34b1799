"""Saver fixtures: savers on each backend, fresh per test or shared by a test module.

Tests that only touch threads they create (uuid thread ids) share one database per module
and backend, which keeps the PostgreSQL runs fast; tests that look at a whole database
(``list(None)``, schema checks) take the fresh ``db_url`` of the root conftest instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointMetadata, empty_checkpoint
from sqlalchemy import Engine
from tests.conftest import create_postgres_database, drop_postgres_database

from wop_langgraph.store import AsyncSQLModelSaver, SQLModelSaver
from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.migrations import upgrade

BACKEND_PARAMS = [pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=BACKEND_PARAMS)
def module_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One database per test module and backend."""
    if request.param == "sqlite":
        folder: Path = tmp_path_factory.mktemp("store")
        yield f"sqlite:///{folder / 'shared.db'}"
        return
    url = create_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(url)


@pytest.fixture(scope="module")
def shared_saver(module_db_url: str) -> Iterator[SQLModelSaver]:
    """A set-up saver on the module's database."""
    saver = SQLModelSaver.from_url(module_db_url)
    saver.setup()
    yield saver
    saver.close()


@pytest.fixture(scope="module")
def shared_async_saver(module_db_url: str, shared_saver: SQLModelSaver) -> Iterator[AsyncSQLModelSaver]:
    """An async saver on the module's database (schema set up by ``shared_saver``)."""
    saver = AsyncSQLModelSaver.from_url(module_db_url)
    yield saver
    saver.close()


@pytest.fixture
def saver(db_url: str) -> Iterator[SQLModelSaver]:
    """A set-up saver on a fresh, empty database."""
    saver = SQLModelSaver.from_url(db_url)
    saver.setup()
    yield saver
    saver.close()


def new_thread() -> str:
    """A thread id no other test uses."""
    return f"t-{uuid.uuid4()}"


def make_checkpoint(values: dict[str, Any] | None = None) -> Checkpoint:
    """A well-formed checkpoint with a fresh, monotonic uuid6 id."""
    checkpoint = empty_checkpoint()
    if values:
        checkpoint["channel_values"] = dict(values)
        checkpoint["channel_versions"] = {name: f"{1:032}.0" for name in values}
    return checkpoint


def config_of(thread_id: str, checkpoint_ns: str = "", checkpoint_id: str | None = None) -> RunnableConfig:
    """The config addressing a thread's namespace, or one checkpoint of it."""
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def put_chain(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    count: int,
    *,
    checkpoint_ns: str = "",
    metadata: Callable[[int], dict[str, Any]] | None = None,
) -> list[RunnableConfig]:
    """Put ``count`` checkpoints, each the child of the previous; returns their configs."""
    stored: list[RunnableConfig] = []
    parent = config_of(thread_id, checkpoint_ns)
    for step in range(count):
        extra = metadata(step) if metadata else {}
        meta: CheckpointMetadata = {"source": "loop", "step": step, "parents": {}, **extra}  # type: ignore[typeddict-item]
        parent = saver.put(parent, make_checkpoint({"step": step}), meta, {})
        stored.append(parent)
    return stored


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine over the test's fresh database, schema migrated, disposed afterwards."""
    eng = make_engine(db_url, pool_size=10, max_overflow=0)
    upgrade(eng)
    try:
        yield eng
    finally:
        eng.dispose()

"""Wake-ups for event readers: after the commit is visible, never lost between a read and a wait."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, event

from wop_langgraph.store.appended import signals_for
from wop_langgraph.store.engine import READ_ONLY
from wop_langgraph.store.events import NewEvent, append, read_events
from wop_langgraph.store.saver import SQLModelSaver

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
RUN = "acme/run-0123456789abcdef"
OTHER_RUN = "acme/run-fedcba9876543210"


def log(message: str) -> NewEvent:
    return NewEvent("log.appended", {"level": "info", "message": message})


def append_message(engine: Engine, run_id: str, message: str) -> None:
    with engine.begin() as conn:
        append(conn, run_id, [log(message)], now=NOW)


def messages(engine: Engine, run_id: str) -> list[str]:
    with engine.connect().execution_options(**{READ_ONLY: True}) as conn:  # a snapshot, never waits
        return [e.payload["message"] for e in read_events(conn, run_id)]


async def test_a_wake_up_comes_once_the_commit_is_visible(engine: Engine) -> None:
    signals = signals_for(engine)

    def slow_commit(conn: Any) -> None:
        time.sleep(0.3)  # the database commits only after this hook returns

    event.listen(engine, "commit", slow_commit)
    try:
        with signals.watch(RUN) as appended:
            appended.arm()
            assert messages(engine, RUN) == []
            writer = threading.Thread(target=append_message, args=(engine, RUN, "first"))
            writer.start()
            assert await appended.wait(10)
            # Read at once: whoever woke us did so after the commit, so the event is there.
            assert messages(engine, RUN) == ["first"]
            writer.join()
    finally:
        event.remove(engine, "commit", slow_commit)


async def test_an_append_between_the_read_and_the_wait_is_not_missed(engine: Engine) -> None:
    with signals_for(engine).watch(RUN) as appended:
        appended.arm()
        assert messages(engine, RUN) == []
        append_message(engine, RUN, "meanwhile")  # commits after the read, before the reader waits
        started = time.monotonic()
        assert await appended.wait(10)
        assert time.monotonic() - started < 1.0  # at once, not at the timeout


async def test_appends_to_other_runs_and_rolled_back_appends_wake_nobody(engine: Engine) -> None:
    with signals_for(engine).watch(RUN) as appended:
        appended.arm()
        append_message(engine, OTHER_RUN, "elsewhere")
        try:
            with engine.begin() as conn:
                append(conn, RUN, [log("x")], now=NOW)
                raise RuntimeError("abandon the transaction")
        except RuntimeError:
            pass
        assert not await appended.wait(0.5)
    assert messages(engine, RUN) == []


async def test_every_watcher_of_a_run_wakes(engine: Engine) -> None:
    signals = signals_for(engine)
    with signals.watch(RUN) as first, signals.watch(RUN) as second:
        first.arm()
        second.arm()
        await asyncio.to_thread(append_message, engine, RUN, "both")
        assert await first.wait(5)
        assert await second.wait(5)


@pytest.mark.postgres
def test_closing_the_saver_stops_its_event_listener(postgres_url: str) -> None:
    saver = SQLModelSaver.from_url(postgres_url)
    saver.setup()
    signals = signals_for(saver.engine)
    signals.ensure_listening()
    listener = signals._listener
    assert listener is not None and listener.is_alive()
    saver.close()
    listener.join(timeout=5)
    assert not listener.is_alive(), "a disposed engine keeps no thread reconnecting to its database"
    assert signals_for(saver.engine) is not signals

"""Requests first: in-process workers wait (bounded) while requests that change something are answered.

A worker driving a graph holds the interpreter lock the process's requests need. The server
counts its non-read requests in ``host.foreground``; a worker about to take a run, or to go on
to its graph's next step, waits until none is left, at most ``defer_seconds``.
"""

from __future__ import annotations

import operator
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph

from tests.host._graphs import ALICE, approval_graph
from tests.host._support import HostFactory
from tests.host.test_worker_poll import until
from wop_langgraph.host import WopHost
from wop_langgraph.host.foreground import Foreground, at_step_boundary


def test_waiting_for_quiet_returns_at_once_when_nothing_is_answered() -> None:
    foreground = Foreground()
    assert foreground.wait_quiet(5.0) is True
    foreground.enter()
    foreground.leave()
    assert foreground.answering == 0
    assert foreground.wait_quiet(5.0) is True


def test_waiting_for_quiet_ends_when_the_last_request_is_answered() -> None:
    foreground = Foreground()
    foreground.enter()
    foreground.enter()
    answered: list[str] = []

    def answer_both() -> None:
        time.sleep(0.1)
        answered.append("first")
        foreground.leave()
        time.sleep(0.1)
        answered.append("second")
        foreground.leave()

    thread = threading.Thread(target=answer_both)
    thread.start()
    assert foreground.wait_quiet(10.0) is True
    assert answered == ["first", "second"]  # not woken by the first of two
    thread.join()


def test_waiting_for_quiet_is_bounded() -> None:
    foreground = Foreground()
    foreground.enter()  # never answered
    started = time.monotonic()
    assert foreground.wait_quiet(0.2) is False
    assert time.monotonic() - started >= 0.2


def test_a_step_boundary_waits_only_in_a_deferring_thread() -> None:
    foreground = Foreground()
    foreground.enter()
    started = time.monotonic()
    at_step_boundary()  # not a deferring thread: no wait at all
    assert time.monotonic() - started < 0.2
    with foreground.deferring(0.3):
        started = time.monotonic()
        at_step_boundary()
        assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    at_step_boundary()  # the deferral ended with its block
    assert time.monotonic() - started < 0.2


@contextmanager
def _workers_while_answering(
    host: WopHost, concurrency: int, *, defer_seconds: float = 0.0
) -> Iterator[None]:
    """``host``'s workers, started while one request is being answered (the block may answer it)."""
    host.foreground.enter()
    host.start_workers(concurrency, poll_seconds=0.05, sweep_seconds=0, defer_seconds=defer_seconds)
    try:
        yield
    finally:
        if host.foreground.answering:  # first: a deferring worker would hold up its stop
            host.foreground.leave()
        host.stop_workers()


def test_a_worker_takes_no_run_while_a_request_is_answered(make_host: HostFactory) -> None:
    host = make_host()
    host.register("approval", approval_graph())
    run_id = host.create_run("approval", {}, owner=ALICE, wait=False)["runId"]
    # A request being answered, for longer than the test looks.
    with _workers_while_answering(host, 2, defer_seconds=30.0):
        time.sleep(0.5)
        assert host.snapshot(run_id)["status"] == "pending"  # queued, not taken
        host.foreground.leave()
        until(lambda: host.snapshot(run_id)["status"] == "waiting-approval", what="the gate")


def test_a_worker_defers_for_at_most_its_bound(make_host: HostFactory) -> None:
    host = make_host()
    host.register("approval", approval_graph())
    run_id = host.create_run("approval", {}, owner=ALICE, wait=False)["runId"]
    # Never answered: the bound alone lets the worker go on.
    with _workers_while_answering(host, 1, defer_seconds=0.1):
        until(lambda: host.snapshot(run_id)["status"] == "waiting-approval", what="the gate")


def test_workers_without_a_bound_do_not_wait(make_host: HostFactory) -> None:
    host = make_host()
    host.register("approval", approval_graph())
    run_id = host.create_run("approval", {}, owner=ALICE, wait=False)["runId"]
    with _workers_while_answering(host, 1):  # defer_seconds=0: the library default
        until(lambda: host.snapshot(run_id)["status"] == "waiting-approval", timeout=5.0, what="the gate")


class _Steps(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def test_a_driving_worker_waits_between_steps_while_a_request_is_answered(make_host: HostFactory) -> None:
    host = make_host()

    def first(state: _Steps) -> _Steps:
        host.foreground.enter()  # a request arrives while this step runs
        return {"done": ["first"]}

    def second(state: _Steps) -> _Steps:
        return {"done": ["second"]}

    g = StateGraph(_Steps)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", END)
    host.register("steps", g.compile())
    host.start_workers(1, poll_seconds=0.05, sweep_seconds=0, defer_seconds=30.0)
    try:
        run_id = host.create_run("steps", {}, owner=ALICE, wait=False)["runId"]
        until(lambda: host.foreground.answering == 1, what="the first step")
        time.sleep(0.5)
        snapshot = host.snapshot(run_id)
        assert snapshot["status"] == "running"
        types = [(e["type"], e.get("nodeId")) for e in host.events(run_id)]
        assert ("node.started", "second") not in types  # held at the step boundary
        host.foreground.leave()
        until(lambda: host.snapshot(run_id)["status"] == "completed", what="the second step")
    finally:
        if host.foreground.answering:
            host.foreground.leave()
        host.stop_workers()

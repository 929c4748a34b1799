"""A failed node's public error: a code and a client message; the raw detail only in the log."""

from __future__ import annotations

import logging
from typing import Any, TypedDict

import pytest
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph

from tests.host._support import HostFactory
from tests.official import official_errors
from wop_langgraph.host import Principal
from wop_langgraph.host.errors_public import public_error
from wop_langgraph.protocol.errors import ApprovalRejected

SECRET_TEXT = "password=hunter2 in /srv/app/secret_settings.py"
OWNER = Principal(tenant="acme", subject_id="alice", scopes=frozenset({"runs:create"}))


def test_an_unexpected_exception_is_a_code_and_a_message_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    error = RuntimeError(SECRET_TEXT)
    error.add_note("During task with name 'write' and id '1ef6-task-id'")
    with caplog.at_level(logging.ERROR, logger="wop_langgraph.host.errors"):
        first = public_error(error, run_id="acme/r1", node_id="write")
        again = public_error(error, run_id="acme/r1", node_id="write")
    assert first == again
    assert first["code"] == "internal_error" and first["retryable"] is False
    assert "write" in first["message"]
    text = repr(first)
    for leak in ("hunter2", "secret_settings", "RuntimeError", "1ef6-task-id", "During task"):
        assert leak not in text
    correlation_id = first["details"]["correlationId"]
    (record,) = caplog.records  # mapped twice, logged once
    assert correlation_id in record.getMessage() and "acme/r1" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[1] is error  # the traceback goes to the log
    assert official_errors("run-event-payloads.schema.json", first, def_name="_errorObject") == []


def test_distinct_failures_get_distinct_correlation_ids() -> None:
    ids = {public_error(ValueError("x"))["details"]["correlationId"] for _ in range(50)}
    assert len(ids) == 50


def test_errors_raised_on_purpose_keep_their_code_and_message() -> None:
    rejected = ApprovalRejected("approval 'x' was rejected (reject)", details={"nodeId": "review"})
    assert public_error(rejected) == rejected.error_object()
    recursion = public_error(GraphRecursionError("Recursion limit of 25 reached ... see https://..."))
    assert recursion["code"] == "recursion_limit_exceeded" and "https" not in recursion["message"]


def test_a_bare_value_reported_as_an_error_is_not_echoed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="wop_langgraph.host.errors"):
        obj = public_error(SECRET_TEXT, node_id="n")
    assert "hunter2" not in repr(obj) and obj["code"] == "internal_error"
    assert "hunter2" in caplog.text


class State(TypedDict, total=False):
    value: str


def _explode(state: State) -> State:
    raise RuntimeError(SECRET_TEXT)


def _graph() -> Any:
    g = StateGraph(State)
    g.add_node("explode", _explode)
    g.add_edge(START, "explode")
    g.add_edge("explode", END)
    return g.compile()


def test_the_snapshot_and_events_of_a_failed_run_carry_no_raw_detail(
    make_host: HostFactory, caplog: pytest.LogCaptureFixture
) -> None:
    host = make_host()
    host.register("explode", _graph())
    with caplog.at_level(logging.ERROR, logger="wop_langgraph.host.errors"):
        run_id = host.create_run("explode", {}, owner=OWNER)["runId"]
        snapshot = host.snapshot(run_id)
        events = host.events(run_id)
    assert snapshot["status"] == "failed"
    served = repr(snapshot) + repr(events)
    for leak in ("hunter2", "secret_settings", "RuntimeError", "During task", "Traceback"):
        assert leak not in served
    (node_failed,) = [e["payload"] for e in events if e["type"] == "node.failed"]
    (run_failed,) = [e["payload"] for e in events if e["type"] == "run.failed"]
    assert node_failed["error"] == run_failed["error"]
    assert snapshot["error"] == {k: v for k, v in run_failed["error"].items() if k != "retryable"}
    correlation_id = snapshot["error"]["details"]["correlationId"]
    assert [r for r in caplog.records if correlation_id in r.getMessage()]
    assert "hunter2" in caplog.text

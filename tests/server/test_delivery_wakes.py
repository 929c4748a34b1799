"""Callback delivery looks at a run only after a drive that raised an interrupt (the host's
``on_interrupt_requested``, then ``on_run_rested``), and still delivers every gate: the first
one, and one raised by the drive after a resolution."""

from __future__ import annotations

import json

from tests.host._graphs import ALICE as ALICE_OWNER
from tests.server.conftest import make_host, make_settings
from tests.server.test_background import Receiver
from wop_langgraph.protocol.egress import AllowList
from wop_langgraph.server.callbacks import attach_callbacks


def test_only_drives_that_raise_an_interrupt_wake_the_delivery(db_url: str) -> None:
    host = make_host(db_url)
    delivery = attach_callbacks(host, make_settings(db_url))  # not started: its queue stays readable
    try:
        host.create_run("plain", {}, owner=ALICE_OWNER, callback_url="http://127.0.0.1:9/hook")
        assert delivery._queue.qsize() == 0  # drove to the end: nothing to deliver, no wake
        snapshot = host.create_run("review", {}, owner=ALICE_OWNER, callback_url="http://127.0.0.1:9/hook")
        run_id = snapshot["runId"]
        assert snapshot["status"] != "completed"
        assert [delivery._queue.get_nowait()] == [run_id] and delivery._queue.qsize() == 0
        # The resolution's drive reaches the second gate (clarify): woken again, once.
        host.resolve(run_id, "review", {"action": "accept"}, ALICE_OWNER)
        assert [delivery._queue.get_nowait()] == [run_id] and delivery._queue.qsize() == 0
    finally:
        host.close()
        host.saver.close()


def test_both_gates_of_a_run_are_delivered(db_url: str) -> None:
    receiver = Receiver([200, 200])
    host = make_host(db_url)
    allow = AllowList(loopback_http_ports=frozenset({receiver.port}))
    delivery = attach_callbacks(host, make_settings(db_url, callback_allow=allow))
    delivery.start()
    try:
        url = f"http://127.0.0.1:{receiver.port}/hook"
        run_id = host.create_run("review", {}, owner=ALICE_OWNER, callback_url=url)["runId"]
        assert receiver.arrived.wait(30), "no callback for the first gate"
        receiver.arrived.clear()
        host.resolve(run_id, "review", {"action": "accept"}, ALICE_OWNER)
        assert receiver.arrived.wait(30), "no callback for the gate raised after the resolution"
        nodes = [json.loads(raw)["nodeId"] for _, raw in receiver.received]
        assert nodes == ["review", "clarify"]
    finally:
        delivery.stop()
        host.close()
        receiver.close()
        host.saver.close()

"""``wop-langgraph worker`` signs with ``WOP_RECEIPT_KEYS`` as ``serve`` does, on SQLite and
PostgreSQL: where worker processes drive the runs (``serve --workers 0``), the timeouts their
timers apply and the checkpoints of the runs they drive are signed there."""

from __future__ import annotations

import pytest

from tests.server.graphs import WORKFLOWS
from tests.server.process import poll_until, worker_process
from wop_langgraph.host import Principal, WopHost
from wop_langgraph.proof.keys import ReceiptKeys, generate_seed
from wop_langgraph.worker_cli import worker_main

SEED = generate_seed()
KEYS = ReceiptKeys.parse(f"w1={SEED}")
ALICE = Principal("acme", "alice", frozenset({"runs:write", "runs:read"}))


def test_a_worker_signs_the_timeout_it_applies_and_the_checkpoints_of_its_drives(db_url: str) -> None:
    with WopHost.from_url(db_url) as host:  # no key, no timer left running: the worker does it all
        host.register("timed", WORKFLOWS["timed"])
        run_id = host.create_run("timed", {}, owner=ALICE, wait=False)["runId"]
    env = {"WOP_RECEIPT_KEYS": f"w1={SEED}"}
    with worker_process(db_url, target="tests.server.graphs:WORKFLOWS", concurrency=1, extra_env=env):
        checker = WopHost.from_url(db_url)
        checker.use_receipt_keys(KEYS)
        try:
            # The gate times out after 1.5 s by the worker's timer, and its drive ends the run.
            report = poll_until(
                lambda: checker.verify(run_id),
                lambda r: r.covered_to is not None and r.covered_to == r.events - 1 and r.receipts > 0,
                timeout=60,
                what="the worker's receipts",
            )
        finally:
            checker.close()
            checker.saver.close()
    assert report.ok, report.to_json()
    assert report.receipts == 1  # the timeout's decision receipt
    assert report.checkpoints >= 2  # the drive that rested at the gate, and the one that ended it


@pytest.mark.parametrize(
    ("name", "value"),
    [("WOP_RECEIPT_KEYS", "not-a-key"), ("WOP_RECEIPT_CHECKPOINT_SECONDS", "0")],
)
def test_a_worker_refuses_malformed_receipt_settings(
    name: str,
    value: str,
    tmp_path: object,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("WOP_RECEIPT_KEYS", f"w1={SEED}")
    monkeypatch.setenv(name, value)
    assert worker_main(["tests.server.graphs:WORKFLOWS", "--db", f"sqlite:///{tmp_path}/w.db"]) == 2
    assert name in capsys.readouterr().err

"""What proof costs to make and to check, on one core.

* ``sign``: decision receipts signed per second (statement, DSSE PAE, Ed25519 signature);
* ``verify``: receipts verified per second (signature, statement parsed); target >= 5,000/s;
* ``verify 10k``: ``verify_bundle`` of a run of 10,000 chained events (appended to a real
  SQLite file through the store, exported) with 100 decision receipts and a checkpoint;
  target < 1 s::

    PYTHONPATH=src python benchmarks/receipts.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta

from wop_langgraph.proof.dsse import open_envelope, sign_envelope
from wop_langgraph.proof.keys import ReceiptKeys, generate_seed
from wop_langgraph.proof.statements import checkpoint_statement, decision_statement, statement_bytes
from wop_langgraph.proof.verify import verify_bundle
from wop_langgraph.store.engine import make_engine
from wop_langgraph.store.events import NewEvent, append, read_events
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.proof_bundle import export_bundle
from wop_langgraph.store.receipts import StoredReceipt, insert_receipts

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
SHOWN = {
    "kind": "approval",
    "data": {"artifactData": {"text": "draft " * 40}, "actions": ["accept", "reject"]},
}


def _rate(work: int, seconds: float) -> float:
    return work / seconds


def sign_and_verify(keys: ReceiptKeys, count: int) -> tuple[float, float]:
    from wop_langgraph.store.events import StoredEvent

    event = StoredEvent(
        run_id="acme/run",
        sequence=7,
        event_id=uuid.uuid4().hex,
        type="interrupt.resolved",
        payload={
            "nodeId": "review",
            "interruptId": "i",
            "kind": "approval",
            "action": "accept",
            "decision": "granted",
        },
        timestamp=NOW,
        node_id="review",
        chain_hash="ab" * 32,
    )
    started = time.process_time()
    envelopes = [
        sign_envelope(statement_bytes(decision_statement(event, SHOWN, "k")), keys) for _ in range(count)
    ]
    signed = _rate(count, time.process_time() - started)
    public = keys.public()
    started = time.process_time()
    for envelope in envelopes:
        open_envelope(envelope, public)
    return signed, _rate(count, time.process_time() - started)


def verify_large_run(keys: ReceiptKeys, events: int) -> tuple[float, bool]:
    with tempfile.TemporaryDirectory(prefix="wop-bench-") as folder:
        engine = make_engine(f"sqlite:///{folder}/bench.db")
        upgrade(engine)
        run_id = "acme/big-run"
        with engine.begin() as conn:
            for batch in range(events // 100):
                append(
                    conn,
                    run_id,
                    [
                        NewEvent("node.completed", {"nodeId": f"n{batch}", "outputs": {"i": i}})
                        for i in range(99)
                    ]
                    + [NewEvent("interrupt.resolved", {"nodeId": "review", "interruptId": f"i{batch}"})],
                    now=NOW + timedelta(seconds=batch),
                )
        with engine.begin() as conn:
            stored = read_events(conn, run_id)
            receipts = [
                StoredReceipt(
                    run_id,
                    f"decision/{e.sequence}",
                    "decision",
                    e.sequence,
                    keys.signing_kid,
                    sign_envelope(statement_bytes(decision_statement(e, SHOWN, "k")), keys),
                    NOW,
                )
                for e in stored
                if e.type == "interrupt.resolved"
            ]
            last = stored[-1]
            receipts.append(
                StoredReceipt(
                    run_id,
                    f"checkpoint/{last.sequence}",
                    "checkpoint",
                    last.sequence,
                    keys.signing_kid,
                    sign_envelope(
                        statement_bytes(checkpoint_statement(last, closed=False, signed_at="x")), keys
                    ),
                    NOW,
                )
            )
            insert_receipts(conn, receipts)
            bundle = export_bundle(conn, run_id, keys.public(), now=NOW)
        engine.dispose()
    started = time.perf_counter()
    report = verify_bundle(bundle, keys.public())
    elapsed = time.perf_counter() - started
    # The receipts bind payloads this synthetic run never requested: only those checks fail.
    return elapsed, {p.code for p in report.problems} <= {"payload-mismatch", "missing-receipt"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--receipts", type=int, default=5000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    keys = ReceiptKeys.parse(f"bench={generate_seed()}")
    signs, verifies, larges = [], [], []
    for _ in range(args.rounds):
        signed, verified = sign_and_verify(keys, args.receipts)
        signs.append(signed)
        verifies.append(verified)
    for _ in range(args.rounds):
        elapsed, sound = verify_large_run(keys, args.events)
        assert sound
        larges.append(elapsed)
    verify_rate = statistics.median(verifies)
    large = statistics.median(larges)
    print(f"receipts (median of {args.rounds} rounds, one core, CPU time):")
    print(f"  sign    {statistics.median(signs):9.0f} receipts/s")
    print(
        f"  verify  {verify_rate:9.0f} receipts/s  "
        f"({'meets' if verify_rate >= 5000 else 'BELOW'} the 5,000/s target)"
    )
    print(
        f"  verify of a {args.events}-event run: {large:.3f} s wall "
        f"({'meets' if large < 1.0 else 'BELOW'} the 1 s target)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

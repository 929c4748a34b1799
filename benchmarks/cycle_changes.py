"""What a change to the full path's cycle is worth, measured paired against the cycle without it.

One WopHost per database (SQLite, and PostgreSQL with ``--postgres``); its cycles (create,
suspend at the gate, resolve, complete: ``full_path.py``'s) alternate one by one between the
cycle without the change ("before", the change switched off by a benchmark-only switch) and
with it, the first side alternating too, so the VM's drift, which moves a cycle by tens of
percent within minutes, falls on both alike; the ratio is the median of the paired cycles'
ratios (before over with: above 1, the change is quicker). ``--control`` runs the change on
both sides: an A/A run, whose ratio is the method's own noise. After the pairs, a few cycles of
each side count what the change removes, the proof that the switch works. The changes:

* ``held-rows``: the saves a drive held (its checkpoints, its tasks' writes: about ten a cycle,
  stored with the run's next transaction, ``host/held_writes.py``) go in one statement a table
  (``store/held.py::run_held``), where each was a statement of its own (on PostgreSQL all in one
  pipeline: the same round trips, fewer statements). Counted: the checkpoint upserts a cycle.
* ``rest-rides`` (PostgreSQL): the run's rest at its interrupt is sent in the round trip of the
  interrupt's own statement (``TaskWritesListener.resting``), where it was a round trip of its
  own before the commit. Counted: the rests sent on their own a cycle.
* ``create-held``: a waiting caller's run, its id minted by ``create_run``, has its row and
  ``run.started`` held by its drive and stored with the drive's first transaction
  (``WopHost._create_held``), where they were a transaction of their own before the graph
  started (as they still are for an id given out before the call, which is how the switch puts
  the cycle back: it passes one). Counted: creations in a transaction of their own a cycle.

::

    python benchmarks/cycle_changes.py --change held-rows --postgres postgresql://postgres@127.0.0.1:5432/test
    python benchmarks/cycle_changes.py --change rest-rides --postgres URL --control
    python benchmarks/cycle_changes.py --change create-held --postgres URL
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from _harness import POSTGRES_ENV, backends, database, paired_cycles
from full_path import _host, _host_cycle
from wop_langgraph.host import driver, runtime
from wop_langgraph.protocol.ids import mint_tenant_id
from wop_langgraph.store import _saver_ops as ops
from wop_langgraph.store import held, statements
from wop_langgraph.store.held import HeldWrite


def _apart(conn: Connection, writes: Sequence[HeldWrite]) -> None:
    """The saves stored as before ``run_held``: each in its own statements, in turn."""
    for write in writes:
        write(conn)


@dataclass(frozen=True)
class Change:
    """A change with its switch: ``off()`` puts the cycle back as it was, ``on()`` as it is;
    ``counted`` names what ``count`` (a context manager yielding a call count) counts."""

    name: str
    databases: tuple[str, ...]
    off: Callable[[], None]
    on: Callable[[], None]
    counted: str
    count: Callable[[], contextlib.AbstractContextManager[list[int]]]


@contextlib.contextmanager
def _counting(owner: Any, name: str) -> Iterator[list[int]]:
    """``owner.name`` counting its calls (in the list yielded) within the block."""
    original = getattr(owner, name)
    calls = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)
    try:
        yield calls
    finally:
        setattr(owner, name, original)


def _setting(pairs: Sequence[tuple[Any, str, Any]]) -> Callable[[], None]:
    def apply() -> None:
        for owner, name, value in pairs:
            setattr(owner, name, value)

    return apply


_RUN_HELD = held.run_held
_RESTING = driver._TaskEnds.resting
_CREATE_RUN = runtime.WopHost.create_run


def _with_id_given(self: runtime.WopHost, workflow_id: str, inputs: Any = None, **options: Any) -> Any:
    """``create_run`` with an id minted before the call, as for an id given out first."""
    if options.get("run_id") is None:
        options["run_id"] = mint_tenant_id(options["owner"].tenant)
    return _CREATE_RUN(self, workflow_id, inputs, **options)


CHANGES = {
    change.name: change
    for change in (
        Change(
            "held-rows",
            ("sqlite", "postgres"),
            _setting([(held, "run_held", _apart), (statements, "run_held", _apart)]),
            _setting([(held, "run_held", _RUN_HELD), (statements, "run_held", _RUN_HELD)]),
            "checkpoint upserts",
            lambda: _counting(ops.CheckpointsInto, "store"),
        ),
        Change(
            "rest-rides",
            ("postgres",),
            _setting([(driver._TaskEnds, "resting", lambda self, batch: None)]),
            _setting([(driver._TaskEnds, "resting", _RESTING)]),
            "rests sent on their own",
            lambda: _counting(driver, "rest_at_oldest_interrupt"),
        ),
        Change(
            "create-held",
            ("sqlite", "postgres"),
            _setting([(runtime.WopHost, "create_run", _with_id_given)]),
            _setting([(runtime.WopHost, "create_run", _CREATE_RUN)]),
            "creations in a transaction of their own",
            lambda: _counting(runtime, "insert_run_leading"),
        ),
    )
}


def _counted(change: Change, switch: Callable[[], None], cycle: Callable[[], None], cycles: int = 5) -> float:
    """What ``change`` counts, a cycle of ``cycle`` with ``switch`` applied."""
    switch()
    with change.count() as calls:
        for _ in range(cycles):
            cycle()
    return calls[0] / cycles


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--change", choices=sorted(CHANGES), required=True, help="the change to measure")
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV), help="a PostgreSQL server URL")
    parser.add_argument("--only", choices=["sqlite", "postgres"], help="one database only")
    parser.add_argument("--cycles", type=int, default=600, help="measured cycles per side")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured cycles per side first")
    parser.add_argument("--control", action="store_true", help="the change on both sides (A/A)")
    args = parser.parse_args()
    change = CHANGES[args.change]
    first, name = (change.on, "with") if args.control else (change.off, "before")
    print(
        f"{change.name}: {args.cycles} paired full-path cycles a database, {name} / with"
        + (" (A/A control)" if args.control else "")
    )
    for backend in backends(args.postgres, args.only):
        if backend not in change.databases:
            print(f"  {backend:8s} (the change is {', '.join(change.databases)}'s only)")
            continue
        with contextlib.ExitStack() as stack:
            host = _host(stack.enter_context(database(backend, args.postgres)))
            stack.callback(host.saver.close)
            stack.callback(change.on)  # as shipped again, whatever happens
            cycle = _host_cycle(host)
            times, ratio = paired_cycles((cycle, cycle), args.cycles, args.warmup, before=(first, change.on))
            counts = [_counted(change, switch, cycle) for switch in (first, change.on)]
        medians = " / ".join(f"{statistics.median(side):.2f}" for side in times)
        load = os.getloadavg()[0]
        print(
            f"  {backend:8s} medians {medians} ms a cycle; {name} / with, the median of the paired "
            f"ratios: {ratio:.3f}x; {change.counted} a cycle {counts[0]:.1f} / {counts[1]:.1f}; "
            f"load average {load:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

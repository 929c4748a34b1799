"""SIGKILL worker and server processes at chosen moments: nothing stuck, nothing lost or applied twice.

Each worker trial creates runs, waits until one of them is at a chosen point, freezes the worker
process that holds it (SIGSTOP, so what it was doing can be read from the database) and kills it
(SIGKILL). The points, taken in turn until each was hit: *before the first interrupt* (the
worker is in ``write``); *between claim and delivery* (a resolution was answered 200 and
committed, the graph has not received it: either the dying worker had leased the run and not
handed it the value yet, a window the workers widen by pausing there (``_crash_graphs``), or the
worker was killed before the resolve while the others were frozen); *after a resolved gate* (the
worker is in the resumed ``review`` or in ``publish``). On SQLite one worker process runs and is
restarted after each kill; on PostgreSQL two run, one is killed and the other continues the
dead one's runs once its lease has run out (a replacement is started for the next trial).

After the last trial every run must be at rest (ended, or waiting on an interrupt that is
really pending); then every gate still waiting is answered. In the end every run completed with
exactly the decision that was answered 200 for it (each resolve sends a value of its own), one
``interrupt.requested`` per key, one ``interrupt.resolved`` for that same key. Trials:
``WOP_CRASH_TRIALS`` (default 6; the acceptance figure is 30 per database).

The last test kills a server (in-process workers) while clients create runs with idempotency
keys: every run in the database, acknowledged or not, ends; a retried key is answered again
(replayed, or run anew once the dead request's in-flight lease expired), never refused forever.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx
import pytest
from sqlalchemy import select

from tests.host._crash_graphs import WORKFLOW, WORKFLOWS
from tests.host._graphs import ALICE
from tests.host._support import HostFactory, all_run_ids, events, payloads
from tests.server.conftest import ALICE as ALICE_HEADERS
from tests.server.process import served_process, worker_process
from wop_langgraph.host import WopHost
from wop_langgraph.store.engine import READ_ONLY
from wop_langgraph.store.run_tables import events_table, interrupts_table, runs_table

pytestmark = pytest.mark.slow

TRIALS = int(os.environ.get("WOP_CRASH_TRIALS", "6"))
RUNS_PER_TRIAL = 3
TARGET = "tests.host._crash_graphs:WORKFLOWS"
#: Short leases and polls, so a dead worker's runs are taken over within seconds.
WORKER_ARGS = ("--poll-seconds", "0.2", "--sweep-seconds", "0.5", "--lease-seconds", "3")
#: Workers pause this long between claiming a resolved run and handing the graph its value.
WORKER_ENV = {"WOP_CRASH_DELIVERY_DELAY": "0.3"}
BEFORE, UNDELIVERED, AFTER_GATE = "before-first-interrupt", "claimed-undelivered", "after-resolved-gate"
POINTS = (BEFORE, UNDELIVERED, AFTER_GATE)
REST = 120.0  # generous bound for runs to come to rest on a loaded machine (not a speed target)


@contextmanager
def worker(db_url: str) -> Iterator[subprocess.Popen[bytes]]:
    with worker_process(db_url, target=TARGET, extra_args=WORKER_ARGS, extra_env=WORKER_ENV) as process:
        yield process


class Trials:
    """The test's view of the database and of what it answered 200."""

    def __init__(self, host: WopHost, rng: random.Random) -> None:
        self.host = host
        self.rng = rng
        self.sent: dict[str, str] = {}  # run id -> the feedback of the resolve answered 200
        self.hits: Counter[str] = Counter()
        self.attempts: Counter[str] = Counter()  # trials aimed at each point
        self.variants: Counter[str] = Counter()  # hits: the point and how the run stood

    def resolve(self, run_id: str) -> None:
        """Answer the run's gate with a value of its own; it must be answered 200 (the only resolver)."""
        feedback = f"{run_id}-{len(self.sent)}"
        self.host.resolve(run_id, "review", {"action": "accept", "feedback": feedback}, ALICE, wait=False)
        assert run_id not in self.sent, f"{run_id} answered twice"
        self.sent[run_id] = feedback

    def where(self, run_ids: list[str]) -> dict[str, tuple[str | None, str]]:
        """Per run: the pid holding its lease (or ``None``) and where it is (a point, or its status)."""
        # A deferred read on SQLite: a frozen worker may hold the write lock.
        with self.host.engine.connect().execution_options(**{READ_ONLY: True}) as conn:
            runs = {
                r.run_id: r
                for r in conn.execute(
                    select(runs_table.c.run_id, runs_table.c.status, runs_table.c.lease_owner).where(
                        runs_table.c.run_id.in_(run_ids)
                    )
                )
            }
            gates = {
                r.run_id: r
                for r in conn.execute(
                    select(
                        interrupts_table.c.run_id, interrupts_table.c.status, interrupts_table.c.consumed_at
                    ).where(interrupts_table.c.run_id.in_(run_ids))
                )
            }
            resumed = {
                r.run_id
                for r in conn.execute(
                    select(events_table.c.run_id).where(
                        events_table.c.run_id.in_(run_ids), events_table.c.type == "node.resumed"
                    )
                )
            }
        found: dict[str, tuple[str | None, str]] = {}
        for run_id in run_ids:
            run, gate = runs[run_id], gates.get(run_id)
            owner = run.lease_owner.rsplit(":", 2)[1] if run.lease_owner else None
            if run.status in ("completed", "failed", "cancelled"):
                point = run.status
            elif gate is None:
                point = BEFORE
            elif gate.status == "pending":
                point = "waiting" if owner is None else "suspending"
            elif run_id not in resumed and gate.consumed_at is None:
                point = UNDELIVERED
            else:
                point = AFTER_GATE
            found[run_id] = (owner, point)
        return found

    def wait_for(self, run_ids: list[str], point: str, timeout: float = REST) -> str | None:
        """The pid of a worker holding one of ``run_ids`` at ``point`` (``None`` if none got there)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.where(run_ids)
            for owner, where in found.values():
                if owner is not None and where == point:
                    return owner
            if all(where in ("waiting", "completed", "failed") for _, where in found.values()):
                return None  # every run moved past the point
            time.sleep(0.005)
        return None

    def wait_all(self, run_ids: list[str], points: set[str]) -> None:
        deadline = time.monotonic() + REST
        while True:
            found = self.where(run_ids)
            if all(where in points for _, where in found.values()):
                return
            assert time.monotonic() < deadline, f"runs not at {points}: {found}"
            time.sleep(0.05)

    def next_point(self, trial: int) -> str:
        """The least-hit point (in order), so each is hit even if one attempt missed its window."""
        return min(POINTS, key=lambda p: (self.hits[p], (POINTS.index(p) - trial) % len(POINTS)))


def kill(victim: subprocess.Popen[bytes], trials: Trials, run_ids: list[str]) -> set[str]:
    """Freeze ``victim``, note where its runs are, SIGKILL it; the points it died at."""
    victim.send_signal(signal.SIGSTOP)
    points = {where for owner, where in trials.where(run_ids).values() if owner == str(victim.pid)}
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    return points


def one_trial(trial: int, trials: Trials, workers: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """Create runs, kill one of ``workers`` at the next point; returns the worker killed."""
    host, rng = trials.host, trials.rng
    batch = [host.create_run(WORKFLOW, {}, owner=ALICE, wait=False)["runId"] for _ in range(RUNS_PER_TRIAL)]
    target = trials.next_point(trial)
    by_pid = {str(w.pid): w for w in workers}
    victim: subprocess.Popen[bytes] | None = None
    # Every other attempt at the undelivered point kills the worker before the resolve.
    frozen = target == UNDELIVERED and trials.attempts[UNDELIVERED] % 2 == 1
    trials.attempts[target] += 1
    if target == BEFORE:
        owner = trials.wait_for(batch, BEFORE)
        victim = by_pid.get(owner or "")
    else:
        trials.wait_all(batch, {"waiting"})
        if frozen:
            # No worker can take the runs while they are resolved: the victim is dead, the others
            # frozen (SIGSTOP). The resolutions are then claimed (200) and undelivered.
            victim = rng.choice(workers)
            kill(victim, trials, batch)
            others = [w for w in workers if w is not victim]
            for w in others:
                w.send_signal(signal.SIGSTOP)
            for rid in batch:
                trials.resolve(rid)
            points = {where for _, where in trials.where(batch).values()}
            assert points == {UNDELIVERED}, points
            for w in others:
                w.send_signal(signal.SIGCONT)
            trials.hits[UNDELIVERED] += 1
            trials.variants[f"{UNDELIVERED}, no worker alive or awake"] += 1
            return victim
        for rid in batch:
            trials.resolve(rid)
        owner = trials.wait_for(batch, target)
        victim = by_pid.get(owner or "")
    if victim is None:  # missed the window: kill a worker anyway, the point is retried
        victim = rng.choice(workers)
    else:
        time.sleep(rng.uniform(0.0, 0.05))
    for point in kill(victim, trials, batch):
        if point in POINTS:
            trials.hits[point] += 1
            trials.variants[f"{point}, lease held by the killed worker"] += 1
    return victim


def test_sigkilled_workers_leave_nothing_stuck(make_host: HostFactory, db_url: str) -> None:
    host = make_host()
    host.register(WORKFLOW, WORKFLOWS[WORKFLOW])
    trials = Trials(host, random.Random(20261202))
    pair = db_url.startswith("postgresql")  # two worker processes on PostgreSQL, one killed
    with ExitStack() as stack:
        workers = [stack.enter_context(worker(db_url)) for _ in range(2 if pair else 1)]
        for trial in range(TRIALS):
            victim = one_trial(trial, trials, workers)
            workers.remove(victim)
            if pair:
                # The survivor continues the dead worker's runs once its lease runs out.
                mine = [
                    rid for rid, (o, _) in trials.where(all_run_ids(host)).items() if o == str(victim.pid)
                ]
                deadline = time.monotonic() + REST
                while any(trials.where(mine)[rid][0] == str(victim.pid) for rid in mine):
                    assert time.monotonic() < deadline, "the surviving worker never took the dead one's runs"
                    time.sleep(0.1)
            workers.append(stack.enter_context(worker(db_url)))  # the restart (the replacement)
        run_ids = all_run_ids(host)
        # After the restarts: every run ends or waits on a really pending interrupt; none stuck.
        trials.wait_all(run_ids, {"waiting", "completed", "failed"})
        for rid, (_, where) in trials.where(run_ids).items():
            if where == "waiting":
                assert host.pending_interrupts(rid), rid
                trials.resolve(rid)
        trials.wait_all(run_ids, {"completed", "failed"})
    assert len(run_ids) == TRIALS * RUNS_PER_TRIAL
    for rid in run_ids:
        docs = events(host, rid)
        requested = Counter(p["key"] for p in payloads(docs, "interrupt.requested"))
        assert list(requested.values()) == [1], requested
        (asked,) = payloads(docs, "interrupt.requested")
        (resolved,) = payloads(docs, "interrupt.resolved")
        (resumed,) = payloads(docs, "node.resumed")
        # Keys unchanged: one interrupt (row and events) under the key first asked.
        assert resolved["interruptId"] == resumed["interruptId"], (resolved, resumed)
        with host.engine.connect() as conn:
            rows = conn.execute(
                select(interrupts_table.c.interrupt_id, interrupts_table.c.key).where(
                    interrupts_table.c.run_id == rid
                )
            ).all()
        assert [tuple(row) for row in rows] == [(resolved["interruptId"], asked["key"])]
        assert resolved["resumeValue"]["feedback"] == trials.sent[rid]
        (completed,) = payloads(docs, "run.completed")
        assert completed["outputs"]["log"] == ["write", "review", "publish"]
        assert completed["outputs"]["feedback"] == trials.sent[rid]  # delivered, and only that one
        assert docs[-1]["type"] == "run.completed"
    assert set(trials.sent) == set(run_ids)
    assert all(trials.hits[p] for p in POINTS), trials.hits
    print(
        f"\n{TRIALS} trials, {len(run_ids)} runs; kills at {dict(trials.hits)};",
        f"aimed at {dict(trials.attempts)}; hits {dict(trials.variants)}",
    )


def test_a_server_killed_during_post_runs_leaves_nothing_stuck(db_url: str, make_host: HostFactory) -> None:
    """SIGKILL the server while clients create runs: every run ends, every key is answered again."""
    acknowledged: dict[str, str] = {}  # idempotency key -> run id answered 201
    unanswered: list[str] = []
    refused: list[str] = []
    rng = random.Random(7)
    guard = threading.Lock()
    for round_ in range(max(2, TRIALS // 3)):
        with served_process(db_url, target=TARGET) as (base, process):
            stop = time.monotonic() + rng.uniform(0.3, 1.5)

            def create(client_id: int, stop: float = stop, base: str = base, round_: int = round_) -> None:
                with httpx.Client(base_url=base, timeout=30) as client:
                    for n in range(10_000):
                        key = f"crash-test-key-r{round_}-c{client_id}-n{n}"
                        headers = {**ALICE_HEADERS, "Idempotency-Key": key}
                        try:
                            response = client.post("/runs", json={"workflowId": WORKFLOW}, headers=headers)
                        except httpx.TransportError:
                            with guard:
                                unanswered.append(key)  # the server died under this request
                            return
                        with guard:
                            if response.status_code != 201:
                                refused.append(response.text)
                                return
                            acknowledged[key] = response.json()["runId"]
                        if time.monotonic() > stop + 30:
                            return  # never reached: the server is killed at `stop`

            clients = [threading.Thread(target=create, args=(i,)) for i in range(4)]
            for client in clients:
                client.start()
            time.sleep(max(0.0, stop - time.monotonic()))
            process.send_signal(signal.SIGKILL)
            process.wait(30)
            for client in clients:
                client.join(60)
    assert acknowledged and unanswered and not refused, refused
    host = make_host()
    host.register(WORKFLOW, WORKFLOWS[WORKFLOW])
    trials = Trials(host, rng)
    with (
        served_process(db_url, target=TARGET) as (base, _),
        httpx.Client(base_url=base, timeout=30) as client,
    ):
        # A retried key: the acknowledged ones replay their run; a dead request's key is free
        # again once its in-flight lease ran out (answered 409 in flight until then, not forever).
        for key, run_id in acknowledged.items():
            headers = {**ALICE_HEADERS, "Idempotency-Key": key}
            again = client.post("/runs", json={"workflowId": WORKFLOW}, headers=headers)
            assert again.status_code == 201 and again.json()["runId"] == run_id, again.text
        for key in unanswered:
            headers = {**ALICE_HEADERS, "Idempotency-Key": key}
            deadline = time.monotonic() + REST
            while True:
                retried = client.post("/runs", json={"workflowId": WORKFLOW}, headers=headers)
                if retried.status_code == 201:
                    break
                assert retried.status_code == 409, retried.text
                assert retried.json()["error"] == "idempotency_in_flight", retried.text
                assert time.monotonic() < deadline, f"{key} still in flight"
                time.sleep(0.5)
        run_ids = all_run_ids(host)
        trials.wait_all(run_ids, {"waiting", "completed", "failed"})
        for rid, (_, where) in trials.where(run_ids).items():
            if where == "waiting":
                assert host.pending_interrupts(rid), rid
                trials.resolve(rid)
        trials.wait_all(run_ids, {"completed"})
    assert set(acknowledged.values()) <= set(run_ids)
    # One run per key: a request that died after its run committed stored its answer with the
    # run, so its retry replayed that run instead of creating a second one.
    assert len(run_ids) == len(set(acknowledged) | set(unanswered)), (len(run_ids), len(acknowledged))
    print(
        f"\n{max(2, TRIALS // 3)} server kills: {len(acknowledged)} runs answered 201, {len(unanswered)} "
        f"requests cut off and retried, {len(run_ids)} runs in the database, all completed"
    )
    for rid in run_ids:
        docs = events(host, rid)
        assert len(payloads(docs, "interrupt.requested")) == 1
        (completed,) = payloads(docs, "run.completed")
        assert completed["outputs"]["feedback"] == trials.sent[rid]
        assert docs[-1]["type"] == "run.completed"

"""Benchmark only: what each part of the hash chain costs an append, timed where it runs.

A part's cost in a tight loop is not its cost in an append: between two calls the append's
database work evicts what the part had in the caches (the payload's walk, 0.3-0.55 us in a
loop, took 0.9-1.0 us in context). :func:`timed_parts` wraps each part in
``time.perf_counter_ns`` for the duration of a block and counts calls and nanoseconds; the
wrapper's own cost (about 0.1 us a call, measured on an empty function and printed beside) is in
every figure, and an outer part's figure includes the timers of the parts inside it (the
digest holds three). Like :mod:`_chain_switch`, it patches private names of ``wop_langgraph.proof.chain``
and ``wop_langgraph.store.events``, and the switch's own tables, so that switching the chain off
and on keeps the wrappers: a rename there fails loudly here.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import _chain_switch
from wop_langgraph.proof import chain
from wop_langgraph.store import events

#: (label, module, name): the parts, in the order printed. The chain-less side's serialisation
#: (``json.dumps``, what the chain's digest replaces) is timed too: the digest's net cost is the
#: difference.
PARTS: tuple[tuple[str, Any, str], ...] = (
    ("appended_digest (payload text and digest)", events, "appended_digest"),
    ("  the payload's check (_kind)", chain, "_kind"),
    ("    of it, the astral-key check", chain, "_beyond_the_bmp"),
    ("  the document's SHA-256", chain, "_document_sha256"),
    ("chain_raw (the chain step)", events, "chain_raw"),
    ("chain off: json.dumps of the payload", _chain_switch, "_no_digest"),
)


@dataclass
class Timings:
    """Per part label: calls and nanoseconds; and the timer's own cost a call (ns)."""

    calls: dict[str, int] = field(default_factory=dict)
    nanoseconds: dict[str, int] = field(default_factory=dict)
    timer_ns: float = 0.0

    def per_call(self, label: str) -> float | None:
        """Nanoseconds a call of ``label`` (``None``: never called)."""
        calls = self.calls.get(label, 0)
        return self.nanoseconds[label] / calls if calls else None


def _wrapped(function: Callable[..., Any], label: str, timings: Timings) -> Callable[..., Any]:
    clock = time.perf_counter_ns
    timings.calls.setdefault(label, 0)
    timings.nanoseconds.setdefault(label, 0)

    def timed(*args: Any) -> Any:
        started = clock()
        result = function(*args)
        elapsed = clock() - started
        timings.calls[label] += 1
        timings.nanoseconds[label] += elapsed
        return result

    return timed


def _timer_cost(samples: int = 20000) -> float:
    """The wrapper's own nanoseconds a call, on a function that does nothing."""
    timings = Timings()
    nothing = _wrapped(lambda: None, "nothing", timings)
    for _ in range(samples):
        nothing()
    return timings.nanoseconds["nothing"] / samples


@contextlib.contextmanager
def timed_parts() -> Iterator[Timings]:
    """Within the block every part of :data:`PARTS` is timed (the chain switched off and on as
    ``_chain_switch`` does keeps its wrappers); everything is put back after."""
    timings = Timings(timer_ns=_timer_cost())
    originals = {(module, name): getattr(module, name) for _, module, name in PARTS}
    switch_tables = (_chain_switch._ON, _chain_switch._OFF)
    saved_tables = [dict(table) for table in switch_tables]
    try:
        for label, module, name in PARTS:
            timed = _wrapped(originals[(module, name)], label, timings)
            setattr(module, name, timed)
            for table in switch_tables:  # the switch puts its copies back: where it would put
                if table.get((module, name)) is originals[(module, name)]:  # this one, ours
                    table[(module, name)] = timed
        # switched off, events calls the switch's _no_digest (as the table holds it): timed too
        _chain_switch._OFF[(events, "appended_digest")] = _chain_switch._no_digest
        yield timings
    finally:
        for (module, name), original in originals.items():
            setattr(module, name, original)
        for table, saved in zip(switch_tables, saved_tables, strict=True):
            table.clear()
            table.update(saved)

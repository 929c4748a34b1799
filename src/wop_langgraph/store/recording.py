"""The hook through which the checkpointer hands task writes to the OpenWOP side of the store.

The saver calls :meth:`WriteRecorder.record` inside the transaction that stores the writes, so
whatever the recorder appends (interrupt rows, run events) commits or rolls back with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Connection

__all__ = ["WriteBatch", "WriteRecorder"]


@dataclass(frozen=True, slots=True)
class WriteBatch:
    """One ``put_writes`` call, as LangGraph made it (values not yet serialised)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    task_path: str
    writes: Sequence[tuple[str, Any]]

    def touches(self, channels: frozenset[str] | None) -> bool:
        """Whether the batch writes one of ``channels`` (``None`` matches every batch)."""
        return channels is None or any(name in channels for name, _ in self.writes)

    def channel_values(self, channel: str) -> list[Any]:
        """The values written to ``channel`` in this batch, in order."""
        return [value for name, value in self.writes if name == channel]


class WriteRecorder(Protocol):
    """Receives batches of task writes inside the saver's write transaction.

    ``channels`` names the channels the recorder cares about: the saver hands it only the
    batches that write one of them (``None``: every batch). Batches it skips keep the saver's
    single-statement fast path. Optional methods the saver calls when a recorder has them:
    ``wants(batch) -> bool`` decides batch by batch in place of ``channels``;
    ``committed(batch)`` runs after the batch's transaction committed; ``before_put(thread_id,
    checkpoint_ns)`` runs before a checkpoint is stored (and may wait); ``one_append(batch) ->
    bool`` says that recording the batch is at most one append to the run's event log and
    nothing else: on PostgreSQL the writes then ride in that append's statement, in autocommit:
    the saver calls ``record(conn, batch, ahead)``, ``ahead`` a
    :class:`~wop_langgraph.store.events.NextAppend` carrying them for the recorder's append to
    take; if it logs nothing the batch is stored again the usual way, ``record`` called a
    second time (without ``ahead``). ``hold(thread_id,
    checkpoint_ns, write, batch) -> bool`` may keep a save to store later instead: a checkpoint
    (``batch`` ``None``), or writes it would take with at most one append (``one_append``) or
    not at all; ``write`` (a :data:`~wop_langgraph.store.held.HeldWrite`) then stores them in
    the transaction of the connection it is given, and the saver stores nothing itself.
    ``stores_first(batch) -> bool`` says that ``record`` begins by storing saves it held (with
    :func:`~wop_langgraph.store.held.storing`): the batch's rows then go with those (on
    PostgreSQL in their pipeline) instead of before ``record`` is called.
    """

    channels: frozenset[str] | None

    def record(self, conn: Connection, batch: WriteBatch) -> None:
        """Persist what the batch means for the run; raising rolls back the whole batch."""
        ...

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

    def channel_values(self, channel: str) -> list[Any]:
        """The values written to ``channel`` in this batch, in order."""
        return [value for name, value in self.writes if name == channel]


class WriteRecorder(Protocol):
    """Receives every batch of task writes inside the saver's write transaction."""

    def record(self, conn: Connection, batch: WriteBatch) -> None:
        """Persist what the batch means for the run; raising rolls back the whole batch."""
        ...

"""Tables of the LangGraph side of the store: checkpoints and the task writes attached to them.

One row per checkpoint holds the whole serialised checkpoint (channel values included) as the
serializer's opaque ``(type, blob)`` pair, like LangGraph's SQLite saver: a ``put`` is one
insert and a ``get_tuple`` reads one row, which is what makes the saver fast. The price is
that unchanged channel values are stored again in every checkpoint; ``prune`` is the answer
to growth. Metadata is kept as JSON (JSONB on PostgreSQL) so ``list(filter=...)`` can query
it, and the metadata ``run_id`` is copied into its own column so ``delete_for_runs`` is an
index lookup.

Indexes, one per lookup:

* the primary key ``(thread_id, checkpoint_ns, checkpoint_id)`` answers "latest checkpoint of
  a namespace" (a backward scan of the B-tree, no sort), "this checkpoint" and "everything of
  a thread" (its prefix);
* ``ix_wop_checkpoints_run_id`` answers ``delete_for_runs`` (added by schema version 2);
* the writes' primary key ``(thread_id, checkpoint_ns, checkpoint_id, task_id, idx)`` is the
  insert-if-absent / upsert key of ``put_writes`` and its prefix finds a checkpoint's writes.

These definitions are the schema as it stands now; :mod:`wop_langgraph.store.migrations`
creates and upgrades databases to it, and a test checks the two agree.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, Index, Integer, LargeBinary, String, Table, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import SQLModel

__all__ = [
    "CHANNEL_LENGTH",
    "CHECKPOINT_ID_LENGTH",
    "CHECKPOINT_NS_LENGTH",
    "RUN_ID_LENGTH",
    "TASK_ID_LENGTH",
    "THREAD_ID_LENGTH",
    "checkpoint_writes_table",
    "checkpoints_table",
]

#: Longest ``thread_id`` (UTF-8 bytes); an OpenWOP run id is at most 300 characters of ASCII.
THREAD_ID_LENGTH = 300
#: Longest ``checkpoint_ns``: about twenty levels of nested subgraphs ("node:<uuid>|...").
CHECKPOINT_NS_LENGTH = 1024
#: Longest checkpoint id; LangGraph's are 36-character uuid6 strings.
CHECKPOINT_ID_LENGTH = 64
#: Longest task id; LangGraph's are 36-character uuid-formatted hashes.
TASK_ID_LENGTH = 128
#: Longest metadata ``run_id`` kept in the indexed column.
RUN_ID_LENGTH = 300
#: Longest channel name.
CHANNEL_LENGTH = 1024

# The key columns are bounded so that a primary-key entry always fits PostgreSQL's B-tree row
# limit (about 2.7 kB) even in multi-byte UTF-8; the saver checks the byte lengths itself
# because SQLite would store anything.

checkpoints_table = Table(
    "wop_checkpoints",
    SQLModel.metadata,
    Column("thread_id", String(THREAD_ID_LENGTH), primary_key=True),
    Column("checkpoint_ns", String(CHECKPOINT_NS_LENGTH), primary_key=True),
    Column("checkpoint_id", String(CHECKPOINT_ID_LENGTH), primary_key=True),
    Column("parent_checkpoint_id", String(CHECKPOINT_ID_LENGTH), nullable=True),
    Column("run_id", String(RUN_ID_LENGTH), nullable=True),
    Column("type", Text, nullable=False),
    Column("checkpoint", LargeBinary, nullable=False),
    Column("metadata", JSON().with_variant(JSONB(), "postgresql"), nullable=False),
    Index("ix_wop_checkpoints_run_id", "run_id"),
)

checkpoint_writes_table = Table(
    "wop_checkpoint_writes",
    SQLModel.metadata,
    Column("thread_id", String(THREAD_ID_LENGTH), primary_key=True),
    Column("checkpoint_ns", String(CHECKPOINT_NS_LENGTH), primary_key=True),
    Column("checkpoint_id", String(CHECKPOINT_ID_LENGTH), primary_key=True),
    Column("task_id", String(TASK_ID_LENGTH), primary_key=True),
    Column("idx", Integer, primary_key=True, autoincrement=False),
    Column("task_path", Text, nullable=False),
    Column("channel", String(CHANNEL_LENGTH), nullable=False),
    Column("type", Text, nullable=False),
    Column("blob", LargeBinary, nullable=False),
)

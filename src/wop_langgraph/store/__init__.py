"""The durable store: checkpoints, writes, the OpenWOP event log, interrupts, idempotency."""

from wop_langgraph.store import receipts as _receipts  # noqa: F401  (its table joins the metadata)
from wop_langgraph.store.migrations import upgrade
from wop_langgraph.store.recording import WriteBatch, WriteRecorder
from wop_langgraph.store.saver import AsyncSQLModelSaver, SQLModelSaver

__all__ = ["AsyncSQLModelSaver", "SQLModelSaver", "WriteBatch", "WriteRecorder", "upgrade"]

"""Between LangGraph's objects and the saver's rows: validation, serialisation, decoding.

Everything here runs outside any database transaction. Encoding validates first (key lengths
the columns can hold, no NUL characters, JSON-able metadata, serialisable values) so a bad
input is refused before a single statement runs; decoding turns a blob the serializer cannot
read into a :class:`~wop_langgraph.protocol.errors.StoreError` that names the row and, for
encrypted rows, the likely cause.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from wop_langgraph.protocol.errors import StoreError, ValidationError
from wop_langgraph.store.checkpoint_tables import (
    CHANNEL_LENGTH,
    CHECKPOINT_ID_LENGTH,
    CHECKPOINT_NS_LENGTH,
    RUN_ID_LENGTH,
    TASK_ID_LENGTH,
    THREAD_ID_LENGTH,
)

__all__ = ["CheckpointRow", "Codec", "WriteParams", "WriteRow", "checked", "thread_key"]

#: A checkpoint row as selected: thread_id, checkpoint_ns, checkpoint_id, parent, type, blob, metadata.
CheckpointRow = tuple[str, str, str, str | None, str, bytes, Any]
#: A write row as selected: checkpoint_id, task_id, task_path, idx, channel, type, blob.
WriteRow = tuple[str, str, str, int, str, str, bytes]
#: A write row to store, in the table's column order: thread_id, checkpoint_ns,
#: checkpoint_id, task_id, idx, task_path, channel, type, blob.
WriteParams = tuple[str, str, str, str, int, str, str, str, bytes]

_LIMITS = {
    "thread_id": THREAD_ID_LENGTH,
    "checkpoint_ns": CHECKPOINT_NS_LENGTH,
    "checkpoint_id": CHECKPOINT_ID_LENGTH,
    "task_id": TASK_ID_LENGTH,
    "run_id": RUN_ID_LENGTH,
    "channel": CHANNEL_LENGTH,
}


def checked(name: str, value: object) -> str:
    """``value`` as the string stored in column ``name``, or :class:`ValidationError`.

    Lengths are counted in UTF-8 bytes, the stricter of what PostgreSQL's ``VARCHAR(n)`` and
    its index rows allow; SQLite enforces nothing, so the saver checks on both backends.
    """
    text = value if isinstance(value, str) else str(value)
    limit = _LIMITS[name]
    if len(text) * 4 <= limit and "\x00" not in text:
        return text  # even four bytes a character would fit: no need to encode
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ValidationError(
            f"{name} is {size} bytes long; the checkpoint store accepts at most {limit} (UTF-8)",
            details={"path": name, "maxBytes": limit},
        )
    if "\x00" in text:
        raise ValidationError(f"{name} contains a NUL character", details={"path": name})
    return text


def thread_key(config: RunnableConfig) -> tuple[str, str]:
    """The validated ``(thread_id, checkpoint_ns)`` a config addresses."""
    configurable = config.get("configurable") or {}
    if configurable.get("thread_id") is None:
        raise ValidationError(
            "the config has no configurable.thread_id; pass {'configurable': {'thread_id': ...}}",
            details={"path": "configurable.thread_id"},
        )
    return (
        checked("thread_id", configurable["thread_id"]),
        checked("checkpoint_ns", configurable.get("checkpoint_ns") or ""),
    )


class Codec:
    """Encodes LangGraph objects into row parameters and decodes rows back, with one serde."""

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde

    def checkpoint_params(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> dict[str, Any]:
        """The insert parameters of one ``put``, validated and serialised."""
        thread_id, checkpoint_ns = thread_key(config)
        parent = config["configurable"].get("checkpoint_id")
        stored_metadata = dict(get_serializable_checkpoint_metadata(config, metadata))
        try:
            metadata_json = json.dumps(stored_metadata, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise ValidationError(
                f"checkpoint metadata is not JSON: {exc}", details={"path": "metadata"}
            ) from exc
        if "\\u0000" in metadata_json:
            raise ValidationError(
                "checkpoint metadata contains a NUL character", details={"path": "metadata"}
            )
        run_id = stored_metadata.get("run_id")
        type_, blob = self._dump(checkpoint, "checkpoint")
        return {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checked("checkpoint_id", checkpoint["id"]),
            "parent_checkpoint_id": None if parent is None else checked("checkpoint_id", parent),
            "run_id": None if run_id is None else checked("run_id", run_id),
            "type": type_,
            "checkpoint": blob,
            "metadata": metadata_json,
        }

    def write_params(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[list[WriteParams], tuple[str, str, str]]:
        """The rows of one ``put_writes`` batch, one per stored slot, in the writes table's
        column order, and the validated ``(thread_id, checkpoint_ns, checkpoint_id)``.

        A special channel written twice in one batch (LangGraph does this with ``__resume__``)
        keeps only its last value, which is what an in-place upsert of each write in order
        would leave.
        """
        thread_id, checkpoint_ns = thread_key(config)
        checkpoint_id = config["configurable"].get("checkpoint_id")
        if checkpoint_id is None:
            raise ValidationError(
                "put_writes needs configurable.checkpoint_id (the checkpoint the writes belong to)",
                details={"path": "configurable.checkpoint_id"},
            )
        checkpoint_id = checked("checkpoint_id", checkpoint_id)
        task_id = checked("task_id", task_id)
        if "\x00" in task_path:
            raise ValidationError("task_path contains a NUL character", details={"path": "task_path"})
        rows: dict[int, WriteParams] = {}
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, position)
            type_, blob = self._dump(value, f"write to channel {channel!r}")
            rows[idx] = (
                thread_id,
                checkpoint_ns,
                checkpoint_id,
                task_id,
                idx,
                task_path,
                checked("channel", channel),
                type_,
                blob,
            )
        return list(rows.values()), (thread_id, checkpoint_ns, checkpoint_id)

    def checkpoint_tuple(self, row: CheckpointRow, writes: Sequence[WriteRow]) -> CheckpointTuple:
        """The :class:`CheckpointTuple` of a row and its writes (in ``writes_sort_key`` order)."""
        thread_id, checkpoint_ns, checkpoint_id, parent_id, type_, blob, metadata = row
        where = f"checkpoint {checkpoint_id} of thread {thread_id!r} (namespace {checkpoint_ns!r})"
        checkpoint = self._load(type_, blob, where)
        if isinstance(metadata, (str, bytes)):
            metadata = json.loads(metadata)
        ordered = sorted(writes, key=lambda w: writes_sort_key(w[2], w[1], w[3]))
        pending: list[PendingWrite] = [
            (task_id, channel, self._load(w_type, w_blob, f"write {task_id}/{idx} of {where}"))
            for _, task_id, _, idx, channel, w_type, w_blob in ordered
        ]
        return CheckpointTuple(
            config=_config(thread_id, checkpoint_ns, checkpoint_id),
            checkpoint=cast(Checkpoint, checkpoint),
            metadata=cast(CheckpointMetadata, metadata or {}),
            parent_config=_config(thread_id, checkpoint_ns, parent_id) if parent_id else None,
            pending_writes=pending,
        )

    def _dump(self, value: object, what: str) -> tuple[str, bytes]:
        try:
            return self.serde.dumps_typed(value)
        except Exception as exc:
            raise ValidationError(f"cannot serialise the {what}: {exc}", details={"path": what}) from exc

    def _load(self, type_: str, blob: bytes, where: str) -> Any:
        try:
            return self.serde.loads_typed((type_, bytes(blob)))
        except Exception as exc:
            raise StoreError(f"cannot read {where}: {self._explain(type_, exc)}") from exc

    def _explain(self, type_: str, exc: Exception) -> str:
        if "+" in type_:
            if isinstance(self.serde, EncryptedSerializer):
                return (
                    f"it is encrypted ({type_!r}) and does not decrypt with this saver's key "
                    f"(written with another key, or damaged): {exc}"
                )
            return (
                f"it is encrypted ({type_!r}) and this saver has no cipher; construct it with "
                "serde=EncryptedSerializer.from_pycryptodome_aes(key=...) and the key it was written with"
            )
        return f"its {type_!r} blob does not decode ({type(exc).__name__}: {exc})"


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }

"""LangGraph's serializers through the saver: rich values round-trip, encrypted rows stay sealed."""

from __future__ import annotations

import operator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any, TypedDict
from uuid import UUID

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from pydantic import BaseModel
from sqlalchemy import select
from tests.store.conftest import config_of, make_checkpoint, new_thread, put_chain

from wop_langgraph.protocol.errors import StoreError
from wop_langgraph.store import SQLModelSaver
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table, checkpoints_table

KEY = b"0123456789abcdef0123456789abcdef"
OTHER_KEY = b"fedcba9876543210fedcba9876543210"


class Invoice(BaseModel):
    number: str
    amount: Decimal
    due: date


RICH: dict[str, Any] = {
    "messages": [
        HumanMessage(content="pay invoice 7?", id="m1"),
        AIMessage(content="", id="m2", tool_calls=[{"name": "pay", "args": {"n": 7}, "id": "c1"}]),
        ToolMessage(content="paid", tool_call_id="c1", id="m3"),
    ],
    "when": datetime(2026, 5, 17, 9, 30, tzinfo=UTC),
    "wait": timedelta(minutes=5),
    "invoice": Invoice(number="INV-7", amount=Decimal("1234.50"), due=date(2026, 6, 1)),
    "raw": b"\x00\x01\xffbinary",
    "id": UUID("12345678-1234-5678-1234-567812345678"),
    "tags": {"urgent", "finance"},
}


def test_rich_values_round_trip_in_checkpoints_and_writes(
    shared_saver: SQLModelSaver, module_db_url: str
) -> None:
    thread = new_thread()
    config = shared_saver.put(config_of(thread), make_checkpoint(RICH), {"source": "loop", "step": 0}, {})
    shared_saver.put_writes(config, [(name, value) for name, value in RICH.items()], "task")

    fresh = SQLModelSaver.from_url(module_db_url)  # another engine: nothing cached in memory
    try:
        found = fresh.get_tuple(config)
    finally:
        fresh.close()
    assert found is not None
    assert found.checkpoint["channel_values"] == RICH
    assert {channel: value for _, channel, value in found.pending_writes or []} == RICH
    assert isinstance(found.checkpoint["channel_values"]["invoice"], Invoice)
    assert found.checkpoint["channel_values"]["raw"] == RICH["raw"]


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    approved_at: datetime | None
    invoice: Invoice | None
    trail: Annotated[list[bytes], operator.add]


def _chat_graph(saver: SQLModelSaver) -> Any:
    def approve(state: Chat) -> dict[str, Any]:
        answer = interrupt({"invoice": state["invoice"]})
        return {
            "messages": [AIMessage(content=f"approved by {answer['by']}")],
            "approved_at": answer["at"],
            "trail": [b"approved"],
        }

    builder = StateGraph(Chat)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver)


def test_graph_state_with_messages_and_models_survives_interrupt_and_resume(
    shared_saver: SQLModelSaver, module_db_url: str
) -> None:
    config = config_of(new_thread())
    invoice = RICH["invoice"]
    [asked] = _chat_graph(shared_saver).invoke(
        {
            "messages": [HumanMessage(content="pay?")],
            "approved_at": None,
            "invoice": invoice,
            "trail": [b"asked"],
        },
        config,
    )["__interrupt__"]
    assert asked.value == {"invoice": invoice}

    other = SQLModelSaver.from_url(module_db_url)
    try:
        at = datetime(2026, 5, 17, 10, 0, tzinfo=UTC)
        final = _chat_graph(other).invoke(Command(resume={asked.id: {"by": "alice", "at": at}}), config)
    finally:
        other.close()
    assert [m.content for m in final["messages"]] == ["pay?", "approved by alice"]
    assert (
        final["approved_at"] == at
        and final["invoice"] == invoice
        and final["trail"] == [b"asked", b"approved"]
    )


def _encrypted(url: str, key: bytes) -> SQLModelSaver:
    return SQLModelSaver.from_url(url, serde=EncryptedSerializer.from_pycryptodome_aes(key=key))


def test_encrypted_rows_are_sealed_and_need_the_key(shared_saver: SQLModelSaver, module_db_url: str) -> None:
    thread = new_thread()
    saver = _encrypted(module_db_url, KEY)
    try:
        [config] = put_chain(saver, thread, 1)
        config = saver.put(config, make_checkpoint({"secret": "launch code 0000"}), {"step": 1}, {})
        saver.put_writes(config, [("secret", "write-only secret"), ("__interrupt__", ["sealed?"])], "task")
        found = saver.get_tuple(config)
        assert found is not None and found.checkpoint["channel_values"] == {"secret": "launch code 0000"}
        assert found.pending_writes == [
            ("task", "__interrupt__", ["sealed?"]),
            ("task", "secret", "write-only secret"),
        ]
    finally:
        saver.close()

    with shared_saver.engine.connect() as conn:
        rows = conn.execute(
            select(checkpoints_table.c.type, checkpoints_table.c.checkpoint).where(
                checkpoints_table.c.thread_id == thread
            )
        ).all()
        writes = conn.execute(
            select(checkpoint_writes_table.c.type, checkpoint_writes_table.c.blob).where(
                checkpoint_writes_table.c.thread_id == thread
            )
        ).all()
    assert {row.type for row in rows} == {"msgpack+aes"} and {w.type for w in writes} == {"msgpack+aes"}
    assert all(b"launch code" not in bytes(r.checkpoint) for r in rows)
    assert all(b"secret" not in bytes(w.blob) for w in writes)

    wrong = _encrypted(module_db_url, OTHER_KEY)
    try:
        with pytest.raises(StoreError, match=r"encrypted \('msgpack\+aes'\).*another key") as caught:
            wrong.get_tuple(config)
        assert thread in caught.value.message and caught.value.__cause__ is not None
    finally:
        wrong.close()
    with pytest.raises(StoreError, match="has no cipher; construct it with serde=EncryptedSerializer"):
        shared_saver.get_tuple(config)


def test_an_encrypted_saver_still_reads_plain_rows(shared_saver: SQLModelSaver, module_db_url: str) -> None:
    [config] = put_chain(shared_saver, new_thread(), 1)
    saver = _encrypted(module_db_url, KEY)
    try:
        found = saver.get_tuple(config)
        assert found is not None and found.checkpoint["channel_values"] == {"step": 0}
    finally:
        saver.close()


def test_encrypted_graph_runs_an_interrupt_cycle(module_db_url: str) -> None:
    saver = _encrypted(module_db_url, KEY)
    try:
        graph, config = _chat_graph(saver), config_of(new_thread())
        [asked] = graph.invoke(
            {"messages": [], "approved_at": None, "invoice": RICH["invoice"], "trail": []}, config
        )["__interrupt__"]
        final = graph.invoke(Command(resume={asked.id: {"by": "bob", "at": RICH["when"]}}), config)
        assert final["approved_at"] == RICH["when"]
    finally:
        saver.close()

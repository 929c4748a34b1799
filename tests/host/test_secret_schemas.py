"""A node may not ask a person for a secret: an interrupt whose schema marks a value as one
(``format: password``, ``writeOnly: true``, at any depth) is refused where it is raised, with a
``validation_error`` that points to ``request_credential``, and nothing of it is recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.pregel import Pregel

from tests.host._graphs import count, single_node
from tests.host._support import HostFactory, events, payloads, start
from wop_langgraph.nodes import ask, custom_interrupt, exchange, start_conversation
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.secret_schemas import refuse_secret_schemas

PASSWORD = {"type": "string", "format": "password"}
NESTED_WRITE_ONLY = {
    "type": "object",
    "properties": {"login": {"type": "object", "properties": {"pin": {"type": "string", "writeOnly": True}}}},
}
IN_ITEMS = {"type": "array", "items": {"anyOf": [{"type": "integer"}, PASSWORD]}}


def _asking(schema: dict[str, Any]) -> Callable[[Any], Any]:
    return lambda state: ask(
        [{"id": "name", "question": "Your name?"}, {"id": "q", "question": "?", "schema": schema}]
    )


def _custom(schema: dict[str, Any]) -> Callable[[Any], Any]:
    return lambda state: custom_interrupt("acme.sheet", {"sheet": 1}, resume_schema=schema)


def _turn(schema: dict[str, Any]) -> Callable[[Any], Any]:
    return lambda state: exchange(start_conversation(title="Help"), "Your login?", schema)


CASES = [
    ("clarification", _asking, PASSWORD, "/data/questions/1/schema/format", {}),
    ("clarification", _asking, IN_ITEMS, "/data/questions/1/schema/items/anyOf/1/format", {}),
    ("custom", _custom, NESTED_WRITE_ONLY, "/resumeSchema/properties/login/properties/pin/writeOnly", {}),
    (
        "conversation.exchange",
        _turn,
        NESTED_WRITE_ONLY,
        "/data/outcomeSchema/properties/login/properties/pin/writeOnly",
        {"conversations": True},
    ),
]


@pytest.mark.parametrize(("kind", "node", "schema", "pointer", "options"), CASES)
def test_a_schema_that_asks_for_a_secret_is_refused_at_raise_time(
    make_host: HostFactory,
    kind: str,
    node: Callable[[dict[str, Any]], Callable[[Any], Any]],
    schema: dict[str, Any],
    pointer: str,
    options: dict[str, Any],
) -> None:
    host = make_host(**options)
    graph: Pregel = single_node("ask", node(schema))
    run_id, snapshot = start(host, graph)
    assert snapshot["status"] == "failed", kind
    docs = events(host, run_id)
    assert not payloads(docs, "interrupt.requested")  # nothing asked, nothing recorded
    assert host.interrupts(run_id) == []
    (failed,) = payloads(docs, "node.failed")
    assert (failed["nodeId"], failed["error"]["code"]) == ("ask", "validation_error")
    assert "request_credential" in failed["error"]["message"]
    assert count("ask:past") == 0
    with pytest.raises(ValidationError) as refused:
        refuse_secret_schemas(
            {"kind": "custom", "resumeSchema": schema, "data": {"customKind": "x"}}
            if kind == "custom"
            else {"kind": kind, "data": _data(kind, schema)}
        )
    assert refused.value.details == {
        "path": pointer,
        "reason": "credential_material",
        "use": "request_credential",
    }


def _data(kind: str, schema: dict[str, Any]) -> dict[str, Any]:
    if kind == "clarification":
        return {
            "questions": [
                {"id": "name", "question": "Your name?"},
                {"id": "q", "question": "?", "schema": schema},
            ]
        }
    return {"conversationId": "c-1", "prompt": "Your login?", "outcomeSchema": schema}


def test_schemas_without_secrets_are_asked(make_host: HostFactory) -> None:
    """``writeOnly: false`` and other formats are no secret; the question is asked as usual."""
    host = make_host()
    fine = {
        "type": "object",
        "properties": {"email": {"type": "string", "format": "email", "writeOnly": False}},
    }
    run_id, snapshot = start(host, single_node("ask", _asking(fine)))
    assert snapshot["status"] == "waiting-input"
    assert [r.kind for r in host.interrupts(run_id)] == ["clarification"]

"""Valid base documents and small helpers for building invalid variants of them."""

from __future__ import annotations

import copy
from typing import Any

from tests.protocol.strategies import CREDENTIAL_RESUME_SCHEMA

APPROVAL: dict[str, Any] = {
    "kind": "approval",
    "key": "acme/r-0123456789abcdef:gate:0",
    "data": {"artifactId": "a1", "artifactType": "doc", "title": "Publish?", "actions": ["accept", "reject"]},
}
CLARIFICATION: dict[str, Any] = {
    "kind": "clarification",
    "key": "k",
    "data": {"questions": [{"id": "q1", "question": "Which colour?"}]},
}
EXTERNAL_EVENT: dict[str, Any] = {
    "kind": "external-event",
    "key": "k",
    "data": {"eventType": "stripe.checkout.completed", "correlation": {"orderId": "o-1"}},
}
CUSTOM: dict[str, Any] = {"kind": "custom", "key": "k", "data": {"customKind": "x-review"}}
CONVERSATION_START: dict[str, Any] = {
    "kind": "conversation.start",
    "key": "k",
    "data": {"conversationId": "c1"},
}
CONVERSATION_EXCHANGE: dict[str, Any] = {
    "kind": "conversation.exchange",
    "key": "k",
    "data": {"conversationId": "c1", "prompt": "Anything else?"},
}
CONVERSATION_CLOSE: dict[str, Any] = {
    "kind": "conversation.close",
    "key": "k",
    "data": {"conversationId": "c1"},
}
LOW_CONFIDENCE: dict[str, Any] = {
    "kind": "low-confidence",
    "key": "k",
    "data": {"agentId": "router", "threshold": 0.7, "observed": 0.4},
}
CREDENTIAL: dict[str, Any] = {
    "kind": "credential",
    "key": "k",
    "resumeSchema": CREDENTIAL_RESUME_SCHEMA,
    "data": {
        "provider": "github",
        "scopes": ["repo"],
        "reason": "missing",
        "connectUrl": "https://host.example/c",
    },
}
ALL_PAYLOADS = [
    APPROVAL,
    CLARIFICATION,
    EXTERNAL_EVENT,
    CUSTOM,
    CONVERSATION_START,
    CONVERSATION_EXCHANGE,
    CONVERSATION_CLOSE,
    LOW_CONFIDENCE,
    CREDENTIAL,
]

RUN_ID = "acme/r-0123456789abcdef"
INTERRUPT_ID = "acme/i-0123456789abcdef"
SUBJECT: dict[str, Any] = {
    "issuer": "urn:wop:api-key",
    "subjectId": "key-1",
    "tenant": "acme",
    "lane": "api-key",
    "kind": "user",
}
RESOLVED: dict[str, Any] = {"nodeId": "gate", "interruptId": INTERRUPT_ID, "kind": "approval"}
EVENT: dict[str, Any] = {
    "eventId": "ev-0123456789abcdef",
    "runId": RUN_ID,
    "type": "run.completed",
    "payload": {"outputs": {}},
    "timestamp": "2025-06-01T12:00:00Z",
    "sequence": 0,
    "schemaVersion": 1,
}
ENVELOPE: dict[str, Any] = {"error": "validation_error", "message": "bad body"}


def changed(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with the member at ``path`` (``data/actions``) set to ``value``."""
    doc = copy.deepcopy(base)
    *parents, last = path.split("/")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


def without(base: dict[str, Any], path: str) -> dict[str, Any]:
    """A deep copy of ``base`` without the member at ``path``."""
    doc = copy.deepcopy(base)
    *parents, last = path.split("/")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    del node[last]
    return doc

"""The per-run hash chain: each event's digest over its RFC 8785 canonical form, chained.

``digest(e)`` is the SHA-256 of the RFC 8785 (JCS) canonical JSON of the event's wire document
(``RunEventDoc``) without ``sequence``; ``chain(e_i) = SHA-256(chain(e_{i-1}) || digest(e_i))``
over the raw 32-byte values, from :data:`GENESIS` (32 zero bytes) for a run's first chained
event. The sequence is bound by the chain itself (position ``i`` holds sequence ``i``), which
is what lets the database assign it in the same statement that chains the event.

The canonical form is computed from the values the log stores and reads back (the wire
timestamp has millisecond precision, the payload is JSON), so the digest does not depend on
how a database round-trips JSON: JSONB's key order and number spelling are normalised away by
the canonicalisation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import rfc8785

from wop_langgraph._clock import iso_z

__all__ = ["GENESIS", "canonical", "chain_next", "event_digest", "json_digest", "wire_digest"]

#: The chain value before a run's first chained event (hex of 32 zero bytes).
GENESIS = "0" * 64


def canonical(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``value``."""
    return rfc8785.dumps(value)


def json_digest(value: Any) -> str:
    """Hex SHA-256 of the canonical JSON of ``value``."""
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def event_digest(
    *,
    run_id: str,
    event_id: str,
    type: str,
    payload: Any,
    timestamp: datetime,
    node_id: str | None,
    causation_id: str | None,
    schema_version: int,
) -> str:
    """The digest of one event: its wire document without ``sequence``, canonicalised."""
    doc: dict[str, Any] = {
        "eventId": event_id,
        "runId": run_id,
        "type": type,
        "payload": payload,
        "timestamp": iso_z(timestamp),
        "schemaVersion": schema_version,
    }
    if node_id is not None:
        doc["nodeId"] = node_id
    if causation_id is not None:
        doc["causationId"] = causation_id
    return hashlib.sha256(rfc8785.dumps(doc)).hexdigest()


def wire_digest(doc: Mapping[str, Any]) -> str:
    """:func:`event_digest` of an event's wire document (``RunEventDoc``, as exported)."""
    body = {name: value for name, value in doc.items() if name not in ("sequence", "chainHash")}
    return hashlib.sha256(rfc8785.dumps(body)).hexdigest()


def chain_next(previous: str | None, digest: str) -> str:
    """The chain value after an event of ``digest`` (hex) follows ``previous`` (hex, or ``None``
    for the run's first chained event)."""
    return hashlib.sha256(bytes.fromhex(previous or GENESIS) + bytes.fromhex(digest)).hexdigest()

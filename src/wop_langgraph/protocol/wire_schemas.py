"""The project's wire contract as JSON Schema, generated from the models (``schemas/`` at the repo root).

:func:`wire_schemas` renders every public wire shape; ``scripts/gen_schemas.py`` writes them
and a test fails when the committed files differ. The schemas describe what the models accept
from the wire: closed objects, camelCase members, optional members that are absent rather than
``null``, and the cross-member rules (``kind`` binds ``data``, ``refine`` needs
``refineFeedback``, ...). Pure: nothing here reads or writes files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import PydanticUndefined, core_schema

from wop_langgraph.protocol.approval import ApprovalResume
from wop_langgraph.protocol.envelope import ErrorEnvelope
from wop_langgraph.protocol.events import EVENT_PAYLOAD_MODELS, RunEvent
from wop_langgraph.protocol.payloads import InterruptPayload
from wop_langgraph.protocol.snapshot import RunSnapshot

__all__ = ["DRAFT_2020_12", "render_schema", "wire_schemas"]

DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"
_COMMENT: Final = "Generated from wop_langgraph.protocol by scripts/gen_schemas.py; do not edit."

# Legacy aliases share the canonical payloads; only the canonical types get a file.
_ALIASES: Final = frozenset(
    {
        "approval.requested",
        "clarification.requested",
        "approval.received",
        "approval.granted",
        "approval.rejected",
        "approval.overridden",
        "clarification.resolved",
    }
)


class WireJsonSchema(GenerateJsonSchema):
    """Pydantic's generator, adjusted to describe the wire rather than the Python object.

    An optional member defaulting to ``None`` is simply not required: its schema does not admit
    ``null`` (the wire omits it) and declares no default; titles of individual fields are left
    out as noise.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        if schema.get("default", PydanticUndefined) is None:
            inner = schema["schema"]
            if inner["type"] == "nullable":
                return self.generate_inner(inner["schema"])
            return self.generate_inner(inner)
        return super().default_schema(schema)


def _schema_of(target: Any, title: str) -> dict[str, Any]:
    adapter: TypeAdapter[Any] = target if isinstance(target, TypeAdapter) else TypeAdapter(target)
    body = adapter.json_schema(by_alias=True, mode="validation", schema_generator=WireJsonSchema)
    return {"$schema": DRAFT_2020_12, "$comment": _COMMENT, **body, "title": title}


def wire_schemas() -> dict[str, dict[str, Any]]:
    """Every wire schema, keyed by its path under ``schemas/`` (``run-event.schema.json``)."""
    schemas: dict[str, dict[str, Any]] = {
        "interrupt-payload.schema.json": _schema_of(InterruptPayload, "InterruptPayload"),
        "approval-resume.schema.json": _schema_of(ApprovalResume, "ApprovalResume"),
        "run-event.schema.json": _schema_of(RunEvent, "RunEvent"),
        "run-snapshot.schema.json": _schema_of(RunSnapshot, "RunSnapshot"),
        "error-envelope.schema.json": _schema_of(ErrorEnvelope, "ErrorEnvelope"),
    }
    for event_type, models in sorted(EVENT_PAYLOAD_MODELS.items()):
        if event_type in _ALIASES:
            continue
        target: Any = InterruptPayload if len(models) > 1 else models[0]
        title = "InterruptPayload" if len(models) > 1 else models[0].__name__
        schemas[f"events/{event_type}.schema.json"] = _schema_of(target, title)
    return schemas


def render_schema(schema: Mapping[str, Any]) -> str:
    """The file text for a schema: sorted keys, two-space indent, UTF-8, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

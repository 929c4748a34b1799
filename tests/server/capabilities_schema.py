"""The parts of the official v2 discovery schema this host's document touches, TRANSCRIBED.

NOT A VERBATIM COPY. ``schemas/v2/capabilities.schema.json`` (openwop/openwop, commit
``046ac537f727c15cbf55df8d86f6fe33f6e63900``, 339,854 characters, generated from
``spec/v2/declaration.json``) was too large to vendor (third_party/openwop/SOURCES.md, "Not
copied"). What is here was read from it and transcribed member for member: the closed root, the
root metadata this host sends, the capability record every family shares (``status``, ``since``,
``until``, ``witness`` and the two ``until`` rules), and the families this host may advertise
with every facet constraint as written there: ``replay``, ``oauth``, ``conversationPrimitive``,
and of ``agents`` the members this host could send. The ``interrupt`` family's facets are the
vendored, unedited ``spec/v2/facets/interrupt.schema.json``.

The transcription is never looser than the official schema: the root and every record stay
closed, and a root key or facet left out here is refused here, so a document valid here is
valid there.
"""

from __future__ import annotations

import json
from typing import Any

from tests.official import openwop_dir

_VERSION = r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$"
_WITNESSES = ["witnessable-unaided", "witnessable-gated", "seam-gated", "claims-check", "negative-existence"]


def _record(facets: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A closed capability record with ``facets`` (capabilities.schema.json, every family)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["status", "since", "witness", *required],
        "properties": {
            "status": {"enum": ["stable", "experimental", "deprecated"]},
            "since": {"type": "string", "pattern": _VERSION},
            "until": {"type": "string", "pattern": r"^((0|[1-9][0-9]*)\.(0|[1-9][0-9]*)|\d{4}-\d{2}-\d{2})$"},
            "witness": {"enum": _WITNESSES},
            **facets,
        },
        "allOf": [
            {"if": {"properties": {"status": {"const": "stable"}}}, "then": {"not": {"required": ["until"]}}},
            {
                "if": {"properties": {"status": {"enum": ["experimental", "deprecated"]}}},
                "then": {"required": ["until"]},
            },
        ],
    }


def discovery_schema() -> dict[str, Any]:
    """The transcription as one JSON Schema (draft 2020-12)."""
    interrupt = json.loads((openwop_dir() / "spec/v2/facets/interrupt.schema.json").read_text("utf-8"))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "required": ["protocolVersions", "preferredVersion"],
        "properties": {
            "protocolVersions": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {"type": "string", "pattern": _VERSION},
            },
            "preferredVersion": {"type": "string", "pattern": _VERSION},
            "implementation": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "version": {"type": "string"},
                    "vendor": {"type": "string"},
                    "url": {"type": "string", "format": "uri"},
                },
            },
            "eventLogSchemaVersion": {"type": "integer", "minimum": 2},
            "fixtures": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True},
            "interrupt": _record(interrupt["properties"], tuple(interrupt["required"])),
            "replay": _record(
                {
                    "modes": {
                        "type": "array",
                        "uniqueItems": True,
                        "items": {"type": "string", "enum": ["replay", "branch"]},
                    },
                    "retention": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"days": {"type": "integer", "minimum": 1}},
                    },
                    "effectSeamsManifest": {"const": "/host/effect-seams"},
                },
                ("modes", "effectSeamsManifest"),
            ),
            "oauth": _record(
                {
                    "grants": {
                        "type": "array",
                        "items": {
                            "type": "string",
                            "enum": ["authorization_code", "client_credentials", "refresh_token"],
                        },
                        "uniqueItems": True,
                    },
                    "credentialInterrupt": {"const": True},
                }
            ),
            "agents": _record(
                {
                    "profile": {"type": "string"},
                    "orchestrator": {"type": "boolean"},
                    "dispatch": {"type": "boolean"},
                }
            ),
            "conversationPrimitive": _record({}),
            # NOT transcribed from capabilities.schema.json (the multiAgent family was not in
            # reach when it was added): the members the official scenarios read
            # (multi-agent-confidence-escalation.test.ts), kept closed.
            "multiAgent": _record(
                {
                    "executionModel": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["supported", "version"],
                        "properties": {
                            "supported": {"type": "boolean"},
                            "version": {"type": "integer", "minimum": 1},
                            "confidenceEscalationFloor": {"type": "number", "minimum": 0.5, "maximum": 1},
                        },
                    }
                }
            ),
        },
    }


#: The witness ``spec/v2/declaration.json`` gives each family (also in the schema's descriptions).
WITNESS = {
    "interrupt": "witnessable-gated",
    "replay": "witnessable-gated",
    "oauth": "witnessable-gated",
    "agents": "witnessable-gated",
    "conversationPrimitive": "claims-check",
    "multiAgent": "witnessable-gated",
}

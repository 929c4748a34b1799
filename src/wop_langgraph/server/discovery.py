"""``GET /.well-known/openwop``: the closed v2 discovery root, with an ``ETag``.

Only what this host actually does is claimed, each family as a v2 capability record (presence
is the claim; schemas/v2/capabilities.schema.json is closed, so no v1 ``supported`` flags): the
``interrupt`` family (hs256 tokens, the approver reference kinds the host honours, callback
delivery to ``createRun.callbackUrl``); the ``replay`` family (fork in ``replay`` and ``branch``
mode, ``GET /host/effect-seams``: in v2 that record *is* the recorded-outcome suppression claim,
and the closed record has no ``sideEffectSuppression`` member); the ``agents`` family, because
an ``agent.decided`` below the run's escalation threshold suspends with ``low-confidence``; the
``multiAgent`` family (execution model version 2: a supervisor's decision below the 0.5
confidence floor escalates before its dispatch);
``conversationPrimitive`` when conversations are enabled; ``oauth`` with
``credentialInterrupt: true`` when credential interrupts are; and ``fixtures[]`` listing the
WorkflowDefinitions the host loaded. Each record's ``witness`` is the one
``spec/v2/declaration.json`` gives its family.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from wop_langgraph._version import package_version
from wop_langgraph.server.errors import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from wop_langgraph.server.etag import cached_json
from wop_langgraph.server.state import ServerState, server_state

__all__ = ["INTERRUPT_UNTIL", "discovery_document", "router"]

router = APIRouter()
INTERRUPT_UNTIL = "2027-06-30"


def discovery_document(state: ServerState) -> dict[str, Any]:
    """The v2 discovery root for this host."""
    document: dict[str, Any] = {
        "protocolVersions": list(SUPPORTED_VERSIONS),
        "preferredVersion": PROTOCOL_VERSION,
        "implementation": {"name": "wop-langgraph", "version": package_version()},
        "eventLogSchemaVersion": 3,
        "interrupt": {
            "status": "experimental",
            "since": "2.0",
            "until": INTERRUPT_UNTIL,
            "witness": "witnessable-gated",
            "tokenAlgs": ["hs256"],
            "refKinds": sorted(state.host.ref_kinds),
            "callbackDelivery": True,
        },
    }
    # POST /runs/{runId}:fork in both modes, with suppression witnessed by the effect-seam
    # manifest (replay.md §The surface); no retention window is claimed.
    document["replay"] = {
        "status": "experimental",
        "since": "2.0",
        "until": INTERRUPT_UNTIL,
        "witness": "witnessable-gated",
        "modes": ["replay", "branch"],
        "effectSeamsManifest": "/host/effect-seams",
    }
    # escalate_on_low_confidence: agent.decided, then a low-confidence suspend below threshold.
    document["agents"] = _record("witnessable-gated")
    # core.orchestrator.supervisor / core.dispatch (definitions/orchestrator.py): a decision below
    # the spec floor is escalated before any dispatch (RFC 0039 §A, executionModel version 2).
    document["multiAgent"] = {
        **_record("witnessable-gated"),
        "executionModel": {"supported": True, "version": 2, "confidenceEscalationFloor": 0.5},
    }
    fixtures = state.host.registry.definition_ids()
    if fixtures:
        document["fixtures"] = fixtures  # the loaded WorkflowDefinitions (serve --definitions)
    if state.host.options.conversations:
        # core.conversationGate and the conversation.* kinds (capabilities.md §conversationPrimitive).
        document["conversationPrimitive"] = _record("claims-check")
    if state.host.options.credentials:
        # request_credential suspends on kind: credential (oauth.md §The credential interrupt).
        document["oauth"] = {**_record("witnessable-gated"), "credentialInterrupt": True}
    return document


def _record(witness: str) -> dict[str, Any]:
    """An experimental capability record this host began serving at 2.0."""
    return {"status": "experimental", "since": "2.0", "until": INTERRUPT_UNTIL, "witness": witness}


@router.get("/.well-known/openwop")
def get_capabilities(request: Request, state: Annotated[ServerState, Depends(server_state)]) -> Response:
    """The discovery document; ``If-None-Match`` with its ``ETag`` answers 304."""
    return cached_json(request, discovery_document(state), {"Cache-Control": "public, max-age=300"})

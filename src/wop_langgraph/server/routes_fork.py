"""``POST /runs/{runId}:fork`` (runs.md §Fork, replay.md) and ``GET /host/effect-seams``.

A fork needs ``runs:create`` and ``runs:read``, honours ``Idempotency-Key`` like ``POST /runs``,
and answers at commit (``201 {runId, sourceRunId, fromSeq, mode, status, eventsUrl}``): a
worker drives the fork. The effect-seam manifest lists every outbound effect path the node
runtime can reach and how a replay keeps it from firing again.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from wop_langgraph._version import package_version
from wop_langgraph.host import Principal
from wop_langgraph.server.auth import require_scopes
from wop_langgraph.server.idempotency import run_idempotent
from wop_langgraph.server.paths import project_id, run_id_from_path
from wop_langgraph.server.state import ServerState, server_state

__all__ = ["EFFECT_SEAMS_PATH", "ForkRunBody", "effect_seams", "router"]

router = APIRouter()
State = Annotated[ServerState, Depends(server_state)]
EFFECT_SEAMS_PATH = "/host/effect-seams"
Tag = Annotated[str, StringConstraints(min_length=1, max_length=256)]
#: The largest fromSeq accepted: exact in a JSON double (no log comes near it).
MAX_SEQ = 2**53 - 1


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RunOptionsOverlay(_Closed):
    """The run options a branch replaces (run-options.schema.json)."""

    configurable: dict[str, Any] | None = None
    tags: list[Tag] | None = Field(default=None, max_length=100)
    metadata: dict[str, Any] | None = None


class ForkRunBody(_Closed):
    """``POST /runs/{runId}:fork``."""

    mode: Literal["replay", "branch"]
    # Not strict: 3.0 is the integer 3 in JSON; a string or a boolean still is not.
    fromSeq: int | None = Field(default=None, ge=0, le=MAX_SEQ, strict=False)
    runOptionsOverlay: RunOptionsOverlay | None = None

    @field_validator("fromSeq", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        if isinstance(value, (bool, str)):
            raise ValueError("fromSeq must be a JSON integer")
        return value


@router.post("/runs/{runId}:fork", status_code=201)
def fork_run(
    runId: str,
    body: ForkRunBody,
    state: State,
    principal: Annotated[Principal, Depends(require_scopes("runs:create", "runs:read"))],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> JSONResponse:
    """Fork a run: ``replay`` re-executes it against its record, ``branch`` explores from ``fromSeq``."""
    run_id = run_id_from_path(runId, principal)
    overlay = body.runOptionsOverlay.model_dump(exclude_unset=True) if body.runOptionsOverlay else None

    def action() -> tuple[int, dict[str, Any]]:
        forked = state.host.fork(
            run_id,
            mode=body.mode,
            from_seq=body.fromSeq,
            run_options_overlay=overlay,
            principal=principal,
            wait=False,
        )
        return 201, {**forked, "eventsUrl": f"/runs/{project_id(forked['runId'])}/events"}

    return run_idempotent(
        state.host,
        tenant=principal.tenant,
        endpoint=f"http:forkRun:{run_id}",
        key=idempotency_key,
        request_body=body.model_dump(mode="json", exclude_unset=True),
        action=action,
    )


@router.api_route(
    "/runs/{runId}:fork", methods=["GET", "HEAD", "PUT", "PATCH", "DELETE"], include_in_schema=False
)
def fork_other_methods(runId: str) -> None:
    """Only POST forks: without this, ``GET /runs/{runId}`` would answer for ``x:fork`` (400)."""
    raise StarletteHTTPException(405)


def effect_seams() -> dict[str, Any]:
    """The effect-seam manifest (replay.md §The effect-seam manifest)."""
    build = package_version()
    return {
        "manifestVersion": "1",
        "host": {
            "name": "wop-langgraph",
            "build": {"kind": "artifact-sha256", "id": f"wop-langgraph-{build}"},
        },
        "seams": [
            {
                "seam": "node.side-effecting",
                "kind": "other",
                "guarded": True,
                "guardedBy": "recorded-outcome: a node type marked side_effecting "
                "(core.conformance.side-effect, user types) takes the source's outcome keyed "
                "(sourceRunId, nodeId, n) or fails closed with replay_source_missing",
                "branchReFires": True,
                "note": "whatever the node type does (in-process Python); the host cannot name its mechanism",
            },
            {
                "seam": "interrupt.callback",
                "kind": "http",
                "guarded": True,
                "guardedBy": "a fork never inherits its source's callbackUrl",
                "branchReFires": False,
            },
            {
                "seam": "interrupt.notification",
                "kind": "smtp",
                "guarded": True,
                "guardedBy": "a replay plans no notification for a gate its source asked (copied, "
                "re-delivered or asked again); a branch notifies the gates it asks anew",
                "branchReFires": True,
                "note": "email through SMTP, or Apprise channels (HTTP) when configured",
            },
        ],
    }


@router.get(EFFECT_SEAMS_PATH)
def get_effect_seams() -> JSONResponse:
    """Every outbound effect seam of the node runtime and how a replay keeps it from firing."""
    return JSONResponse(effect_seams())

"""Closed request bodies (unknown members are ``400 validation_error``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CancelRunBody", "CreateRunBody", "MintTokenBody", "ResolveBody"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateRunBody(_Closed):
    """``POST /runs`` (SPEC_NOTES §9)."""

    workflowId: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._~:-]{1,128}$")
    inputs: Any = None
    residency: dict[str, Any] | None = None
    tenantId: str | None = None
    scopeId: str | None = None
    callbackUrl: str | None = None
    mode: Literal["eval"] | None = None
    evalSuiteRef: Any = None
    agentId: str | None = None
    configurable: dict[str, Any] | None = None
    tags: list[str] | None = Field(default=None, max_length=100)
    metadata: dict[str, Any] | None = None


class CancelRunBody(_Closed):
    """``POST /runs/{runId}/cancel``."""

    reason: str | None = Field(default=None, min_length=1, max_length=1024)


class ResolveBody(_Closed):
    """``POST /runs/{runId}/interrupts/{nodeId}`` and ``POST /interrupts/{token}``."""

    resumeValue: Any


class MintTokenBody(_Closed):
    """``POST /runs/{runId}/interrupts/{nodeId}/tokens`` (host-defined)."""

    intent: Literal["resolve", "inspect"] = "resolve"
    ttlSeconds: int | None = Field(default=None, ge=1, le=7 * 24 * 3600)
    approver: str | None = Field(default=None, min_length=1, max_length=256)
    """The subjectId the link votes as; required for a gate that counts votes."""

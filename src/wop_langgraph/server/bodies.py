"""Closed, strictly typed request bodies.

Unknown members are ``400 validation_error``, and so is a value of the wrong JSON type: no
coercion (``ttlSeconds: "10"`` or ``true`` is not a number of seconds).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from wop_langgraph.protocol.ids import AUTHOR_ID_PATTERN, TENANT_ID_PATTERN

__all__ = ["CancelRunBody", "CreateRunBody", "MintTokenBody", "ResolveBody"]

Tag = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CreateRunBody(_Closed):
    """``POST /runs`` (SPEC_NOTES §9)."""

    workflowId: str = Field(pattern=r"^[A-Za-z0-9._~:-]{1,128}$")
    inputs: Any = None
    residency: dict[str, Any] | None = None
    tenantId: str | None = Field(default=None, pattern=TENANT_ID_PATTERN)
    scopeId: str | None = Field(default=None, min_length=1, max_length=256)
    callbackUrl: str | None = Field(default=None, min_length=1, max_length=2048)
    mode: None = Field(default=None, description="'eval' is not offered by this host")
    evalSuiteRef: Any = None
    agentId: str | None = Field(default=None, pattern=AUTHOR_ID_PATTERN)
    configurable: dict[str, Any] | None = None
    tags: list[Tag] | None = Field(default=None, max_length=100)
    metadata: dict[str, Any] | None = None

    @field_validator("mode", mode="before")
    @classmethod
    def _no_eval(cls, value: Any) -> Any:
        if value is not None:
            raise ValueError(f"mode {value!r} is not supported by this host")
        return value


class CancelRunBody(_Closed):
    """``POST /runs/{runId}/cancel``."""

    reason: str | None = Field(default=None, min_length=1, max_length=1024)


class ResolveBody(_Closed):
    """``POST /runs/{runId}/interrupts/{nodeId}`` and ``POST /interrupts/{token}``."""

    resumeValue: Any


class MintTokenBody(_Closed):
    """``POST /runs/{runId}/interrupts/{nodeId}/tokens`` (host-defined)."""

    intent: Literal["resolve", "inspect"] = "resolve"
    # Not strict: 60.0 is the integer 60 in JSON; a string or a boolean still is not.
    ttlSeconds: int | None = Field(default=None, ge=1, le=7 * 24 * 3600, strict=False)
    approver: str | None = Field(default=None, min_length=1, max_length=256)
    """The subjectId the link votes as; required for a gate that counts votes."""

    @field_validator("ttlSeconds", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        if isinstance(value, (bool, str)):
            raise ValueError("ttlSeconds must be a JSON number of seconds")
        return value

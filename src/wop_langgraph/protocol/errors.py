"""One exception base for everything the project refuses, carrying the OpenWOP error code.

Every refusal the host, the store or the server raises is a :class:`WopError`: it knows its
registered OpenWOP ``code``, the HTTP ``status`` that code is registered with, and whether a
caller may retry. :meth:`WopError.envelope` renders the wire error envelope
``{error, message, details?}`` (errors.md), so no layer formats errors by hand.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ApprovalRejected",
    "CapabilityNotProvided",
    "CapabilityRequired",
    "Forbidden",
    "IdTenantMismatch",
    "IdempotencyInFlight",
    "IdempotencyKeyInvalid",
    "IdempotencyKeyMismatch",
    "InternalError",
    "InterruptAlreadyResolved",
    "InterruptExpired",
    "InterruptNotFound",
    "InterruptTokenInvalid",
    "NotFound",
    "PayloadTooLarge",
    "ProtocolVersionUnsupported",
    "RateLimited",
    "RunForbidden",
    "RunTerminal",
    "StoreError",
    "Unauthenticated",
    "UnsupportedMediaType",
    "UnsupportedStreamMode",
    "ValidationError",
    "WopError",
]


class WopError(Exception):
    """A refusal with an OpenWOP error code.

    Subclasses fix ``code``, ``status`` and ``retryable``; an instance carries the human
    ``message``, optional machine-readable ``details`` (never at the envelope's top level) and
    optional ``retry_after`` seconds, sent as the ``Retry-After`` header (the only place retry
    timing may appear on the wire).
    """

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500
    retryable: ClassVar[bool] = True

    def __init__(
        self, message: str, *, details: dict[str, Any] | None = None, retry_after: int | None = None
    ) -> None:
        if not message:
            raise ValueError("a WopError needs a non-empty message")
        super().__init__(message)
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def envelope(self) -> dict[str, Any]:
        """The error envelope ``{error, message, details?}`` as sent on the wire."""
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body

    def error_object(self) -> dict[str, Any]:
        """The ``_errorObject`` shape used inside events (``node.failed``, ``run.failed``)."""
        obj: dict[str, Any] = {"code": self.code, "message": self.message, "retryable": self.retryable}
        if self.details:
            obj["details"] = self.details
        return obj

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InternalError(WopError):
    """Something failed inside the host; the request may be retried."""


class StoreError(InternalError):
    """The database refused or lost an operation (closed engine, corrupt row, lost connection)."""


class ValidationError(WopError):
    """The request or value does not satisfy its schema; ``details.path`` names the failing member."""

    code = "validation_error"
    status = 400
    retryable = False


class IdempotencyKeyInvalid(WopError):
    """The ``Idempotency-Key`` header is outside ``^[A-Za-z0-9._~-]{22,128}$``."""

    code = "idempotency_key_invalid"
    status = 400
    retryable = False


class UnsupportedStreamMode(WopError):
    """The requested stream mode is not served; ``details.supported`` lists the ones that are."""

    code = "unsupported_stream_mode"
    status = 400
    retryable = False


class Unauthenticated(WopError):
    """No credential, or one the host does not know."""

    code = "unauthenticated"
    status = 401
    retryable = False


class InterruptTokenInvalid(WopError):
    """The interrupt token is malformed, names an unknown alg or kid, or its MAC does not match."""

    code = "interrupt_token_invalid"
    status = 401
    retryable = False


class Forbidden(WopError):
    """The caller is known but may not do this (missing scope, inspect-only token, not an approver)."""

    code = "forbidden"
    status = 403
    retryable = False


class RunForbidden(WopError):
    """The caller may not act on this run."""

    code = "run_forbidden"
    status = 403
    retryable = False


class IdTenantMismatch(WopError):
    """A tenant-bound id names another tenant; says nothing about whether the run exists."""

    code = "id_tenant_mismatch"
    status = 403
    retryable = False


class NotFound(WopError):
    """No such run or node."""

    code = "not_found"
    status = 404
    retryable = False


class InterruptNotFound(WopError):
    """No such interrupt."""

    code = "interrupt_not_found"
    status = 404
    retryable = False


class ProtocolVersionUnsupported(WopError):
    """``OpenWOP-Version`` names a major this host does not serve."""

    code = "protocol_version_unsupported"
    status = 406
    retryable = False


class InterruptAlreadyResolved(WopError):
    """The interrupt was already resolved, or its run was cancelled or completed."""

    code = "interrupt_already_resolved"
    status = 409
    retryable = False


class IdempotencyKeyMismatch(WopError):
    """The same ``Idempotency-Key`` was used before with a different request."""

    code = "idempotency_key_mismatch"
    status = 409
    retryable = False


class IdempotencyInFlight(WopError):
    """A request with the same ``Idempotency-Key`` is still being processed."""

    code = "idempotency_in_flight"
    status = 409
    retryable = False


class RunTerminal(WopError):
    """The run already completed, failed or was cancelled."""

    code = "run_terminal"
    status = 409
    retryable = False


class InterruptExpired(WopError):
    """The interrupt token is past its ``expiresAt``."""

    code = "interrupt_expired"
    status = 410
    retryable = False


class PayloadTooLarge(WopError):
    """The request body is larger than the host accepts."""

    code = "payload_too_large"
    status = 413
    retryable = False


class UnsupportedMediaType(WopError):
    """The request body is not ``application/json``."""

    code = "unsupported_media_type"
    status = 415
    retryable = False


class CapabilityRequired(WopError):
    """The workflow uses an interrupt kind the host has not enabled (conversations, credentials)."""

    code = "capability_required"
    status = 422
    retryable = False


class CapabilityNotProvided(WopError):
    """The request is valid, but this host is not set up to provide what it needs (e.g. links
    without a configured public URL); retrying does not help until the operator configures it."""

    code = "capability_not_provided"
    status = 422
    retryable = False


class RateLimited(WopError):
    """Too many requests (or open streams) for now; ``Retry-After`` says when to try again."""

    code = "rate_limited"
    status = 429
    retryable = True

    def __init__(self, message: str, *, details: dict[str, Any] | None = None, retry_after: int = 1) -> None:
        # errors.md: a 429 rate_limited MUST carry Retry-After.
        super().__init__(message, details=details, retry_after=retry_after)


class ApprovalRejected(WopError):
    """An approval gate was rejected (or timed out) and no rejection route continues past it.

    Used as ``error.code`` on ``node.failed`` / ``run.failed``; never retried, even under a
    LangGraph ``RetryPolicy``.
    """

    code = "approval_rejected"
    status = 409
    retryable = False

"""The registered OpenWOP v2 error codes (error-envelope.schema.json, generated from spec/v2/errors.json).

An error response's ``error`` must be one of these or a vendor code
(``<org>.<name>``, :data:`VENDOR_ERROR_CODE_PATTERN`). The list is the vendored envelope's
107 codes; ``tests/protocol`` fails if it drifts from the official file.
``approval_rejected`` is deliberately absent: it is used only as ``error.code`` inside events.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["REGISTERED_ERROR_CODES", "VENDOR_ERROR_CODE_PATTERN", "is_error_code"]

VENDOR_ERROR_CODE_PATTERN: Final = r"^(?!openwop\.)[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z][a-z0-9_]*$"
_VENDOR_RE: Final = re.compile(VENDOR_ERROR_CODE_PATTERN)

REGISTERED_ERROR_CODES: Final[frozenset[str]] = frozenset(
    {
        "audience_mismatch",
        "capability_not_provided",
        "capability_required",
        "client_version_unsupported",
        "connection_auth_metadata_mismatch",
        "connection_provider_conflict",
        "connection_provider_unresolved",
        "connector_action_unresolved",
        "connector_auth_declined",
        "connector_auth_expired",
        "credential_forbidden",
        "credential_lifetime_exceeded",
        "credential_not_found",
        "credential_required",
        "credential_revoked",
        "credential_scope_forbidden",
        "credential_scope_unsupported",
        "credential_unavailable",
        "delegation_chain_cyclic",
        "delegation_chain_too_long",
        "delegation_expired",
        "delegation_scope_amplified",
        "envelope_correlation_conflict",
        "envelope_invalid",
        "envelope_refusal",
        "envelope_truncation_unrecoverable",
        "event_type_unmapped",
        "forbidden",
        "force_engine_version_forbidden",
        "fork_point_invalid",
        "id_tenant_mismatch",
        "idempotency_in_flight",
        "idempotency_key_invalid",
        "idempotency_key_mismatch",
        "identity_unresolvable",
        "identity_unverified",
        "internal_error",
        "interop_version_unsupported",
        "interrupt_already_resolved",
        "interrupt_cancelled",
        "interrupt_expired",
        "interrupt_not_found",
        "interrupt_token_invalid",
        "key_revoked",
        "loop_limit_exceeded",
        "mcp_mrtr_rounds_exceeded",
        "mock_provider_forbidden",
        "not_found",
        "oauth_provider_unsupported",
        "oauth_scope_unsupported",
        "pack_dependency_conflict",
        "pack_dependency_cycle",
        "pack_engine_unsupported",
        "pack_integrity_failure",
        "pack_integrity_mismatch",
        "pack_kind_invalid",
        "pack_load_failure",
        "pack_lockfile_incomplete",
        "pack_namespace_unauthorized",
        "pack_peer_dependency_missing",
        "pack_peer_dependency_undefined",
        "pack_registry_unreachable",
        "pack_runtime_requirement_unmet",
        "pack_signature_invalid",
        "pack_validation_failed",
        "pack_version_not_found",
        "payload_too_large",
        "payload_unprojectable",
        "protocol_version_mismatch",
        "protocol_version_unsupported",
        "rate_limited",
        "recursion_limit_exceeded",
        "replay_context_summary_unavailable",
        "replay_diverged_at_refusal",
        "replay_memory_snapshot_unavailable",
        "replay_source_missing",
        "residency_unavailable",
        "run_already_active",
        "run_forbidden",
        "run_state_conflict",
        "run_terminal",
        "run_timeout",
        "runner_unavailable",
        "sandbox_capability_denied",
        "sandbox_escape_attempt",
        "sandbox_memory_exceeded",
        "sandbox_timeout",
        "schedule_horizon_exceeded",
        "sender_constraint_missing",
        "signature_not_available",
        "sub_chain_cycle",
        "sub_chain_depth_exceeded",
        "token_budget_exceeded",
        "unauthenticated",
        "unknown_envelope_kind",
        "unknown_schema_version",
        "unsupported_media_type",
        "unsupported_runtime",
        "unsupported_stream_mode",
        "until_in_past",
        "validation_error",
        "version_conflict",
        "webhook_endpoint_unverified",
        "webhook_url_rejected",
        "workspace_conflict",
        "workspace_membership_required",
        "workspace_too_large",
    }
)


def is_error_code(code: str) -> bool:
    """Whether ``code`` may appear as an error envelope's ``error`` (registered or vendor)."""
    return code in REGISTERED_ERROR_CODES or _VENDOR_RE.fullmatch(code) is not None

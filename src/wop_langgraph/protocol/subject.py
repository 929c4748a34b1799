"""Who acted: the ``Subject`` (identity.md §1) and the run ``owner`` block that carries it.

``subject.schema.json`` is not vendored (SOURCES.md); the shape here is the one identity.md §1
gives: ``{issuer, subjectId, tenant, lane, kind, keyClass?, actor?}``. ``actor`` (who acts on the
subject's behalf) is kept as an opaque object because its shape is not in the notes.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from wop_langgraph.protocol._base import WireModel
from wop_langgraph.protocol._types import JsonObject, NonEmptyStr
from wop_langgraph.protocol.ids import SubjectId, TenantId, WorkspaceId

__all__ = [
    "LEGACY_ISSUER",
    "SUBJECT_KINDS",
    "SUBJECT_LANES",
    "RunOwner",
    "Subject",
    "SubjectKind",
    "SubjectLane",
]

SubjectLane = Literal[
    "api-key", "oauth2", "oidc", "mtls", "saml", "scim", "ldap", "workload", "session", "anonymous"
]
SubjectKind = Literal["user", "agent", "anonymous", "workload"]
SUBJECT_LANES: Final[tuple[SubjectLane, ...]] = get_args(SubjectLane)
SUBJECT_KINDS: Final[tuple[SubjectKind, ...]] = get_args(SubjectKind)

LEGACY_ISSUER: Final = "urn:openwop:legacy"
"""The issuer stamped on runs that predate subjects."""


class Subject(WireModel):
    """An authenticated (or anonymous) party, issuer-scoped and never PII."""

    issuer: NonEmptyStr
    """E.g. ``urn:<host>:api-key`` for the api-key lane."""
    subject_id: SubjectId
    tenant: TenantId
    lane: SubjectLane
    kind: SubjectKind
    key_class: NonEmptyStr | None = None
    actor: JsonObject | None = None


class RunOwner(WireModel):
    """The run's owner (RFC 0170 §A.1): the same block on the snapshot and on ``run.started``."""

    tenant: TenantId
    workspace: WorkspaceId | None = None
    subject: Subject

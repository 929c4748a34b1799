"""OpenWOP v2 identifier grammars, minting, and the URL path projection (ids.schema.json, identity.md §5).

A tenant-bound id (``runId``, ``interruptId``, ...) is ``<tenantId>/<opaque>``. In a URL path it
travels as ONE segment, projected: every UTF-8 byte outside ``[A-Za-z0-9._-]`` becomes ``~``
and two uppercase hex digits (``acme/r-9f3c…`` → ``acme~2Fr-9f3c…``). :func:`project_id`
encodes; :func:`unproject_id` decodes ``~HH`` and the legacy ``%HH`` alike and refuses a ``~``
that does not start an escape.
"""

from __future__ import annotations

import re
import secrets
from typing import Annotated, Final

from pydantic import StringConstraints

from wop_langgraph.protocol.errors import ValidationError

__all__ = [
    "AUTHOR_ID_PATTERN",
    "EVENT_ID_PATTERN",
    "KEY_ID_PATTERN",
    "OPAQUE_PATTERN",
    "SUBJECT_ID_PATTERN",
    "TENANT_BOUND_ID_PATTERN",
    "TENANT_ID_PATTERN",
    "TYPE_ID_PATTERN",
    "WORKSPACE_ID_PATTERN",
    "AgentId",
    "EventId",
    "NodeId",
    "SubjectId",
    "TenantBoundId",
    "TenantId",
    "TypeId",
    "WorkflowId",
    "WorkspaceId",
    "is_tenant_bound_id",
    "mint_opaque",
    "mint_tenant_id",
    "project_id",
    "split_tenant_id",
    "unproject_id",
]

# The grammars of ids.schema.json, verbatim. They are matched as whole strings: Python's `$`
# would also accept a trailing newline, so the helpers below use `fullmatch`.
OPAQUE_PATTERN: Final = r"^[A-Za-z0-9._~-]{16,128}$"
TENANT_ID_PATTERN: Final = r"^(anon:)?[A-Za-z0-9._~-]{1,128}$"
TENANT_BOUND_ID_PATTERN: Final = r"^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$"
EVENT_ID_PATTERN: Final = OPAQUE_PATTERN
AUTHOR_ID_PATTERN: Final = r"^[A-Za-z0-9._~:-]{1,128}$"
"""``nodeId``, ``workflowId`` and ``agentId``: author-chosen."""
WORKSPACE_ID_PATTERN: Final = r"^[A-Za-z0-9._~-]{1,128}$"
KEY_ID_PATTERN: Final = r"^[A-Za-z0-9._~-]{1,128}$"
SUBJECT_ID_PATTERN: Final = r"^[^\s/]{1,256}$"
TYPE_ID_PATTERN: Final = r"^[a-z][a-z0-9_-]*(\.[a-z][a-zA-Z0-9_-]*)+$"

TenantBoundId = Annotated[str, StringConstraints(pattern=TENANT_BOUND_ID_PATTERN)]
TenantId = Annotated[str, StringConstraints(pattern=TENANT_ID_PATTERN)]
WorkspaceId = Annotated[str, StringConstraints(pattern=WORKSPACE_ID_PATTERN)]
EventId = Annotated[str, StringConstraints(pattern=EVENT_ID_PATTERN)]
NodeId = Annotated[str, StringConstraints(pattern=AUTHOR_ID_PATTERN)]
WorkflowId = Annotated[str, StringConstraints(pattern=AUTHOR_ID_PATTERN)]
AgentId = Annotated[str, StringConstraints(pattern=AUTHOR_ID_PATTERN)]
SubjectId = Annotated[str, StringConstraints(pattern=SUBJECT_ID_PATTERN)]
TypeId = Annotated[str, StringConstraints(pattern=TYPE_ID_PATTERN, max_length=256)]

_TENANT_BOUND_RE: Final = re.compile(TENANT_BOUND_ID_PATTERN)
_TENANT_RE: Final = re.compile(TENANT_ID_PATTERN)

# Bytes a projection copies verbatim; every other byte is escaped, `~` included.
_PASSTHROUGH: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_HEX: Final = frozenset("0123456789abcdefABCDEF")


def is_tenant_bound_id(value: str) -> bool:
    """Whether ``value`` has the tenant-bound form ``<tenantId>/<opaque>``."""
    return _TENANT_BOUND_RE.fullmatch(value) is not None


def split_tenant_id(value: str) -> tuple[str, str]:
    """Split a tenant-bound id into ``(tenant, opaque)``.

    Raises:
        ValidationError: ``value`` is not ``<tenantId>/<opaque>``.
    """
    if not is_tenant_bound_id(value):
        raise ValidationError(
            "not a tenant-bound id: expected <tenantId>/<opaque of 16-128 chars>",
            details={"path": "", "rule": "pattern", "pattern": TENANT_BOUND_ID_PATTERN},
        )
    tenant, _, opaque = value.partition("/")
    return tenant, opaque


def mint_opaque(nbytes: int = 16) -> str:
    """A fresh host-minted opaque token: url-safe base64 of ``nbytes`` random bytes.

    The alphabet is ``[A-Za-z0-9_-]``, so the token never contains ``~`` (which a host MUST NOT
    mint) and needs no escaping in a URL. The default 16 bytes give 22 characters and 128 bits.

    Raises:
        ValueError: ``nbytes`` would give fewer than 16 or more than 128 characters.
    """
    if not 12 <= nbytes <= 96:
        raise ValueError("nbytes must be 12..96 so the token has 16..128 characters")
    return secrets.token_urlsafe(nbytes)


def mint_tenant_id(tenant: str, *, nbytes: int = 16) -> str:
    """Mint a new tenant-bound id ``<tenant>/<opaque>`` (a ``runId``, an ``interruptId``, ...).

    Raises:
        ValidationError: ``tenant`` is outside the tenant grammar or contains ``~``: a minted
            tenant-bound id never contains ``~`` (identity.md §5), because the path projection
            is only injective over ids that do not.
    """
    if _TENANT_RE.fullmatch(tenant) is None or "~" in tenant:
        raise ValidationError(
            f"cannot mint an id for tenant {tenant!r}: expected {TENANT_ID_PATTERN} without '~'",
            details={"path": "", "rule": "pattern", "pattern": TENANT_ID_PATTERN},
        )
    return f"{tenant}/{mint_opaque(nbytes)}"


def project_id(value: str) -> str:
    """Project an id to its one-segment URL form (ids.schema.json, RFC 0184 §A.1).

    Every UTF-8 byte outside ``[A-Za-z0-9._-]`` becomes ``~`` + two UPPERCASE hex digits:
    ``/`` → ``~2F``, ``:`` → ``~3A``, ``~`` → ``~7E``. The codec is total and escapes its own
    marker, so :func:`unproject_id` inverts it exactly. Project once: the output of this
    function is a wire form, and projecting it again escapes it again.
    """
    return "".join(chr(b) if b in _PASSTHROUGH else f"~{b:02X}" for b in value.encode("utf-8"))


def unproject_id(wire: str) -> str:
    """Decode a path segment back to the id it carries.

    Both escapes are accepted, decoded before any grammar check: the projection's ``~HH`` and
    the legacy percent form ``%HH`` (hex digits of either case). A ``%`` that does not start an
    escape is kept as it is (the id grammar refuses it later).

    Raises:
        ValidationError: A ``~`` is not followed by two hex digits, or the decoded bytes are not
            UTF-8 (``400 validation_error``).
    """
    out = bytearray()
    i = 0
    while i < len(wire):
        ch = wire[i]
        escape = wire[i + 1 : i + 3]
        if ch in "~%" and len(escape) == 2 and all(c in _HEX for c in escape):
            out.append(int(escape, 16))
            i += 3
            continue
        if ch == "~":
            raise ValidationError(
                f"bad escape in id segment at offset {i}: '~' must be followed by two hex digits",
                details={"path": "", "rule": "projection", "offset": i},
            )
        out += ch.encode("utf-8")
        i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            "bad escape in id segment: the escaped bytes are not UTF-8",
            details={"path": "", "rule": "projection", "offset": exc.start},
        ) from exc

"""Signed inbox links (``owi1``): one approver's list of what waits for them, never an answer.

A token is ``owi1.hs256.<kid>.<payload>.<mac>``, signed with the same keyring as review tokens
(:class:`~wop_langgraph.tokens.SigningKeys`) over the ASCII text ``owi1.hs256.<kid>.<payload>``.
The payload is the canonical JSON ``{tenant, subject, expiresAt, intent: "inspect", nonce}``:
whose inbox (the approver's subjectId within their tenant), until when, and a 128-bit nonce.

The prefix is what keeps it from resolving anything: an ``ow2`` verifier refuses every token not
starting with ``ow2.``, and since the prefix is part of the signed text, no MAC of an inbox token
is the MAC of a review token. Holding an inbox link lets its bearer see the approver's pending
interrupts and get a fresh review link for each (which is what an emailed review link already
gives them, one interrupt at a time). Pure: no I/O; ``now`` is always passed in.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from wop_langgraph.protocol.errors import InterruptExpired
from wop_langgraph.tokens import (
    MAX_TOKEN_LENGTH,
    SigningKeys,
    _aware,
    _b64encode,
    _decode_json,
    _format_time,
    _invalid,
    is_approver,
)

__all__ = ["DEFAULT_INBOX_TTL", "InboxClaims", "MintedInbox", "mint_inbox", "verify_inbox"]

DEFAULT_INBOX_TTL: Final = timedelta(days=7)
_PREFIX: Final = "owi1.hs256."
_MEMBERS: Final = frozenset({"tenant", "subject", "expiresAt", "intent", "nonce"})
_NONCE = re.compile(r"[A-Za-z0-9_-]{22,64}")
_EXPIRES_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", re.ASCII)
_B64URL = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class InboxClaims:
    """What a verified inbox token says: whose inbox (``subject`` in ``tenant``) and until when."""

    tenant: str
    subject: str
    expires_at: datetime
    kid: str


@dataclass(frozen=True, slots=True)
class MintedInbox:
    """A freshly signed inbox token (a bearer credential: not in repr) and its claims."""

    token: str = field(repr=False)
    claims: InboxClaims


def mint_inbox(
    keys: SigningKeys, *, tenant: str, subject: str, now: datetime, ttl: timedelta = DEFAULT_INBOX_TTL
) -> MintedInbox:
    """Sign an inbox token for ``subject`` of ``tenant``, valid for ``ttl`` (a week by default).

    Raises:
        ValueError: a naive ``now``, a ``ttl`` under a millisecond, a tenant or a
            subject outside the subjectId grammar (no whitespace, '/').
    """
    now = _aware(now, "now")
    expires_at = now + ttl
    expires_at = expires_at.replace(microsecond=expires_at.microsecond // 1000 * 1000)
    if expires_at <= now:
        raise ValueError(f"mint_inbox: ttl must be at least a millisecond, got {ttl}")
    if not is_approver(tenant):
        raise ValueError("mint_inbox: tenant must be 1..256 characters, no whitespace or '/'")
    if not is_approver(subject):
        raise ValueError("mint_inbox: subject must be a subjectId (1..256 characters, no whitespace or '/')")
    body = {
        "tenant": tenant,
        "subject": subject,
        "expiresAt": _format_time(expires_at),
        "intent": "inspect",
        "nonce": secrets.token_urlsafe(16),
    }
    payload = _b64encode(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
    kid = keys.signing_kid
    signed = f"{_PREFIX}{kid}.{payload}"
    token = f"{signed}.{keys._mac(kid, signed)}"
    if len(token) > MAX_TOKEN_LENGTH:
        raise ValueError(f"mint_inbox: the token would be {len(token)} characters, over {MAX_TOKEN_LENGTH}")
    return MintedInbox(token=token, claims=InboxClaims(tenant, subject, expires_at, kid))


def verify_inbox(keys: SigningKeys, token: str, *, now: datetime) -> InboxClaims:
    """Check an inbox token's grammar, kid, MAC, payload and then its expiry.

    Raises:
        InterruptTokenInvalid: anything but a well-formed inbox token this host signed (a review
            token included); ``details.reason`` names the failed check.
        InterruptExpired: ``now >= expiresAt``.
    """
    now = _aware(now, "now")
    if len(token) > MAX_TOKEN_LENGTH:
        raise _invalid("too_long", f"the inbox token is longer than {MAX_TOKEN_LENGTH} characters")
    if not token.startswith(_PREFIX):
        raise _invalid("not_inbox", "this is not an inbox token (owi1.hs256.<kid>.<payload>.<mac>)")
    segments = token[len(_PREFIX) :].split(".")
    if len(segments) != 3:
        raise _invalid(
            "grammar", "the inbox token does not have the segments owi1.hs256.<kid>.<payload>.<mac>"
        )
    kid, payload, mac = segments
    if kid not in keys:
        raise _invalid("kid", "the inbox token's kid is not a configured signing key")
    if not _B64URL.fullmatch(payload) or not _B64URL.fullmatch(mac):
        raise _invalid("grammar", "the inbox token's payload or mac is not unpadded base64url")
    expected = keys._mac(kid, f"{_PREFIX}{kid}.{payload}")
    if not hmac.compare_digest(expected.encode("ascii"), mac.encode("ascii")):
        raise _invalid("mac", "the inbox token's mac does not match")
    body = _decode_json(payload)
    if (
        not isinstance(body, dict)
        or body.keys() != _MEMBERS
        or body["intent"] != "inspect"
        or not is_approver(body["tenant"])
        or not is_approver(body["subject"])
        or not isinstance(body["nonce"], str)
        or not _NONCE.fullmatch(body["nonce"])
        or not isinstance(body["expiresAt"], str)
        or not _EXPIRES_AT.fullmatch(body["expiresAt"])
    ):
        raise _invalid("payload", "the inbox token's payload members have the wrong types or values")
    expires_at = datetime.fromisoformat(body["expiresAt"][:-1] + "+00:00")
    if now >= expires_at:
        raise InterruptExpired(
            f"the inbox token expired at {body['expiresAt']}", details={"expiresAt": body["expiresAt"]}
        )
    return InboxClaims(body["tenant"], body["subject"], expires_at, kid)

"""DSSE envelopes (github.com/secure-systems-lab/dsse, protocol v1) signed with Ed25519.

The envelope is ``{"payloadType", "payload": base64(body), "signatures": [{"keyid", "sig"}]}``;
what is signed is the pre-authentication encoding ``PAE(type, body)``, so a signature cannot be
replayed on another payload type. Written here on ``cryptography`` (a few lines) rather than
taken from ``securesystemslib``, whose DSSE support brings its own key and signer abstractions
(and dependencies) for what is one encoding and one Ed25519 call.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature

from wop_langgraph.proof.keys import PublicKeys, ReceiptKeys

__all__ = ["IN_TOTO", "EnvelopeError", "Opened", "open_envelope", "pae", "sign_envelope"]

#: The payload type of an in-toto Statement.
IN_TOTO = "application/vnd.in-toto+json"


class EnvelopeError(Exception):
    """An envelope that does not verify: ``reason`` is ``malformed``, ``unknown-key``,
    ``bad-signature`` or ``revoked-key``."""

    def __init__(self, reason: str, message: str, kid: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.kid = kid


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(body), body)


def sign_envelope(body: bytes, keys: ReceiptKeys, payload_type: str = IN_TOTO) -> dict[str, Any]:
    """A DSSE envelope of ``body`` signed by ``keys``' signing key."""
    kid, signature = keys.sign(pae(payload_type, body))
    return {
        "payloadType": payload_type,
        "payload": base64.b64encode(body).decode("ascii"),
        "signatures": [{"keyid": kid, "sig": base64.b64encode(signature).decode("ascii")}],
    }


class Opened:
    """A verified envelope: its body and the kid that signed it (``revoked``: that key is)."""

    __slots__ = ("body", "kid", "revoked")

    def __init__(self, body: bytes, kid: str, revoked: bool) -> None:
        self.body = body
        self.kid = kid
        self.revoked = revoked


def open_envelope(envelope: Any, keys: PublicKeys, payload_type: str = IN_TOTO) -> Opened:
    """Verify ``envelope``: one of its signatures is a known key's over ``PAE(type, body)``.

    A signature of a revoked key verifies but is marked (the caller reports it).

    Raises:
        EnvelopeError: malformed, no signature of a known key, or a bad signature.
    """
    if not isinstance(envelope, Mapping) or envelope.get("payloadType") != payload_type:
        raise EnvelopeError("malformed", f"not a DSSE envelope of {payload_type}")
    signatures = envelope.get("signatures")
    try:
        body = base64.b64decode(str(envelope.get("payload")), validate=True)
    except (binascii.Error, ValueError):
        raise EnvelopeError("malformed", "the envelope's payload is not base64") from None
    if not isinstance(signatures, list) or not signatures:
        raise EnvelopeError("malformed", "the envelope has no signatures")
    message = pae(payload_type, body)
    unknown: str | None = None
    for entry in signatures:
        kid = entry.get("keyid") if isinstance(entry, Mapping) else None
        if not isinstance(kid, str):
            raise EnvelopeError("malformed", "a signature has no keyid")
        key = keys.keys.get(kid)
        if key is None:
            unknown = kid
            continue
        try:
            key.verify(base64.b64decode(str(entry.get("sig")), validate=True), message)
        except (InvalidSignature, binascii.Error, ValueError):
            raise EnvelopeError(
                "bad-signature", f"the signature of key {kid!r} does not verify", kid
            ) from None
        return Opened(body, kid, kid in keys.revoked)
    raise EnvelopeError("unknown-key", f"signed by key {unknown!r}, which is not a trusted key", unknown)

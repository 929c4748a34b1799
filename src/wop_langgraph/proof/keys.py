"""Ed25519 keys of receipts and checkpoints, named by ``kid`` and rotated like the token keys.

:class:`ReceiptKeys` is the host's keyring (``WOP_RECEIPT_KEYS=kid=<seed>,kid2=<seed>``: the
first signs, every one verifies; a retired key may keep only its public half, ``kid=pub:<x>``;
``WOP_RECEIPT_KEYS_REVOKED=kid,...`` names keys whose receipts must no longer be trusted).
:class:`PublicKeys` is what a verifier holds: the JWKS-style document the host serves and
exports (RFC 8037 ``OKP``/``Ed25519`` keys), read back.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

__all__ = ["PublicKeys", "ReceiptKeys", "b64url", "b64url_decode", "generate_seed"]

_KID = re.compile(r"[A-Za-z0-9_~.-]{1,128}")


def b64url(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Decode base64url with or without padding.

    Raises:
        ValueError: not base64url.
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def generate_seed() -> str:
    """A new private key: 32 random bytes, base64url (a ``WOP_RECEIPT_KEYS`` value)."""
    return b64url(Ed25519PrivateKey.generate().private_bytes_raw())


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def _seed(text: str) -> bytes:
    raw = bytes.fromhex(text) if re.fullmatch(r"[0-9a-fA-F]{64}", text) else b64url_decode(text)
    if len(raw) != 32:
        raise ValueError("an Ed25519 key is 32 bytes (64 hex digits or 43 base64url characters)")
    return raw


@dataclass(frozen=True, slots=True)
class PublicKeys:
    """Verification keys by kid, and the kids whose receipts are revoked."""

    keys: Mapping[str, Ed25519PublicKey]
    revoked: frozenset[str] = frozenset()

    @classmethod
    def from_jwks(cls, doc: Any) -> PublicKeys:
        """Read a JWKS-style document (``{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid", "x"}]}``;
        a key with ``"revoked": true`` is revoked).

        Raises:
            ValueError: not such a document.
        """
        if not isinstance(doc, Mapping) or not isinstance(doc.get("keys"), list):
            raise ValueError("a key document is an object with a 'keys' array")
        keys: dict[str, Ed25519PublicKey] = {}
        revoked: set[str] = set()
        for entry in doc["keys"]:
            if not isinstance(entry, Mapping) or entry.get("kty") != "OKP" or entry.get("crv") != "Ed25519":
                raise ValueError("every key must be {'kty': 'OKP', 'crv': 'Ed25519', 'kid', 'x'}")
            kid, x = entry.get("kid"), entry.get("x")
            if not isinstance(kid, str) or not isinstance(x, str):
                raise ValueError("every key needs a string 'kid' and 'x'")
            raw = b64url_decode(x)
            if len(raw) != 32:
                raise ValueError(f"key {kid!r}: 'x' is not a 32-byte Ed25519 public key")
            keys[kid] = Ed25519PublicKey.from_public_bytes(raw)
            if entry.get("revoked") is True:
                revoked.add(kid)
        return cls(keys, frozenset(revoked))

    def to_jwks(self) -> dict[str, Any]:
        """The JWKS-style document of these keys."""
        return {
            "keys": [
                {
                    "kty": "OKP",
                    "crv": "Ed25519",
                    "alg": "EdDSA",
                    "use": "sig",
                    "kid": kid,
                    "x": b64url(_raw_public(key)),
                    **({"revoked": True} if kid in self.revoked else {}),
                }
                for kid, key in self.keys.items()
            ]
        }


class ReceiptKeys:
    """The host's receipt keyring: the first private key signs, every key verifies.

    Rotation: put a new key first and keep the old one (or only its public half) so that the
    receipts it signed still verify; revoke a key (``revoked``) when its private half leaked:
    its receipts are then reported. Private keys never appear in ``repr``.
    """

    __slots__ = ("_private", "_public", "_revoked")

    def __init__(
        self,
        keys: Iterable[tuple[str, Ed25519PrivateKey | Ed25519PublicKey]],
        *,
        revoked: Iterable[str] = (),
    ) -> None:
        """Raises ValueError: a malformed or duplicate kid, no private key, or a revoked signer."""
        self._private: dict[str, Ed25519PrivateKey] = {}
        self._public: dict[str, Ed25519PublicKey] = {}
        for kid, key in keys:
            if not _KID.fullmatch(kid):
                raise ValueError("receipt keys: a kid must match [A-Za-z0-9_~.-]{1,128}")
            if kid in self._public:
                raise ValueError(f"receipt keys: kid {kid!r} is configured twice")
            if isinstance(key, Ed25519PrivateKey):
                self._private[kid] = key
                self._public[kid] = key.public_key()
            else:
                self._public[kid] = key
        if not self._private:
            raise ValueError("receipt keys: the first key must be a private key (kid=<32-byte seed>)")
        if next(iter(self._public)) not in self._private:
            raise ValueError("receipt keys: the first key signs, so it must be a private key")
        self._revoked = frozenset(revoked)
        if self.signing_kid in self._revoked:
            raise ValueError(f"receipt keys: the signing key {self.signing_kid!r} is revoked")

    @classmethod
    def parse(cls, text: str, *, revoked: str = "") -> ReceiptKeys:
        """Read ``kid=<seed>,kid2=pub:<x>`` (seed: 64 hex digits or base64url of 32 bytes) and a
        comma-separated list of revoked kids.

        Raises:
            ValueError: a malformed entry; the message names the entry, never a seed.
        """
        pairs: list[tuple[str, Ed25519PrivateKey | Ed25519PublicKey]] = []
        for position, entry in enumerate(text.split(","), start=1):
            kid, sep, value = (part.strip() for part in entry.partition("="))
            if not sep or not kid or not value:
                raise ValueError(f"receipt keys: entry {position} is not kid=<key>")
            try:
                if value.startswith("pub:"):
                    pairs.append((kid, Ed25519PublicKey.from_public_bytes(_seed(value[4:]))))
                else:
                    pairs.append((kid, Ed25519PrivateKey.from_private_bytes(_seed(value))))
            except ValueError as exc:
                raise ValueError(f"receipt keys: entry {position} (kid {kid!r}): {exc}") from None
        return cls(pairs, revoked=[k.strip() for k in revoked.split(",") if k.strip()])

    @property
    def signing_kid(self) -> str:
        """The kid that signs new receipts."""
        return next(iter(self._public))

    def sign(self, message: bytes) -> tuple[str, bytes]:
        """``message`` signed by the signing key: ``(kid, signature)``."""
        kid = self.signing_kid
        return kid, self._private[kid].sign(message)

    def public(self) -> PublicKeys:
        """The verification keys (every kid, revoked ones marked)."""
        return PublicKeys(dict(self._public), self._revoked)

    def __repr__(self) -> str:
        return f"ReceiptKeys(kids={list(self._public)!r}, revoked={sorted(self._revoked)!r})"

    __str__ = __repr__

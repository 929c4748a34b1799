"""Signed interrupt tokens (``ow2``): mint and verify, with key rotation by ``kid``.

A token is ``ow2.hs256.<kid>.<payload>.<mac>`` where ``payload`` is the base64url (no padding) of
the canonical JSON ``{runId, nodeId, interruptId, expiresAt, intent, nonce, approver?}`` and ``mac``
is the base64url (no padding) of HMAC-SHA256 under the secret named by ``kid`` over the ASCII text
``ow2.hs256.<kid>.<payload>``. The format is fixed by ARCHITECTURE.md ("Decisions already taken");
``nonce`` (128 random bits) makes every minted token unique, and ``approver`` names the subject a
link was minted for, whose vote it casts. A payload without a nonce (minted before nonces existed)
is refused like any other malformed payload.

The module is pure: no I/O, and every function that needs the time takes ``now``. Verification is
stateless; whether the interrupt is still pending is the host's question, asked afterwards.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal, NamedTuple, cast, get_args

from wop_langgraph.protocol.errors import Forbidden, InterruptExpired, InterruptTokenInvalid

__all__ = [
    "DEFAULT_TTL",
    "MAX_TOKEN_LENGTH",
    "Intent",
    "MintedToken",
    "SigningKeys",
    "TokenClaims",
    "is_approver",
    "mint",
    "require_intent",
    "verify",
    "verify_signed",
]

Intent = Literal["resolve", "inspect"]

DEFAULT_TTL: Final = timedelta(minutes=30)
MAX_TOKEN_LENGTH: Final = 4096
"""Longer input is refused before any decoding; a real token is a few hundred characters."""
MIN_SECRET_BYTES: Final = 16
MAX_INTERRUPT_ID_LENGTH: Final = 256

_PREFIX: Final = "ow2."
_ALG: Final = "hs256"
# The spec's keyId grammar is ^[A-Za-z0-9._~-]{1,128}$, but "." separates the token's segments,
# so a kid holding one could never be parsed back: this host refuses it when keys are configured.
_KID = re.compile(r"[A-Za-z0-9_~-]{1,128}")
_B64URL = re.compile(r"[A-Za-z0-9_-]+")
_MAC_LENGTH: Final = 43  # base64url of 32 bytes, without padding
# The whole grammar in one pass: a token that matches needs none of the per-segment checks below,
# which only run to name what a refused token got wrong.
_TOKEN = re.compile(r"ow2\.hs256\.([A-Za-z0-9_~-]{1,128})\.([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]{43}")
_TO_URLSAFE: Final = bytes.maketrans(b"+/", b"-_")
# base64url to base64 for binascii; the characters base64 has and base64url lacks become one it
# refuses, so a strict decoding also checks a payload's alphabet.
_FROM_URLSAFE: Final = bytes.maketrans(b"-_+/=", b"+/!!!")
_PADDING: Final = (b"", b"", b"==", b"=")  # by length % 4; 4n+1 characters cannot be decoded
_EXPIRES_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z", re.ASCII)
_PAYLOAD_MEMBERS: Final = frozenset({"runId", "nodeId", "interruptId", "expiresAt", "intent", "nonce"})
_ALL_MEMBERS: Final = _PAYLOAD_MEMBERS | {"approver"}
_NONCE = re.compile(r"[A-Za-z0-9_-]{22,64}")
_NONCE_BYTES: Final = 16
# The subjectId grammar (no whitespace, no '/'), minus control characters and lone surrogates,
# which no approver list can name and some databases cannot store.
_APPROVER = re.compile(r"[^\s/\x00-\x1f\x7f-\x9f\ud800-\udfff]{1,256}")
_INTENTS: Final = frozenset(get_args(Intent))
# The payload exactly as mint() writes it: members sorted, no whitespace, strings without escapes
# (their text is then their value). Each group repeats the check its member gets when parsed as
# JSON (_decode_json_payload), so both ways accept the same payloads: a JSON string without
# escapes, and for the approver also _APPROVER's grammar.
_STRING: Final = r'[^"\\\x00-\x1f]'
_CANONICAL = re.compile(
    r'\{(?:"approver":"([^"\\\s/\x00-\x1f\x7f-\x9f\ud800-\udfff]{1,256})",)?'
    r'"expiresAt":"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?Z)",'
    r'"intent":"(resolve|inspect)",'
    rf'"interruptId":"({_STRING}{{1,{MAX_INTERRUPT_ID_LENGTH}}})",'
    rf'"nodeId":"({_STRING}+)",'
    r'"nonce":"([A-Za-z0-9_-]{22,64})",'
    rf'"runId":"({_STRING}+)"\}}'
)


class SigningKeys:
    """An ordered ``kid -> secret`` keyring: the first key signs new tokens, every key verifies.

    Rotation: put the new key first and keep the old one until its tokens have expired; a token
    signed with a kid that is no longer configured stops verifying. Secrets never appear in
    ``repr`` or ``str``.
    """

    __slots__ = ("_pads", "_secrets")

    def __init__(self, keys: Mapping[str, str | bytes] | Iterable[tuple[str, str | bytes]]) -> None:
        """Hold the given keys, in order.

        Raises:
            ValueError: no keys, a duplicate or malformed kid, or a secret shorter than 16 bytes.
        """
        pairs = list(keys.items()) if isinstance(keys, Mapping) else list(keys)
        if not pairs:
            raise ValueError("signing keys: at least one kid=secret is required")
        secrets: dict[str, bytes] = {}
        for position, (kid, secret) in enumerate(pairs, start=1):
            # A malformed kid is not echoed: it may be a misplaced secret.
            if not isinstance(kid, str) or not _KID.fullmatch(kid):
                raise ValueError(
                    f"signing keys: the kid of entry {position} must match [A-Za-z0-9_~-]{{1,128}} "
                    "('.' is refused because it separates the token's segments)"
                )
            if kid in secrets:
                raise ValueError(f"signing keys: kid {kid!r} is configured twice")
            raw = secret.encode() if isinstance(secret, str) else bytes(secret)
            if len(raw) < MIN_SECRET_BYTES:
                raise ValueError(
                    f"signing keys: the secret of kid {kid!r} is shorter than {MIN_SECRET_BYTES} bytes"
                )
            secrets[kid] = raw
        self._secrets: Final = secrets
        self._pads: Final = {kid: _hmac_pads(raw) for kid, raw in secrets.items()}

    @classmethod
    def parse(cls, text: str) -> SigningKeys:
        """Read the environment format ``kid=secret,kid2=secret2`` (first entry signs).

        Whitespace around entries, kids and secrets is ignored; a secret may contain ``=`` (only
        the first one splits) but not ``,``.

        Raises:
            ValueError: an empty list or entry, an entry without ``=``, an empty secret, or any
                refusal of the constructor. The message names the entry, never the secret.
        """
        if not text.strip():
            raise ValueError("signing keys: empty; expected kid=secret[,kid2=secret2...]")
        pairs: list[tuple[str, str]] = []
        for position, entry in enumerate(text.split(","), start=1):
            if not entry.strip():
                raise ValueError(f"signing keys: entry {position} is empty")
            kid, sep, secret = entry.partition("=")
            if not sep:
                raise ValueError(f"signing keys: entry {position} has no '=' (expected kid=secret)")
            if not secret.strip():
                raise ValueError(f"signing keys: entry {position} (kid {kid.strip()!r}) has an empty secret")
            pairs.append((kid.strip(), secret.strip()))
        return cls(pairs)

    @property
    def signing_kid(self) -> str:
        """The kid that signs new tokens."""
        return next(iter(self._secrets))

    @property
    def kids(self) -> tuple[str, ...]:
        """Every configured kid, signing kid first."""
        return tuple(self._secrets)

    def __contains__(self, kid: object) -> bool:
        return kid in self._secrets

    def __len__(self) -> int:
        return len(self._secrets)

    def __repr__(self) -> str:
        return f"SigningKeys(kids={list(self._secrets)!r})"

    __str__ = __repr__

    def _mac(self, kid: str, signed: str) -> str:
        return _mac(self._pads[kid], signed.encode("ascii")).decode("ascii")


_Pads = tuple["hashlib._Hash", "hashlib._Hash"]
_IPAD: Final = bytes(x ^ 0x36 for x in range(256))
_OPAD: Final = bytes(x ^ 0x5C for x in range(256))


def _hmac_pads(secret: bytes) -> _Pads:
    """SHA-256 states that have hashed the key's inner and outer pad (RFC 2104), made once per key.

    Each MAC copies them instead of hashing the pads again: the key schedule is two of the
    compressions of a short token's MAC, and OpenSSL 3's one-shot HMAC looks its digest up per call.
    """
    block = hashlib.sha256().block_size
    key = hashlib.sha256(secret).digest() if len(secret) > block else secret
    key = key.ljust(block, b"\0")
    return hashlib.sha256(key.translate(_IPAD)), hashlib.sha256(key.translate(_OPAD))


def _mac(pads: _Pads, signed: bytes) -> bytes:
    """The unpadded base64url HMAC-SHA256 of ``signed`` under the key ``pads`` were made from."""
    inner, outer = pads[0].copy(), pads[1].copy()  # the originals are never updated: safe to share
    inner.update(signed)
    outer.update(inner.digest())
    return binascii.b2a_base64(outer.digest(), newline=False).translate(_TO_URLSAFE)[:_MAC_LENGTH]


class TokenClaims(NamedTuple):
    """What a verified token says: which interrupt, until when, for what, under which kid, for whom.

    ``approver`` is the subject the token was minted for (``None``: an anonymous link);
    ``nonce`` is the random value that makes the token unique. Immutable; a named tuple rather
    than a frozen dataclass because it is made on every verification, and a frozen dataclass
    takes several times as long to construct (one ``object.__setattr__`` per field).
    """

    run_id: str
    node_id: str
    interrupt_id: str
    expires_at: datetime
    intent: Intent
    kid: str
    nonce: str
    approver: str | None = None


_new_claims: Final = tuple.__new__


@dataclass(frozen=True, slots=True)
class MintedToken:
    """A freshly signed token with its expiry and claims (the token is a bearer credential: not in repr)."""

    token: str = field(repr=False)
    expires_at: datetime
    claims: TokenClaims


def mint(
    keys: SigningKeys,
    *,
    run_id: str,
    node_id: str,
    interrupt_id: str,
    intent: Intent = "resolve",
    now: datetime,
    ttl: timedelta = DEFAULT_TTL,
    not_after: datetime | None = None,
    approver: str | None = None,
    nonce: str | None = None,
) -> MintedToken:
    """Sign a token for one interrupt with the first key of ``keys``.

    The token expires ``ttl`` after ``now`` (30 minutes by default), or at ``not_after`` (the
    interrupt's deadline from ``timeoutMs``) when that comes first. ``expiresAt`` is written with
    millisecond precision, rounded down so it never passes the cap. ``approver`` names the subject
    the token is for (checked against the gate by the caller, not here). Every call draws a fresh
    128-bit ``nonce`` unless one is given (tests), so two mints never produce the same token.

    Raises:
        ValueError: naive datetimes, a ``ttl`` <= 0, a ``not_after`` not after ``now``, an unknown
            intent, empty ids, an ``interrupt_id`` over 256 characters, an approver outside the
            subjectId grammar, a nonce outside ``[A-Za-z0-9_-]{22,64}``, or a token that would
            exceed :data:`MAX_TOKEN_LENGTH`.
    """
    now = _aware(now, "now")
    if ttl <= timedelta(0):
        raise ValueError(f"mint: ttl must be positive, got {ttl}")
    expires_at = now + ttl
    if not_after is not None:
        not_after = _aware(not_after, "not_after")
        if not_after <= now:
            raise ValueError(
                f"mint: not_after {_format_time(not_after)} is not after now {_format_time(now)}"
            )
        expires_at = min(expires_at, not_after)
    expires_at = expires_at.replace(microsecond=expires_at.microsecond // 1000 * 1000)
    if expires_at <= now:
        raise ValueError("mint: the lifetime is shorter than expiresAt's millisecond resolution")
    if intent not in get_args(Intent):
        raise ValueError(f"mint: intent must be 'resolve' or 'inspect', got {intent!r}")
    problem = _ids_problem(run_id, node_id, interrupt_id)
    if problem:
        raise ValueError(f"mint: {problem}")
    if approver is not None and not is_approver(approver):
        raise ValueError("mint: approver must be a subjectId (1..256 characters, no whitespace or '/')")
    nonce = secrets.token_urlsafe(_NONCE_BYTES) if nonce is None else nonce
    if not _NONCE.fullmatch(nonce):
        raise ValueError("mint: nonce must be 22..64 characters of unpadded base64url")

    kid = keys.signing_kid
    claims = TokenClaims(run_id, node_id, interrupt_id, expires_at, intent, kid, nonce, approver)
    body = {
        "runId": run_id,
        "nodeId": node_id,
        "interruptId": interrupt_id,
        "expiresAt": _format_time(expires_at),
        "intent": intent,
        "nonce": nonce,
    }
    if approver is not None:
        body["approver"] = approver
    # Canonical JSON: sorted members, no whitespace, UTF-8; for string-only members this is the
    # RFC 8785 form, so another implementation can rebuild the same bytes.
    payload_json = json.dumps(
        body,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    try:
        payload = _b64encode(payload_json.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError("mint: ids must be valid Unicode text (no lone surrogates)") from exc
    signed = f"{_PREFIX}{_ALG}.{kid}.{payload}"
    token = f"{signed}.{keys._mac(kid, signed)}"
    if len(token) > MAX_TOKEN_LENGTH:
        raise ValueError(f"mint: the token would be {len(token)} characters, over {MAX_TOKEN_LENGTH}")
    return MintedToken(token=token, expires_at=expires_at, claims=claims)


def verify(keys: SigningKeys, token: str, *, now: datetime) -> TokenClaims:
    """Check a token's grammar, alg, kid, MAC, payload and expiry, in that order.

    Expiry is judged only after the MAC verified, so an unauthenticated caller cannot learn
    anything from a forged ``expiresAt``.

    Raises:
        InterruptTokenInvalid: any failure up to and including the payload (401); the message
            names the failed check and ``details.reason`` repeats it as a word.
        InterruptExpired: ``now >= expiresAt`` (410).
        ValueError: ``now`` is naive.
    """
    if now.tzinfo is not UTC and now.utcoffset() is None:  # only compared, so not converted
        raise ValueError("now must be a timezone-aware datetime")
    claims = verify_signed(keys, token)
    if now >= claims.expires_at:
        raise InterruptExpired(
            f"the interrupt token expired at {_format_time(claims.expires_at)}",
            details={"expiresAt": _format_time(claims.expires_at)},
        )
    return claims


def verify_signed(keys: SigningKeys, token: str) -> TokenClaims:
    """Check a token's grammar, alg, kid, MAC and payload, but not its expiry.

    For a caller that must tell who signed what even after the token expired: an idempotent
    replay of a request made while the token was valid answers its recorded response (the MAC
    still proves the token is this host's). Anything that acts on the token uses :func:`verify`.

    Raises:
        InterruptTokenInvalid: as :func:`verify`.
    """
    if len(token) > MAX_TOKEN_LENGTH:  # first, in O(1): nothing of an oversized token is read
        raise _invalid("too_long", f"the token is longer than {MAX_TOKEN_LENGTH} characters")
    # A token as mint() writes it is checked without the grammar's pattern, which costs as much
    # as the MAC: the prefix; a configured kid (so one in the kid grammar, without '.') up to the
    # first '.'; a non-empty payload; '.' and 43 characters that equal the expected MAC's text
    # (base64url, so the mac segment is). The payload's alphabet and length are checked by
    # decoding it strictly (_canonical_claims), after the MAC. Anything else, and every refusal
    # but a wrong MAC, goes through _verify_in_full, which checks step by step and names what
    # failed; the outcome is the same either way.
    kid_end = token.find(".", _KID_START)
    if kid_end > 0 and token.startswith(_SIGNED_PREFIX) and token.isascii():
        kid = token[_KID_START:kid_end]
        pads = keys._pads.get(kid)
        if pads is not None and kid_end < len(token) - _MAC_LENGTH - 2 and token[_MAC_DOT] == ".":
            text = token.encode("ascii")
            # The encoded texts are compared, not the decoded bytes: base64 ignores the low bits
            # of the last character, so comparing bytes would let a tampered mac character through.
            if hmac.compare_digest(_mac(pads, text[:_MAC_DOT]), text[_MAC_DOT + 1 :]):
                payload = text[kid_end + 1 : _MAC_DOT]
                claims = _VERIFIED.get(payload)
                if claims is not None and claims.kid == kid:
                    return claims
                claims = _canonical_claims(payload, kid)
                if claims is not None:
                    if len(_VERIFIED) >= _VERIFIED_SIZE:
                        _VERIFIED.clear()  # an LRU's bookkeeping would cost every new token more
                    _VERIFIED[payload] = claims
                    return claims
            else:
                grammar = _TOKEN.fullmatch(token)
                if grammar is not None and (grammar.end(2) - grammar.start(2)) % 4 != 1:
                    raise _invalid("mac", "the token's mac does not match")
    return _verify_in_full(keys, token)


_SIGNED_PREFIX: Final = f"{_PREFIX}{_ALG}."
_KID_START: Final = len(_SIGNED_PREFIX)
_MAC_DOT: Final = -_MAC_LENGTH - 1  # where the '.' before the mac is
# The claims of recent payloads in mint()'s form whose MAC verified, by the payload's bytes: a
# link opened again and again, or a flood of requests carrying one valid token, decodes its
# payload once; the grammar, kid and MAC are still checked on every call, and expiry and intent
# by the callers. Only payloads this host signed get here, so nobody without a signing key can
# fill it; claims are immutable (safe to share). Small, because a bigger one made every token
# seen for the first time slower (its entries fall out of the CPU caches); each dict operation
# is atomic under the GIL, and a lost entry only costs a decode.
_VERIFIED: Final[dict[bytes, TokenClaims]] = {}
_VERIFIED_SIZE: Final = 128


def _verify_in_full(keys: SigningKeys, token: str) -> TokenClaims:
    """:func:`verify_signed` step by step, naming the first check that fails, in grammar order.

    Takes every token the fast path leaves: all refusals but a wrong MAC, and payloads in
    another form than mint()'s (JSON another implementation may write).
    """
    grammar = _TOKEN.fullmatch(token)
    if grammar is None:
        raise _grammar_refusal(token)
    kid = grammar.group(1)
    start, end = grammar.span(2)
    if (end - start) % 4 == 1:  # a length no base64 text can have
        raise _invalid("grammar", "the token's payload is not unpadded base64url")
    pads = keys._pads.get(kid)
    if pads is None:
        raise _invalid("kid", "the token's kid is not a configured signing key")
    text = token.encode("ascii")  # the grammar admits ASCII only
    if not hmac.compare_digest(_mac(pads, text[:_MAC_DOT]), text[_MAC_DOT + 1 :]):
        raise _invalid("mac", "the token's mac does not match")
    return _decode_payload(text[start:end], kid)


def _grammar_refusal(token: str) -> InterruptTokenInvalid:
    """What a token outside the grammar got wrong, checked in the order the grammar is read.

    Decided by the prefix, never by segment count (SPEC_NOTES §5); legacy v1 tokens are refused
    because this host never minted any.
    """
    if not token.startswith(_PREFIX):
        return _invalid("not_ow2", "the token does not start with 'ow2.' (only ow2 tokens are accepted)")
    segments = token.split(".")
    if len(segments) != 5:
        return _invalid(
            "grammar", "the token does not have the five segments ow2.<alg>.<kid>.<payload>.<mac>"
        )
    _, alg, kid, payload, mac = segments
    if alg != _ALG:
        return _invalid("alg", "the token's alg is not supported (only hs256)")
    if not _KID.fullmatch(kid):
        return _invalid("grammar", "the token's kid is outside the keyId grammar")
    if not _B64URL.fullmatch(payload) or len(payload) % 4 == 1:
        return _invalid("grammar", "the token's payload is not unpadded base64url")
    if len(mac) != _MAC_LENGTH or not _B64URL.fullmatch(mac):
        return _invalid("grammar", "the token's mac is not 43 characters of unpadded base64url")
    return _invalid("grammar", "the token does not have the grammar ow2.<alg>.<kid>.<payload>.<mac>")


def is_approver(text: object) -> bool:
    """Whether ``text`` can name the approver of a token (a subjectId without control characters)."""
    return isinstance(text, str) and _APPROVER.fullmatch(text) is not None


def require_intent(claims: TokenClaims, intent: Intent) -> None:
    """Check that a token may be used for ``intent``.

    A ``resolve`` token authorizes both reading and resolving; an ``inspect`` token only reading.

    Raises:
        Forbidden: a resolve was attempted with an inspect token (403).
    """
    if intent == "resolve" and claims.intent != "resolve":
        raise Forbidden(
            "this interrupt token only allows inspecting the interrupt, not resolving it",
            details={"intent": claims.intent},
        )


def _decode_payload(payload: bytes, kid: str) -> TokenClaims:
    """The claims of a payload (unpadded base64url, checked by the grammar) whose MAC verified.

    A payload in the canonical form :func:`mint` writes is read by :func:`_canonical_claims`;
    any other JSON is parsed and checked member by member, with the same outcome.
    """
    claims = _canonical_claims(payload, kid)
    if claims is not None:
        return claims
    try:
        text = _b64decode(payload).decode()
    except ValueError as exc:  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise _invalid("payload", "the token's payload is not base64url-encoded JSON") from exc
    return _decode_json_payload(text, kid)


def _canonical_claims(payload: bytes, kid: str) -> TokenClaims | None:
    """The claims of a payload whose MAC verified if it is in mint()'s form, else ``None``.

    One pattern reads and checks every member (no duplicates are possible in it). ``None``
    (not unpadded base64url, not UTF-8, another form, an impossible date) leaves the payload to
    :func:`_decode_json_payload`, which accepts and refuses what this accepts and refuses.
    """
    try:
        canonical = _CANONICAL.fullmatch(_b64decode(payload).decode())
        if canonical is None:
            return None
        approver, expires_text, intent, interrupt_id, node_id, nonce, run_id = canonical.groups()
        expires_at = datetime.fromisoformat(expires_text)  # 3.11 reads the trailing Z as UTC
    except ValueError:  # binascii.Error, UnicodeDecodeError, or a date such as month 13
        return None
    # tuple.__new__ skips the named tuple's Python-level __new__ (a frame per token).
    return _new_claims(TokenClaims, (run_id, node_id, interrupt_id, expires_at, intent, kid, nonce, approver))


def _b64decode(payload: bytes) -> bytes:
    """Unpadded base64url, strictly: any other character, or a length of 4n+1, raises binascii.Error."""
    return binascii.a2b_base64(
        payload.translate(_FROM_URLSAFE) + _PADDING[len(payload) % 4], strict_mode=True
    )


def _decode_json_payload(text: str, kid: str) -> TokenClaims:
    try:
        body = _JSON.decode(text)
    except (ValueError, RecursionError) as exc:
        raise _invalid("payload", "the token's payload is not base64url-encoded JSON") from exc
    if not isinstance(body, dict) or not _PAYLOAD_MEMBERS <= body.keys() <= _ALL_MEMBERS:
        raise _invalid("payload", "the token's payload does not have exactly the expected members")
    run_id, node_id, interrupt_id = body["runId"], body["nodeId"], body["interruptId"]
    expires_text, intent, nonce = body["expiresAt"], body["intent"], body["nonce"]
    approver = body.get("approver")
    if (
        _ids_problem(run_id, node_id, interrupt_id)
        or not isinstance(intent, str)
        or intent not in _INTENTS
        or not isinstance(nonce, str)
        or not _NONCE.fullmatch(nonce)
        or ("approver" in body and not is_approver(approver))
    ):
        raise _invalid("payload", "the token's payload members have the wrong types or values")
    if not isinstance(expires_text, str) or not _EXPIRES_AT.fullmatch(expires_text):
        raise _invalid("payload", "the token's expiresAt is not an ISO 8601 UTC timestamp ending in Z")
    expires_at = _expires_at(expires_text)
    return TokenClaims(run_id, node_id, interrupt_id, expires_at, cast(Intent, intent), kid, nonce, approver)


def _decode_json(payload: str) -> Any:
    """The JSON a base64url payload holds (duplicate members refused).

    Raises:
        InterruptTokenInvalid: not base64url-encoded JSON.
    """
    try:
        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (binascii.Error, ValueError, RecursionError) as exc:
        raise _invalid("payload", "the token's payload is not base64url-encoded JSON") from exc


def _expires_at(text: str) -> datetime:
    """``expiresAt`` (already matched by :data:`_EXPIRES_AT`) as an aware datetime."""
    try:
        return datetime.fromisoformat(text)  # 3.11 reads the trailing Z as UTC
    except ValueError as exc:
        raise _invalid("payload", "the token's expiresAt is not a valid date and time") from exc


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    body = dict(pairs)
    if len(body) != len(pairs):
        raise ValueError("duplicate member")
    return body


# Made once: json.loads(..., object_pairs_hook=...) builds a new decoder on every call.
_JSON: Final = json.JSONDecoder(object_pairs_hook=_no_duplicates)


def _ids_problem(run_id: object, node_id: object, interrupt_id: object) -> str | None:
    for name, value in (("runId", run_id), ("nodeId", node_id), ("interruptId", interrupt_id)):
        if not isinstance(value, str) or not value:
            return f"{name} must be a non-empty string"
    if isinstance(interrupt_id, str) and len(interrupt_id) > MAX_INTERRUPT_ID_LENGTH:
        return f"interruptId is longer than {MAX_INTERRUPT_ID_LENGTH} characters"
    return None


def _invalid(reason: str, message: str) -> InterruptTokenInvalid:
    return InterruptTokenInvalid(message, details={"reason": reason})


def _aware(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime")
    return moment.astimezone(UTC)


def _format_time(moment: datetime) -> str:
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")

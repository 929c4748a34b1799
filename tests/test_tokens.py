"""The ow2 interrupt token: minting, every refusal, rotation, expiry and the conformance probes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wop_langgraph.protocol.errors import Forbidden, InterruptExpired, InterruptTokenInvalid
from wop_langgraph.tokens import (
    DEFAULT_TTL,
    MAX_TOKEN_LENGTH,
    MintedToken,
    SigningKeys,
    TokenClaims,
    mint,
    require_intent,
    verify,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
SECRET_NEW = "new-secret-0123456789abcdef"
SECRET_OLD = "old-secret-0123456789abcdef"
KEYS = SigningKeys({"k2": SECRET_NEW, "k1": SECRET_OLD})
B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
NONCE = "n0nce-0123456789abcdefg"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(secret: str, kid: str, payload: str) -> str:
    """An independent implementation of the token's MAC, from the design's definition."""
    signed = f"ow2.hs256.{kid}.{payload}"
    return f"{signed}.{b64(hmac.new(secret.encode(), signed.encode(), hashlib.sha256).digest())}"


def payload_of(body: Any) -> str:
    return b64(json.dumps(body).encode())


def good_body(**changes: Any) -> dict[str, Any]:
    body = {
        "runId": "acme/run-1",
        "nodeId": "review",
        "interruptId": "k-1",
        "expiresAt": "2025-06-01T12:30:00.000Z",
        "intent": "resolve",
        "nonce": NONCE,
    }
    body.update(changes)
    return body


def minted(**kwargs: Any) -> MintedToken:
    args: dict[str, Any] = {"run_id": "acme/run-1", "node_id": "review", "interrupt_id": "k-1", "now": NOW}
    args.update(kwargs)
    return mint(KEYS, **args)


def refusal(token: str, keys: SigningKeys = KEYS, now: datetime = NOW) -> InterruptTokenInvalid:
    with pytest.raises(InterruptTokenInvalid) as caught:
        verify(keys, token, now=now)
    assert caught.value.code == "interrupt_token_invalid"
    assert caught.value.status == 401
    assert caught.value.retryable is False
    return caught.value


# --- mint and verify -------------------------------------------------------------------------


def test_round_trip() -> None:
    token = minted()
    assert token.token.startswith("ow2.hs256.k2.")
    assert token.expires_at == NOW + DEFAULT_TTL
    claims = verify(KEYS, token.token, now=NOW)
    assert claims == TokenClaims(
        "acme/run-1", "review", "k-1", NOW + timedelta(minutes=30), "resolve", "k2", token.claims.nonce
    )
    assert claims == token.claims
    assert claims.approver is None
    assert len(claims.nonce) == 22  # 128 random bits, base64url


def test_approver_round_trips() -> None:
    token = minted(approver="alice@acme.test")
    assert verify(KEYS, token.token, now=NOW).approver == "alice@acme.test"
    assert token.claims.approver == "alice@acme.test"


def test_every_mint_is_unique_even_with_identical_arguments() -> None:
    tokens = {minted().token for _ in range(2000)}
    assert len(tokens) == 2000
    assert len({verify(KEYS, t, now=NOW).nonce for t in tokens}) == 2000


def test_payload_is_canonical_json_and_mac_is_hmac_sha256_over_the_signed_text() -> None:
    token = minted(interrupt_id="ключ-1", nonce=NONCE, approver="bob").token
    prefix, alg, kid, payload, mac = token.split(".")
    assert (prefix, alg, kid) == ("ow2", "hs256", "k2")
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    assert (
        raw
        == (
            '{"approver":"bob","expiresAt":"2025-06-01T12:30:00.000Z","intent":"resolve",'
            f'"interruptId":"ключ-1","nodeId":"review","nonce":"{NONCE}","runId":"acme/run-1"}}'
        ).encode()
    )
    assert "=" not in payload + mac
    assert sign(SECRET_NEW, "k2", payload) == token


def test_unicode_ids_round_trip() -> None:
    token = minted(run_id="tenant/ü", node_id="outer/inner", interrupt_id="x" * 256)
    assert verify(KEYS, token.token, now=NOW).interrupt_id == "x" * 256


def test_expires_at_has_millisecond_precision_rounded_down() -> None:
    now = datetime(2025, 6, 1, 12, 0, 0, 999_999, tzinfo=UTC)
    token = minted(now=now)
    assert token.expires_at == datetime(2025, 6, 1, 12, 30, 0, 999_000, tzinfo=UTC)
    assert verify(KEYS, token.token, now=now).expires_at == token.expires_at


def test_non_utc_clock_is_normalised() -> None:
    now = NOW.astimezone(timezone(timedelta(hours=2)))
    token = minted(now=now)
    assert token.expires_at.tzinfo == UTC
    assert verify(KEYS, token.token, now=now).expires_at == NOW + DEFAULT_TTL


def test_minted_token_repr_hides_the_token() -> None:
    token = minted()
    assert token.token not in repr(token)


# --- lifetime ---------------------------------------------------------------------------------


def test_expiry_boundary_with_injected_clock() -> None:
    token = minted(ttl=timedelta(seconds=10)).token
    expires = NOW + timedelta(seconds=10)
    assert verify(KEYS, token, now=expires - timedelta(milliseconds=1)).expires_at == expires
    for now in (expires, expires + timedelta(days=365)):
        with pytest.raises(InterruptExpired) as caught:
            verify(KEYS, token, now=now)
        assert (caught.value.code, caught.value.status) == ("interrupt_expired", 410)
        assert caught.value.details == {"expiresAt": "2025-06-01T12:00:10.000Z"}


def test_lifetime_is_capped_at_not_after() -> None:
    deadline = NOW + timedelta(minutes=5)
    token = minted(not_after=deadline)
    assert token.expires_at == deadline
    with pytest.raises(InterruptExpired):
        verify(KEYS, token.token, now=deadline)
    # A later deadline does not extend the default lifetime.
    assert minted(not_after=NOW + timedelta(hours=5)).expires_at == NOW + DEFAULT_TTL


def test_cap_is_never_exceeded_by_rounding() -> None:
    deadline = NOW + timedelta(minutes=1, microseconds=1500)
    assert minted(not_after=deadline).expires_at == NOW + timedelta(minutes=1, milliseconds=1)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"ttl": timedelta(0)}, "ttl must be positive"),
        ({"ttl": timedelta(seconds=-1)}, "ttl must be positive"),
        ({"not_after": NOW}, "not after now"),
        ({"not_after": NOW - timedelta(seconds=1)}, "not after now"),
        ({"ttl": timedelta(microseconds=500)}, "millisecond resolution"),
        ({"now": datetime(2025, 6, 1)}, "timezone-aware"),
        ({"not_after": datetime(2025, 6, 2)}, "timezone-aware"),
        ({"intent": "admin"}, "intent"),
        ({"run_id": ""}, "runId"),
        ({"node_id": 3}, "nodeId"),
        ({"interrupt_id": "x" * 257}, "longer than 256"),
        ({"interrupt_id": "\ud800"}, "surrogates"),
        ({"node_id": "n" * MAX_TOKEN_LENGTH}, "over 4096"),
        ({"approver": ""}, "approver must be a subjectId"),
        ({"approver": "a b"}, "approver must be a subjectId"),
        ({"approver": "acme/alice"}, "approver must be a subjectId"),
        ({"approver": "a\x00"}, "approver must be a subjectId"),
        ({"approver": "\ud800"}, "approver must be a subjectId"),
        ({"approver": "a" * 257}, "approver must be a subjectId"),
        ({"nonce": "short"}, "nonce must be"),
        ({"nonce": "n" * 21 + "="}, "nonce must be"),
    ],
)
def test_mint_refuses_bad_arguments(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        minted(**kwargs)


def test_verify_refuses_a_naive_clock() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        verify(KEYS, minted().token, now=datetime(2025, 6, 1))


# --- refusals ---------------------------------------------------------------------------------

CONFORMANCE_PROBES = [
    "b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef",
    "ow2.hs256.nokid.b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef",
]


@pytest.mark.parametrize("probe", CONFORMANCE_PROBES)
def test_conformance_probes_are_invalid(probe: str) -> None:
    refusal(probe)


def _valid() -> list[str]:
    return minted().token.split(".")


def _with(index: int, value: str) -> str:
    segments = _valid()
    segments[index] = value
    return ".".join(segments)


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        ("", "not_ow2"),
        ("x" * (MAX_TOKEN_LENGTH + 1), "too_long"),
        ("ow2." + "A" * MAX_TOKEN_LENGTH, "too_long"),
        ("OW2.hs256.k2.e30.AAAA", "not_ow2"),
        ("ow1.hs256.k2.e30.AAAA", "not_ow2"),
        ("legacy-v1-token.e30.AAAA", "not_ow2"),
        (" " + ".".join(_valid()), "not_ow2"),
        ("ow2.", "grammar"),
        ("ow2.hs256.k2.e30", "grammar"),
        (".".join([*_valid(), "extra"]), "grammar"),
        (".".join(_valid()) + ".", "grammar"),
        (_with(1, "HS256"), "alg"),
        (_with(1, "rs256"), "alg"),
        (_with(1, ""), "alg"),
        (_with(2, ""), "grammar"),
        (_with(2, "k" * 129), "grammar"),
        (_with(2, "k 2"), "grammar"),
        (_with(2, "k3"), "kid"),
        (_with(2, "k1"), "mac"),  # held kid, but the mac was made with k2
        (_with(3, ""), "grammar"),
        (_with(3, _valid()[3] + "="), "grammar"),
        (_with(3, _valid()[3].replace("e", "+", 1)), "grammar"),
        (_with(3, "A"), "grammar"),  # a length no base64 text can have
        (_with(4, ""), "grammar"),
        (_with(4, _valid()[4] + "="), "grammar"),
        (_with(4, _valid()[4][:-1]), "grammar"),
        (_with(4, _valid()[4] + "A"), "grammar"),
        (_with(4, "/" + _valid()[4][1:]), "grammar"),
        (_with(4, "A" * 43), "mac"),
        (".".join(_valid()).replace("ow2.", "ow2.\u00e9", 1), "alg"),
    ],
)
def test_refusals_name_the_failed_check(token: str, reason: str) -> None:
    error = refusal(token)
    assert error.details == {"reason": reason}
    assert SECRET_NEW not in error.message
    assert SECRET_OLD not in error.message


@pytest.mark.parametrize("segment", [3, 4])
def test_changing_any_single_character_of_payload_or_mac_fails(segment: int) -> None:
    segments = _valid()
    original = segments[segment]
    for position in range(len(original)):
        for replacement in {"A", "B", "_"} - {original[position]}:
            segments[segment] = original[:position] + replacement + original[position + 1 :]
            refusal(".".join(segments))
    segments[segment] = original
    verify(KEYS, ".".join(segments), now=NOW)


def test_expiry_is_checked_only_after_the_mac() -> None:
    token = minted(ttl=timedelta(seconds=1)).token
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert refusal(tampered, now=NOW + timedelta(days=1)).details == {"reason": "mac"}


@pytest.mark.parametrize(
    "payload",
    [
        payload_of(good_body(intent="admin")),
        payload_of(good_body(runId="")),
        payload_of(good_body(nodeId=7)),
        payload_of(good_body(interruptId=None)),
        payload_of(good_body(interruptId="x" * 257)),
        payload_of(good_body(expiresAt="2025-06-01T12:30:00+00:00")),
        payload_of(good_body(expiresAt="2025-06-01 12:30:00Z")),
        payload_of(good_body(expiresAt="2025-13-01T12:30:00Z")),
        payload_of(good_body(expiresAt=1748781000)),
        payload_of(good_body(expiresAt="２０２５-06-01T12:30:00Z")),
        payload_of({k: v for k, v in good_body().items() if k != "intent"}),
        payload_of(good_body(extra=1)),
        payload_of({k: v for k, v in good_body().items() if k != "nonce"}),  # minted before nonces
        payload_of(good_body(nonce="")),
        payload_of(good_body(nonce="short")),
        payload_of(good_body(nonce=12345678901234567890123)),
        payload_of(good_body(nonce="n" * 65)),
        payload_of(good_body(approver="")),
        payload_of(good_body(approver=None)),
        payload_of(good_body(approver=["alice"])),
        payload_of(good_body(approver="a b")),
        payload_of(good_body(approver="a\u0000")),
        payload_of([good_body()]),
        payload_of("resolve"),
        b64(
            b'{"runId":"a","runId":"b","nodeId":"n","interruptId":"i",'
            b'"expiresAt":"2025-06-01T12:30:00Z","intent":"resolve"}'
        ),
        b64(b"not json"),
        b64(b"\xff\xfe"),
        b64(b"[" * 2000),
        "AAAAAA",  # well-formed base64url of four zero bytes
    ],
)
def test_a_correctly_signed_but_malformed_payload_is_invalid(payload: str) -> None:
    assert refusal(sign(SECRET_NEW, "k2", payload)).details == {"reason": "payload"}


_GOOD = minted().token.split(".")[3]  # mint()'s form, read by verify's fast path


@pytest.mark.parametrize(
    "payload",
    [
        _GOOD + "=" * (4 - len(_GOOD) % 4),  # padded
        _GOOD.replace(_GOOD[5], "+", 1),
        _GOOD.replace(_GOOD[5], "/", 1),
        _GOOD + "A" * ((1 - len(_GOOD)) % 4),  # 4n+1 characters
        _GOOD[:8] + "\u00e9" + _GOOD[9:],
        # Four characters a lenient base64 decoder skips: what is left is a genuine payload.
        _GOOD[:8] + "...." + _GOOD[8:],
        _GOOD[:8] + "++//" + _GOOD[8:],
        _GOOD[:8] + "====" + _GOOD[8:],
        _GOOD[:8] + " \n\t!" + _GOOD[8:],
    ],
)
def test_a_correctly_signed_token_outside_the_grammar_is_refused_as_such(payload: str) -> None:
    """The MAC matches (the key holder signed it), but the payload is not unpadded base64url."""
    assert verify(KEYS, sign(SECRET_NEW, "k2", _GOOD), now=NOW).run_id == "acme/run-1"
    assert refusal(sign(SECRET_NEW, "k2", payload)).details == {"reason": "grammar"}


def test_a_hand_signed_payload_verifies() -> None:
    """The independent signer agrees with verify, so the format is what the design says."""
    claims = verify(KEYS, sign(SECRET_OLD, "k1", payload_of(good_body(intent="inspect"))), now=NOW)
    assert claims == TokenClaims(
        "acme/run-1", "review", "k-1", datetime(2025, 6, 1, 12, 30, tzinfo=UTC), "inspect", "k1", NONCE
    )
    with_approver = sign(SECRET_NEW, "k2", payload_of(good_body(approver="alice")))
    assert verify(KEYS, with_approver, now=NOW).approver == "alice"


# --- rotation and intent ----------------------------------------------------------------------


def test_rotation() -> None:
    old_keys = SigningKeys({"k1": SECRET_OLD})
    old_token = mint(old_keys, run_id="r", node_id="n", interrupt_id="i", now=NOW).token
    assert old_token.startswith("ow2.hs256.k1.")

    rotated = SigningKeys.parse(f"k2={SECRET_NEW},k1={SECRET_OLD}")
    assert verify(rotated, old_token, now=NOW).kid == "k1"
    assert mint(rotated, run_id="r", node_id="n", interrupt_id="i", now=NOW).claims.kid == "k2"

    retired = SigningKeys.parse(f"k2={SECRET_NEW}")
    assert refusal(old_token, keys=retired).details == {"reason": "kid"}


def test_a_kid_with_another_secret_does_not_verify() -> None:
    impostor = SigningKeys({"k2": "another-secret-0123456789"})
    assert refusal(minted().token, keys=impostor).details == {"reason": "mac"}


def test_inspect_and_resolve_intents() -> None:
    inspect = verify(KEYS, minted(intent="inspect").token, now=NOW)
    resolve = verify(KEYS, minted().token, now=NOW)
    assert inspect.intent == "inspect"
    require_intent(inspect, "inspect")
    require_intent(resolve, "inspect")
    require_intent(resolve, "resolve")
    with pytest.raises(Forbidden) as caught:
        require_intent(inspect, "resolve")
    assert (caught.value.code, caught.value.status) == ("forbidden", 403)


# --- keyring ----------------------------------------------------------------------------------


def test_keyring_parse_and_order() -> None:
    keys = SigningKeys.parse(f" new = {SECRET_NEW} , Old-v1~x_={SECRET_OLD}")
    assert keys.kids == ("new", "Old-v1~x_")
    assert keys.signing_kid == "new"
    assert "Old-v1~x_" in keys and "k9" not in keys
    assert len(keys) == 2
    token = mint(keys, run_id="r", node_id="n", interrupt_id="i", now=NOW).token
    assert sign(SECRET_NEW, "new", token.split(".")[3]) == token


def test_secret_containing_equals_sign_keeps_it() -> None:
    keys = SigningKeys.parse("k=abc=def=ghijklmnopq")
    token = mint(keys, run_id="r", node_id="n", interrupt_id="i", now=NOW).token
    assert sign("abc=def=ghijklmnopq", "k", token.split(".")[3]) == token


def test_keyring_accepts_bytes_secrets() -> None:
    keys = SigningKeys([("k", bytes(range(32)))])
    assert verify(keys, mint(keys, run_id="r", node_id="n", interrupt_id="i", now=NOW).token, now=NOW)


def test_secrets_never_appear_in_repr_or_str() -> None:
    for text in (repr(KEYS), str(KEYS), repr(minted()), str(minted().claims)):
        assert SECRET_NEW not in text
        assert SECRET_OLD not in text
    assert repr(KEYS) == "SigningKeys(kids=['k2', 'k1'])"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (f"k1={SECRET_OLD},", "entry 2 is empty"),
        (f",k1={SECRET_OLD}", "entry 1 is empty"),
        (SECRET_OLD, "has no '='"),
        ("k1=", "empty secret"),
        ("k1=   ", "empty secret"),
        (f"k1={SECRET_OLD},k1={SECRET_NEW}", "configured twice"),
        (f"k1:{SECRET_NEW}={SECRET_OLD}", "kid of entry 1 must match"),
        (f"k.1={SECRET_OLD}", "'.' is refused"),
        (f"={SECRET_OLD}", "must match"),
        (f"k/1={SECRET_OLD}", "must match"),
        (f"{'k' * 129}={SECRET_OLD}", "must match"),
        ("k1=tiny-secret", "shorter than 16 bytes"),
        (f"k1={SECRET_OLD},k2={'x' * 15}", "kid 'k2' is shorter"),
    ],
)
def test_keyring_parse_refusals(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment) as caught:
        SigningKeys.parse(text)
    for secret in (SECRET_OLD, SECRET_NEW, "tiny-secret", "x" * 15):
        assert secret not in str(caught.value)


def test_keyring_constructor_refusals() -> None:
    with pytest.raises(ValueError, match="at least one"):
        SigningKeys({})
    with pytest.raises(ValueError, match="configured twice"):
        SigningKeys([("a", SECRET_OLD), ("a", SECRET_NEW)])
    with pytest.raises(ValueError, match="shorter than 16 bytes"):
        SigningKeys({"a": b"x" * 15})
    SigningKeys({"a": b"x" * 16})


# --- properties -------------------------------------------------------------------------------


@given(st.text(max_size=300))
def test_random_text_is_only_ever_invalid(text: str) -> None:
    for candidate in (text, "ow2." + text, "ow2.hs256.k2." + text, "ow2.hs256.k2.e30." + text):
        with pytest.raises(InterruptTokenInvalid):
            verify(KEYS, candidate, now=NOW)


@given(st.text(alphabet=B64URL + ".", max_size=200))
def test_random_base64url_text_is_only_ever_invalid(text: str) -> None:
    with pytest.raises(InterruptTokenInvalid):
        verify(KEYS, "ow2.hs256.k2." + text, now=NOW)


@given(st.text(alphabet=B64URL, min_size=1, max_size=400))
def test_correctly_signed_garbage_is_only_ever_invalid(payload: str) -> None:
    if len(payload) % 4 == 1:
        payload += "A"
    with pytest.raises(InterruptTokenInvalid):
        verify(KEYS, sign(SECRET_NEW, "k2", payload), now=NOW)


UNICODE = st.characters(codec="utf-8")  # lone surrogates cannot be encoded, so mint refuses them


@given(
    run_id=st.text(UNICODE, min_size=1, max_size=100),
    interrupt_id=st.text(UNICODE, min_size=1, max_size=256),
    ttl_ms=st.integers(min_value=1, max_value=10**10),
)
def test_any_valid_claims_round_trip(run_id: str, interrupt_id: str, ttl_ms: int) -> None:
    token = minted(run_id=run_id, interrupt_id=interrupt_id, ttl=timedelta(milliseconds=ttl_ms))
    assert verify(KEYS, token.token, now=NOW) == token.claims


# --- the fast paths agree with the general ones -----------------------------------------------


def canonical_payload(body: Any) -> str:
    """The payload as mint writes it (sorted, compact, UTF-8): read by verify's one-pattern path."""
    return b64(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())


@pytest.mark.parametrize(
    "body",
    [
        good_body(intent="admin"),
        good_body(intent="Resolve"),
        good_body(runId=""),
        good_body(nodeId=""),
        good_body(interruptId=""),
        good_body(interruptId="x" * 257),
        good_body(expiresAt="2025-06-01T12:30:00+00:00"),
        good_body(expiresAt="2025-13-01T12:30:00Z"),  # matches the grammar, is no date
        good_body(expiresAt="2025-06-01T12:30:00.1234567Z"),
        good_body(expiresAt="２０２５-06-01T12:30:00Z"),
        good_body(nonce="short"),
        good_body(nonce="n" * 65),
        good_body(nonce="n" * 21 + "="),
        good_body(approver=""),
        good_body(approver="a b"),
        good_body(approver="a\u2003b"),  # Unicode whitespace
        good_body(approver="a/b"),
        good_body(approver="a\u0085"),
        good_body(extra="1"),
        {k: v for k, v in good_body().items() if k != "nonce"},
    ],
)
def test_a_canonical_but_malformed_payload_is_invalid(body: dict[str, Any]) -> None:
    assert refusal(sign(SECRET_NEW, "k2", canonical_payload(body))).details == {"reason": "payload"}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"approver": "alice"},
        {"runId": 'acme/run "quoted" \\ back', "nodeId": "n\u00e9\u4e2d", "interruptId": "i\ttab"},
        {"expiresAt": "2025-06-01T12:30:00Z", "approver": "b\u00e9b@example.com"},
        {"expiresAt": "2025-06-01T12:30:00.123456Z", "intent": "inspect"},
        {"interruptId": "x" * 256, "nonce": "n" * 64},
    ],
)
def test_canonical_and_loose_json_of_one_payload_verify_alike(changes: dict[str, Any]) -> None:
    body = good_body(**changes)
    canonical = verify(KEYS, sign(SECRET_NEW, "k2", canonical_payload(body)), now=NOW)
    loose = verify(KEYS, sign(SECRET_NEW, "k2", payload_of(body)), now=NOW)
    assert canonical == loose
    assert (canonical.run_id, canonical.node_id, canonical.interrupt_id) == (
        body["runId"],
        body["nodeId"],
        body["interruptId"],
    )
    assert canonical.approver == body.get("approver") and canonical.nonce == body["nonce"]


@pytest.mark.parametrize("length", [16, 63, 64, 65, 200])
def test_the_mac_is_hmac_sha256_for_secrets_of_any_length(length: int) -> None:
    """Keys longer than SHA-256's block are hashed first (RFC 2104), as hmac does."""
    secret = ("s" * length)[:length]
    keys = SigningKeys({"kx": secret})
    token = mint(keys, run_id="acme/run-1", node_id="review", interrupt_id="k-1", now=NOW).token
    assert token == sign(secret, "kx", token.split(".")[3])
    assert verify(keys, sign(secret, "kx", canonical_payload(good_body())), now=NOW).kid == "kx"
    other = SigningKeys({"kx": secret + "!"})
    assert refusal(token, keys=other).details == {"reason": "mac"}


def test_claims_are_immutable() -> None:
    claims = minted().claims
    with pytest.raises(AttributeError):
        claims.run_id = "acme/other"  # type: ignore[misc]


# --- a verified token's payload is remembered; nothing else is -------------------------------


def test_a_remembered_payload_still_needs_its_mac_kid_and_expiry() -> None:
    token = minted(ttl=timedelta(minutes=5)).token
    assert verify(KEYS, token, now=NOW).run_id == "acme/run-1"  # now remembered
    assert verify(KEYS, token, now=NOW) == verify(KEYS, token, now=NOW)
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert refusal(tampered).details["reason"] == "mac"
    resigned = sign("another-secret-0123456789", "k2", token.split(".")[3])
    assert refusal(resigned).details["reason"] == "mac"
    without_kid = SigningKeys({"k1": SECRET_OLD})  # k2 rotated out: its tokens stop verifying
    assert refusal(token, keys=without_kid).details["reason"] == "kid"
    with pytest.raises(InterruptExpired):
        verify(KEYS, token, now=NOW + timedelta(minutes=5))
    same_secret_other_kid = SigningKeys({"k9": SECRET_NEW})
    assert refusal(token, keys=same_secret_other_kid).details["reason"] == "kid"


def test_a_remembered_payload_is_claimed_by_the_kid_that_signed_it_this_time() -> None:
    token = minted().token
    assert verify(KEYS, token, now=NOW).kid == "k2"  # remembered with k2
    same_payload_under_k1 = sign(SECRET_OLD, "k1", token.split(".")[3])
    assert verify(KEYS, same_payload_under_k1, now=NOW).kid == "k1"
    assert verify(KEYS, token, now=NOW).kid == "k2"


def test_a_payload_in_another_form_than_mints_verifies_every_time() -> None:
    """Loose JSON is never remembered in mint()'s place, and gives the same claims each time."""
    loose = sign(SECRET_NEW, "k2", b64(json.dumps(good_body(), indent=2).encode()))
    first = verify(KEYS, loose, now=NOW)
    assert verify(KEYS, loose, now=NOW) == first
    assert first.run_id == "acme/run-1" and first.nonce == NONCE

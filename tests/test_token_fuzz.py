"""Fuzzing the token verifier: no mutation of a real token is ever accepted, nothing else escapes.

The oracle for every case: ``verify`` either refuses with ``InterruptTokenInvalid`` (401) or
``InterruptExpired`` (410), or returns exactly the claims that were signed with a held key. Any
other exception, or claims nobody signed, fails the test. Examples are bounded so the file runs in
seconds; the exhaustive single-edit sweep covers every position of every segment.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from wop_langgraph.protocol.errors import InterruptExpired, InterruptTokenInvalid
from wop_langgraph.tokens import (
    MAX_TOKEN_LENGTH,
    MintedToken,
    SigningKeys,
    TokenClaims,
    _verify_in_full,
    mint,
    verify,
    verify_signed,
)

NOW = datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC)
SECRET_K2 = "fuzz-secret-k2-0123456789abcdef"
SECRET_K1 = "fuzz-secret-k1-0123456789abcdef"
KEYS = SigningKeys({"k2": SECRET_K2, "k1": SECRET_K1})
B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# Characters a mutation may insert: the token alphabet, its separators and some that must never pass.
EDIT_CHARS = B64URL + ".=+/ ~%\x00\u00e9\u200b\ufeff"
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)
approvers = st.none() | st.from_regex(r"[A-Za-z0-9._@+-]{1,40}", fullmatch=True)


@st.composite
def real_tokens(draw: st.DrawFn) -> MintedToken:
    """A genuine token for random claims, signed with the keyring's signing key."""
    return mint(
        KEYS,
        run_id=draw(ids),
        node_id=draw(ids),
        interrupt_id=draw(ids),
        intent=draw(st.sampled_from(["resolve", "inspect"])),
        approver=draw(approvers),
        now=NOW,
        ttl=timedelta(seconds=draw(st.integers(min_value=1, max_value=7 * 24 * 3600))),
    )


def outcome(token: str, *, now: datetime = NOW) -> TokenClaims | None:
    """``verify``'s claims, or ``None`` for one of the two expected refusals; anything else raises."""
    try:
        return verify(KEYS, token, now=now)
    except (InterruptTokenInvalid, InterruptExpired):
        return None


def assert_refused(token: str, original: str, *, now: datetime = NOW) -> None:
    if token == original:
        return  # the edit was a no-op: accepting the genuine token is right
    claims = outcome(token, now=now)
    assert claims is None, f"a mutated token was accepted: {token!r}"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed(secret: str, prefix: str, payload: str) -> str:
    """``prefix.payload.mac`` with the design's MAC, under any secret and any prefix text."""
    text = f"{prefix}.{payload}"
    return f"{text}.{b64(hmac.new(secret.encode(), text.encode(), hashlib.sha256).digest())}"


def payload_body(token: str) -> dict[str, Any]:
    payload = token.split(".")[3]
    body: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return body


def encode_body(body: Any) -> str:
    return b64(json.dumps(body, separators=(",", ":"), sort_keys=True).encode())


# --- every single edit of every segment -------------------------------------------------------


def test_every_single_character_edit_of_every_segment_is_refused() -> None:
    original = mint(KEYS, run_id="acme/run-1", node_id="review", interrupt_id="k", approver="alice", now=NOW)
    token = original.token
    assert outcome(token) == original.claims
    tried = 0
    for position in range(len(token)):
        for char in ("A", "_", ".", "=", "é"):
            if token[position] != char:
                assert_refused(token[:position] + char + token[position + 1 :], token)
                tried += 1
        assert_refused(token[:position] + token[position + 1 :], token)  # deletion
        assert_refused(token[:position] + "A" + token[position:], token)  # insertion
        assert_refused(token[:position], token)  # truncation
        tried += 3
    assert tried > 5 * len(token)


# --- random mutations -------------------------------------------------------------------------


@FUZZ
@given(
    original=real_tokens(),
    segment=st.integers(min_value=0, max_value=4),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["replace", "insert", "delete", "swapcase", "duplicate", "empty", "random"]),
            st.integers(min_value=0, max_value=10_000),
            st.text(EDIT_CHARS, min_size=1, max_size=8),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_random_segment_mutations_are_refused(
    original: MintedToken, segment: int, edits: list[tuple[str, int, str]]
) -> None:
    segments = original.token.split(".")
    for op, position, text in edits:
        value = segments[segment]
        at = position % (len(value) + 1)
        if op == "replace" and value:
            at = position % len(value)
            value = value[:at] + text + value[at + 1 :]
        elif op == "insert":
            value = value[:at] + text + value[at:]
        elif op == "delete":
            value = value[:at] + value[at + len(text) :]
        elif op == "swapcase":
            value = value.swapcase()
        elif op == "duplicate":
            value = value + value
        elif op == "empty":
            value = ""
        else:
            value = text
        segments[segment] = value
    assert_refused(".".join(segments), original.token)


@FUZZ
@given(original=real_tokens(), order=st.permutations(range(5)), extra=st.text(EDIT_CHARS, max_size=20))
def test_reordered_dropped_or_extra_segments_are_refused(
    original: MintedToken, order: list[int], extra: str
) -> None:
    segments = original.token.split(".")
    assert_refused(".".join(segments[i] for i in order), original.token)
    assert_refused(".".join(segments[i] for i in order[:4]), original.token)
    assert_refused(".".join([*segments, extra]), original.token)
    assert_refused(".".join([segments[0], extra, *segments[1:]]), original.token)


# --- alg and kid confusion --------------------------------------------------------------------


@FUZZ
@given(
    original=real_tokens(),
    alg=st.sampled_from(
        ["none", "None", "HS256", "hs384", "hs512", "rs256", "es256", "hs256 ", "", "hs2566"]
    ),
    kid=st.sampled_from(["k1", "k2", "k3", "K2", "k2 ", "", "legacy", "k2~", "-", "k" * 129]),
    secret=st.sampled_from([SECRET_K1, SECRET_K2, "", "attacker-chosen-secret-000000"]),
)
def test_alg_and_kid_confusion_is_refused(original: MintedToken, alg: str, kid: str, secret: str) -> None:
    _, real_alg, real_kid, payload, mac = original.token.split(".")
    # The same MAC presented under another alg or kid.
    assert_refused(f"ow2.{alg}.{real_kid}.{payload}.{mac}", original.token)
    assert_refused(f"ow2.{real_alg}.{kid}.{payload}.{mac}", original.token)
    # Re-signed by someone choosing alg, kid and secret: only the held secret of the named kid
    # under hs256 verifies, and that is a genuine signature, not a forgery.
    forged = signed(secret, f"ow2.{alg}.{kid}", payload)
    genuine = alg == "hs256" and {"k1": SECRET_K1, "k2": SECRET_K2}.get(kid) == secret
    claims = outcome(forged)
    if genuine:
        assert claims is not None and claims.kid == kid and claims.nonce == original.claims.nonce
    else:
        assert claims is None, forged
    # An unsigned token ("alg none" style: empty or absent MAC).
    assert_refused(f"ow2.none.{real_kid}.{payload}.", original.token)
    assert_refused(f"ow2.none.{real_kid}.{payload}", original.token)


# --- claims changed without the key -----------------------------------------------------------


@FUZZ
@given(
    original=real_tokens(),
    member=st.sampled_from(["runId", "nodeId", "interruptId", "expiresAt", "intent", "nonce", "approver"]),
    value=st.one_of(
        st.text(max_size=30),
        st.integers(),
        st.none(),
        st.booleans(),
        st.lists(st.text(max_size=5), max_size=2),
        st.just("2999-01-01T00:00:00.000Z"),
        st.just("resolve"),
        st.just("mallory"),
    ),
)
def test_rewritten_claims_without_the_key_are_refused(original: MintedToken, member: str, value: Any) -> None:
    body = payload_body(original.token)
    body[member] = value
    prefix = ".".join(original.token.split(".")[:3])
    tampered = f"{prefix}.{encode_body(body)}.{original.token.split('.')[4]}"
    assert_refused(tampered, original.token)
    # Signed with a guessed secret: refused as well.
    assert_refused(signed("guessed-secret-0123456789", prefix, encode_body(body)), original.token)


@FUZZ
@given(
    body=st.dictionaries(
        st.sampled_from(["runId", "nodeId", "interruptId", "expiresAt", "intent", "nonce", "approver", "x"]),
        st.one_of(
            st.text(max_size=30),
            st.integers(),
            st.floats(allow_nan=True),
            st.none(),
            st.sampled_from(["resolve", "inspect", "2026-03-01T09:30:00.000Z", "n" * 22, "alice"]),
        ),
        max_size=8,
    )
)
def test_signed_payloads_yield_exactly_what_was_signed_or_nothing(body: dict[str, Any]) -> None:
    token = signed(SECRET_K2, "ow2.hs256.k2", encode_body(body))
    claims = outcome(token)
    if claims is not None:
        assert claims.run_id == body["runId"] and claims.node_id == body["nodeId"]
        assert claims.interrupt_id == body["interruptId"] and claims.intent == body["intent"]
        assert claims.nonce == body["nonce"] and claims.approver == body.get("approver")
        assert set(body) <= {"runId", "nodeId", "interruptId", "expiresAt", "intent", "nonce", "approver"}


# --- expiry -----------------------------------------------------------------------------------


@FUZZ
@given(original=real_tokens(), late_ms=st.integers(min_value=0, max_value=10**12))
def test_a_genuine_token_at_or_after_its_expiry_is_refused(original: MintedToken, late_ms: int) -> None:
    with pytest.raises(InterruptExpired):
        verify(KEYS, original.token, now=original.expires_at + timedelta(milliseconds=late_ms))
    assert outcome(original.token, now=original.expires_at - timedelta(milliseconds=1)) == original.claims


def test_extending_the_expiry_needs_the_key() -> None:
    original = mint(KEYS, run_id="acme/r", node_id="n", interrupt_id="i", now=NOW, ttl=timedelta(seconds=1))
    body = payload_body(original.token)
    body["expiresAt"] = "9999-12-31T23:59:59.999Z"
    prefix = ".".join(original.token.split(".")[:3])
    later = NOW + timedelta(hours=1)
    assert_refused(f"{prefix}.{encode_body(body)}.{original.token.split('.')[4]}", original.token, now=later)
    assert_refused(signed(SECRET_K1, prefix, encode_body(body)), original.token, now=later)  # wrong kid's key


# --- huge tokens ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [MAX_TOKEN_LENGTH + 1, 10**5, 10**6, 10**7])
def test_huge_tokens_are_refused_before_decoding(size: int) -> None:
    genuine = mint(KEYS, run_id="acme/r", node_id="n", interrupt_id="i", now=NOW).token
    for token in (genuine + "A" * (size - len(genuine)), "ow2." + "." * (size - 4), "x" * size):
        with pytest.raises(InterruptTokenInvalid) as caught:
            verify(KEYS, token, now=NOW)
        assert caught.value.details == {"reason": "too_long"}


@FUZZ
@given(st.integers(min_value=1, max_value=MAX_TOKEN_LENGTH), st.sampled_from(["payload", "mac", "kid"]))
def test_long_segments_within_the_limit_are_refused(length: int, where: str) -> None:
    _, alg, kid, payload, mac = mint(
        KEYS, run_id="acme/r", node_id="n", interrupt_id="i", now=NOW
    ).token.split(".")
    filler = "A" * length
    parts = {
        "payload": (kid, payload + filler, mac),
        "mac": (kid, payload, mac + filler),
        "kid": (kid + filler, payload, mac),
    }
    k, p, m = parts[where]
    token = f"ow2.{alg}.{k}.{p}.{m}"
    assume(token != f"ow2.{alg}.{kid}.{payload}.{mac}")
    assert outcome(token) is None


# --- the canonical fast path and the JSON path agree ------------------------------------------


def judged(token: str) -> object:
    """The claims, or which refusal (type and reason): the outcome two paths must share."""
    try:
        return verify(KEYS, token, now=NOW)
    except InterruptTokenInvalid as error:
        return ("invalid", error.details)
    except InterruptExpired:
        return "expired"


strings = st.text(st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ["resolve", "inspect", "2026-03-01T09:30:00.000Z", "2026-03-01T08:00:00Z", "n" * 22, "alice", 'a"b\\c']
)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["runId", "nodeId", "interruptId", "expiresAt", "intent", "nonce", "approver", "x"]),
        strings | st.none() | st.integers(),
        min_size=5,
        max_size=8,
    )
)
def test_canonical_and_loose_json_of_a_signed_payload_have_one_outcome(body: dict[str, Any]) -> None:
    canonical = b64(json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode())
    loose = b64(json.dumps(body, indent=1).encode())  # whitespace: never the canonical form
    assert judged(signed(SECRET_K2, "ow2.hs256.k2", canonical)) == judged(
        signed(SECRET_K2, "ow2.hs256.k2", loose)
    )


# --- verify's fast path and its step-by-step path agree ---------------------------------------


def by_both_paths(token: str) -> tuple[object, object]:
    """What ``verify_signed`` (fast path first) and ``_verify_in_full`` (step by step) make of it."""

    def judge(check: Callable[[SigningKeys, str], TokenClaims]) -> object:
        try:
            return check(KEYS, token)
        except InterruptTokenInvalid as error:
            return ("invalid", error.details)

    return judge(verify_signed), judge(_verify_in_full)


@FUZZ
@given(
    original=real_tokens(),
    position=st.integers(min_value=0, max_value=10_000),
    cut=st.integers(min_value=0, max_value=4),
    # Runs of characters outside the alphabet too: a lenient decoder would skip them.
    text=st.text(EDIT_CHARS, max_size=6) | st.text(EDIT_CHARS[len(B64URL) :], min_size=1, max_size=8),
    resign=st.booleans(),
)
def test_the_fast_path_and_the_full_path_agree(
    original: MintedToken, position: int, cut: int, text: str, resign: bool
) -> None:
    """Any edit of a real token, re-signed with the key or not: same claims or same refusal."""
    _, _, kid, payload, _ = original.token.split(".")
    if resign:  # the edit is made to the payload and signed, so only the payload's form is wrong
        where = position % (len(payload) + 1)
        token = signed(SECRET_K2, f"ow2.hs256.{kid}", payload[:where] + text + payload[where + cut :])
    else:
        where = position % (len(original.token) + 1)
        token = original.token[:where] + text + original.token[where + cut :]
    fast, full = by_both_paths(token)
    assert fast == full

"""Inbox tokens: they round-trip, are refused when forged, expired or of the wrong kind, and no
inbox token is ever accepted as a review token (nor the reverse)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from wop_langgraph.inbox_tokens import mint_inbox, verify_inbox
from wop_langgraph.protocol.errors import InterruptExpired, InterruptTokenInvalid
from wop_langgraph.tokens import SigningKeys, mint, verify

KEYS = SigningKeys({"k1": "inbox-secret-0123456789abcdef"})
OTHER = SigningKeys({"k1": "another-secret-0123456789abcdef"})
NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_round_trip_names_the_approver_and_tenant() -> None:
    minted = mint_inbox(KEYS, tenant="acme", subject="alice", now=NOW, ttl=timedelta(hours=1))
    assert minted.token.startswith("owi1.hs256.k1.")
    claims = verify_inbox(KEYS, minted.token, now=NOW + timedelta(minutes=59))
    assert (claims.tenant, claims.subject, claims.expires_at) == ("acme", "alice", NOW + timedelta(hours=1))
    assert mint_inbox(KEYS, tenant="acme", subject="alice", now=NOW).token != minted.token  # nonce


def test_expired_forged_and_foreign_tokens_are_refused() -> None:
    token = mint_inbox(KEYS, tenant="acme", subject="alice", now=NOW, ttl=timedelta(hours=1)).token
    with pytest.raises(InterruptExpired):
        verify_inbox(KEYS, token, now=NOW + timedelta(hours=1))
    with pytest.raises(InterruptTokenInvalid, match="mac"):
        verify_inbox(OTHER, token, now=NOW)
    head, _payload, mac = token.rsplit(".", 2)
    changed = ("B" if mac[0] == "A" else "A") + mac[1:]
    with pytest.raises(InterruptTokenInvalid, match="mac"):
        verify_inbox(KEYS, token.removesuffix(mac) + changed, now=NOW)
    # Another approver's name in the payload breaks the mac.
    forged_payload = mint_inbox(OTHER, tenant="acme", subject="mallory", now=NOW).token.rsplit(".", 2)[1]
    with pytest.raises(InterruptTokenInvalid, match="mac"):
        verify_inbox(KEYS, f"{head}.{forged_payload}.{mac}", now=NOW)


def test_an_inbox_token_never_resolves_and_a_review_token_is_no_inbox() -> None:
    inbox = mint_inbox(KEYS, tenant="acme", subject="alice", now=NOW).token
    with pytest.raises(InterruptTokenInvalid, match="ow2"):
        verify(KEYS, inbox, now=NOW)
    review = mint(KEYS, run_id="acme/r1", node_id="review", interrupt_id="k", now=NOW, approver="alice")
    with pytest.raises(InterruptTokenInvalid, match="not an inbox token"):
        verify_inbox(KEYS, review.token, now=NOW)


@pytest.mark.parametrize(("tenant", "subject"), [("acme", "has space"), ("a/b", "alice"), ("", "alice")])
def test_mint_refuses_unusable_names(tenant: str, subject: str) -> None:
    with pytest.raises(ValueError, match="mint_inbox"):
        mint_inbox(KEYS, tenant=tenant, subject=subject, now=NOW)

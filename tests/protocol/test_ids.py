"""Id grammars, minting, and the URL path projection, judged by ``openwop_client.wire_id``."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openwop_client import wire_id

from tests.official import official_schema
from wop_langgraph.protocol import (
    ValidationError,
    is_tenant_bound_id,
    mint_opaque,
    mint_tenant_id,
    project_id,
    split_tenant_id,
    unproject_id,
)
from wop_langgraph.protocol import ids as our_ids

IDS = official_schema("ids.schema.json")["$defs"]


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (our_ids.OPAQUE_PATTERN, "opaque"),
        (our_ids.TENANT_ID_PATTERN, "tenantId"),
        (our_ids.TENANT_BOUND_ID_PATTERN, "runId"),
        (our_ids.TENANT_BOUND_ID_PATTERN, "interruptId"),
        (our_ids.EVENT_ID_PATTERN, "eventId"),
        (our_ids.AUTHOR_ID_PATTERN, "nodeId"),
        (our_ids.AUTHOR_ID_PATTERN, "workflowId"),
        (our_ids.AUTHOR_ID_PATTERN, "agentId"),
        (our_ids.WORKSPACE_ID_PATTERN, "workspaceId"),
        (our_ids.KEY_ID_PATTERN, "keyId"),
        (our_ids.SUBJECT_ID_PATTERN, "subjectId"),
        (our_ids.TYPE_ID_PATTERN, "typeId"),
    ],
)
def test_patterns_are_the_official_grammars(ours: str, theirs: str) -> None:
    assert ours == IDS[theirs]["pattern"]


def test_minted_ids_fit_the_grammar_and_never_contain_tilde() -> None:
    seen = set()
    for _ in range(200):
        value = mint_tenant_id("acme")
        assert is_tenant_bound_id(value) and "~" not in value
        assert re.fullmatch(IDS["interruptId"]["pattern"], value)
        assert split_tenant_id(value)[0] == "acme"
        seen.add(value)
    assert len(seen) == 200
    assert re.fullmatch(IDS["eventId"]["pattern"], mint_opaque())
    assert len(mint_opaque(96)) == 128 and len(mint_opaque(12)) == 16


@pytest.mark.parametrize("tenant", ["", "a/b", "ac~me", "anon:", "t" * 129, "acme\n"])
def test_minting_refuses_bad_tenants(tenant: str) -> None:
    with pytest.raises(ValidationError):
        mint_tenant_id(tenant)


def test_anon_tenants_are_admitted() -> None:
    assert split_tenant_id(mint_tenant_id("anon:sess-1"))[0] == "anon:sess-1"


@pytest.mark.parametrize("nbytes", [11, 97])
def test_opaque_length_bounds(nbytes: int) -> None:
    with pytest.raises(ValueError):
        mint_opaque(nbytes)


@pytest.mark.parametrize("value", ["acme", "acme/short", "a b/0123456789abcdef", "acme/0123456789abcdef\n"])
def test_split_refuses_non_bound_ids(value: str) -> None:
    with pytest.raises(ValidationError):
        split_tenant_id(value)


def test_projection_examples() -> None:
    assert project_id("acme/r-9f3c0123456789ab") == "acme~2Fr-9f3c0123456789ab"
    assert project_id("anon:s/x~y") == "anon~3As~2Fx~7Ey"
    assert unproject_id("acme~2Fr-9f3c0123456789ab") == "acme/r-9f3c0123456789ab"
    assert unproject_id("acme%2Fr-9f3c0123456789ab") == "acme/r-9f3c0123456789ab"
    assert unproject_id("acme~2fr") == "acme/r"  # hex digits of either case
    assert unproject_id("100%") == "100%"  # a bare % is not an escape


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_projection_matches_the_official_client_and_inverts(value: str) -> None:
    projected = project_id(value)
    assert re.fullmatch(r"[A-Za-z0-9._~-]*", projected)
    assert unproject_id(projected) == value
    assert wire_id.unproject_id(projected) == value
    if "/" in value or not re.search(r"[~%]2F", value, re.IGNORECASE):
        # The client decodes an already-projected input first; on every other input, and on every
        # tenant-bound id (which contains "/"), the two projections are byte-identical.
        assert projected == wire_id.project_id(value)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "/", "~2F", "%2F", "~7E", "%25", "~e9", "é", ".", "-", "%"]), max_size=12)
)
def test_unprojection_matches_the_official_client(parts: list[str]) -> None:
    wire = "".join(parts)
    try:
        expected = wire_id.unproject_id(wire)
    except UnicodeDecodeError:
        with pytest.raises(ValidationError):
            unproject_id(wire)
        return
    assert unproject_id(wire) == expected


@pytest.mark.parametrize("wire", ["acme~", "acme~2", "acme~zz/x", "~G0", "a~2"])
def test_tilde_without_two_hex_digits_is_refused(wire: str) -> None:
    with pytest.raises(ValidationError) as caught:
        unproject_id(wire)
    assert caught.value.code == "validation_error" and caught.value.status == 400


def test_escapes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(ValidationError):
        unproject_id("acme~FF")

"""The served schema's ``callbackUrl`` and the egress guard agree: the schema admits no URL the
guard refuses when a run is created.

The schema is judged as a JSON Schema validator reads it (``jsonschema_rs``, the validator
schemathesis uses: ECMA-262 patterns, ``maxLength``, ``format: uri``), on the document the
server serves. The guard's own refusal table (tests/protocol/test_egress.py) is fed to it, and
URLs drawn from the pattern are fed to the guard.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema_rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.protocol.test_egress import HOSTILE, PUBLIC
from wop_langgraph.protocol.egress import callback_url_pattern, check_url
from wop_langgraph.protocol.errors import ValidationError

#: Refusals of check_url that the schema cannot express, each named and explained in the schema's
#: description. None: what the guard refuses beyond the pattern happens at delivery (DNS answers).
UNEXPRESSED: frozenset[str] = frozenset()
#: Accepted by the guard, left out of the schema (a narrower grammar; the description says so):
#: upper case, IP literals, percent-escapes.
UNDESCRIBED = re.compile(r"^(HTTPS|https://(\[|[0-9.]+[:/]|[^/]*[A-Z]|.*%))")


async def callback_url_schema(client: httpx.AsyncClient) -> dict[str, Any]:
    document = (await client.get("/openapi.json")).json()
    member = document["components"]["schemas"]["CreateRunBody"]["properties"]["callbackUrl"]
    (schema,) = [option for option in member["anyOf"] if option.get("type") == "string"]
    return dict(schema)


def refusal(url: str) -> str | None:
    try:
        check_url(url)
    except ValidationError as error:
        assert error.details is not None
        return str(error.details["reason"])
    return None


async def test_the_schema_admits_no_url_the_guard_refuses(client: httpx.AsyncClient) -> None:
    schema = await callback_url_schema(client)
    assert schema["pattern"] == callback_url_pattern()
    valid = jsonschema_rs.validator_for(schema, validate_formats=True).is_valid
    admitted = [(url, reason) for url, reason in HOSTILE if valid(url)]
    assert all(reason in UNEXPRESSED for _, reason in admitted), admitted
    # The cases of the issue: special-use names the old pattern admitted.
    for url in (
        "https://s.test/cb",
        "https://printer.local/x",
        "https://metadata.goog/",
        "https://a.internal/",
    ):
        assert not valid(url) and refusal(url) is not None, url
    # Every public URL of the guard's table is described, unless it is of the documented kinds.
    for url in PUBLIC:
        assert valid(url) != bool(UNDESCRIBED.match(url)), url
    assert "DNS" in schema["description"] and "delivery" in schema["description"]


PATTERN = re.compile(callback_url_pattern().removesuffix("$") + r"\Z")  # JSON Schema's $: the end


DRAWN = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


@DRAWN
@given(st.from_regex(PATTERN, fullmatch=True))
def test_every_url_the_pattern_admits_passes_the_guard(url: str) -> None:
    if len(url) <= 2048:  # the schema's maxLength
        assert refusal(url) is None, url


def test_the_pattern_refuses_what_the_guard_refuses_at_its_edges() -> None:
    label = "a" * 63
    name = ".".join([label, label, label, "a" * 61])  # 253 characters
    edges = [
        f"https://{name}/",
        f"https://{name}./",
        f"https://{name}a/",
        "https://example.com:65535/",
        "https://example.com:65536/",
        "https://example.com:0/",
        "https://example.1/",
        "https://example.0x1f/",
        "https://example.x1f/",
        "https://metadata.goog./",
        "https://sub.metadata.goog/",
        "https://home.arpa/",
        "https://arpa.home/",
        "https://app.localhost./",
        "https://localhost.example/",
        "https://example.com/a%2",
        "https://example.com/a?q=b/c?d:@!$&'()*+,;=",
        "https://example.com#f/g?h",
    ]
    for url in edges:
        assert bool(PATTERN.match(url)) == (refusal(url) is None), (url, refusal(url))

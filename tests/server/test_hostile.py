"""Hostile input against a real server, on each backend: every case is a 4xx in the error envelope,
nothing is written (the row counts of every ``wop_*`` table are unchanged), and the server still
resolves the interrupt afterwards.

The cases cover both resolve surfaces (by run with an API key, by token without one), create,
mint, cancel, and the query strings and headers of the read routes: NUL, lone surrogates, deep
nesting, oversized bodies, strings and ids, numbers beyond 64 bits, wrong JSON types, double
percent-encodings, overflowing cursors and version headers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, MetaData, func, select

from tests.official import official_errors
from tests.server.conftest import ALICE
from tests.server.process import served
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.store.engine import make_engine

JSON = {"Content-Type": "application/json"}
MAX_BODY = 256 * 1024
MAX_STRING = 4096
BIG = 2**63  # one past the signed 64-bit range


@dataclass
class Case:
    """One hostile request and the 4xx statuses that may answer it."""

    name: str
    method: str
    path: str
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    statuses: tuple[int, ...] = (400,)
    keyed: bool = True


def raw(text: str) -> bytes:
    """A body written by hand, so it can carry what ``json.dumps`` would refuse or escape."""
    return text.encode("utf-8")


def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def cases(run: str, token: str, opaque: str) -> list[Case]:
    by_run = f"/runs/{run}/interrupts/review"
    by_token = f"/interrupts/{token}"
    mint = f"/runs/{run}/interrupts/review/tokens"

    def resume(value: str) -> bytes:
        return raw('{"resumeValue": ' + value + "}")

    def create(extra: str) -> bytes:
        return raw('{"workflowId": "review", ' + extra + "}")

    resume_values = {
        "NUL in feedback": '{"action": "accept", "feedback": "a\\u0000b"}',
        "NUL in a key": '{"action": "accept", "x\\u0000": 1}',
        "lone surrogate in feedback": '{"action": "accept", "feedback": "\\ud800"}',
        "lone low surrogate in decidedBy": '{"action": "accept", "decidedBy": "\\udfff"}',
        "integer past 64 bits in editedArtifactData": (
            f'{{"action": "edit-accept", "editedArtifactData": {BIG}}}'
        ),
        "negative integer past 64 bits": f'{{"action": "accept", "feedback": "x", "n": {-BIG - 1}}}',
        "10^30 in refineFeedback": '{"action": "refine", "refineFeedback": {"scope": "whole", "text": 1e30}}',
        "NaN": '{"action": "accept", "n": NaN}',
        "Infinity": '{"action": "accept", "n": Infinity}',
        "1e400 (infinite when parsed)": '{"action": "accept", "n": 1e400}',
        "5,000-digit integer": '{"action": "accept", "n": ' + "9" * 5000 + "}",
        "nesting 100 deep": nested(100),
        "nesting 300 deep": nested(300),
        "nesting 5,000 deep": nested(5000),
        "string over the limit": json.dumps({"action": "accept", "feedback": "x" * (MAX_STRING + 1)}),
        "clarification-style answers with a huge integer": f'{{"answers": {{"q1": {BIG}}}}}',
    }
    table: list[Case] = []
    for surface, path, keyed in (("by run", by_run, True), ("by token", by_token, False)):
        for name, value in resume_values.items():
            table.append(Case(f"resolve {surface}: {name}", "POST", path, resume(value), keyed=keyed))
        table += [
            Case(
                f"resolve {surface}: body over the size limit",
                "POST",
                path,
                resume(json.dumps("x" * (MAX_BODY + 10))),
                statuses=(413,),
                keyed=keyed,
            ),
            Case(f"resolve {surface}: no resumeValue", "POST", path, raw("{}"), keyed=keyed),
            Case(
                f"resolve {surface}: unknown member",
                "POST",
                path,
                raw('{"resumeValue": {"action": "accept"}, "voter": "bob"}'),
                keyed=keyed,
            ),
            Case(f"resolve {surface}: array body", "POST", path, raw("[1, 2]"), keyed=keyed),
            Case(f"resolve {surface}: not JSON", "POST", path, raw("{resumeValue: accept}"), keyed=keyed),
            Case(f"resolve {surface}: not UTF-8", "POST", path, b'{"resumeValue": "\xff\xfe"}', keyed=keyed),
            Case(
                f"resolve {surface}: Idempotency-Key too long",
                "POST",
                path,
                resume('{"action": "accept"}'),
                {"Idempotency-Key": "k" * 300},
                keyed=keyed,
            ),
            Case(
                f"resolve {surface}: Idempotency-Key too short",
                "POST",
                path,
                resume('{"action": "accept"}'),
                {"Idempotency-Key": "short"},
                keyed=keyed,
            ),
        ]
    table += [
        # By run: ids in the path.
        Case(
            "resolve by run: runId double-encoded (%252F)",
            "POST",
            f"/runs/acme%252F{opaque}/interrupts/review",
            resume('{"action": "accept"}'),
        ),
        Case(
            "resolve by run: runId with %25 then ~2F",
            "POST",
            f"/runs/acme%25~2F{opaque}/interrupts/review",
            resume('{"action": "accept"}'),
        ),
        Case(
            "resolve by run: nodeId of 2,000 characters",
            "POST",
            f"/runs/{run}/interrupts/{'n' * 2000}",
            resume('{"action": "accept"}'),
        ),
        Case(
            "resolve by run: nodeId segment over 128 characters",
            "POST",
            f"/runs/{run}/interrupts/{'n.' * 100}n",
            resume('{"action": "accept"}'),
        ),
        Case(
            "resolve by run: runId of 3,000 characters",
            "POST",
            f"/runs/acme~2F{'r' * 3000}/interrupts/review",
            resume('{"action": "accept"}'),
        ),
        # Create.
        Case("create: NUL in inputs", "POST", "/runs", create('"inputs": {"a": "\\u0000"}')),
        Case("create: lone surrogate in metadata", "POST", "/runs", create('"metadata": {"m": "\\ud800"}')),
        Case(
            "create: lone surrogate in a metadata key", "POST", "/runs", create('"metadata": {"\\ud800": 1}')
        ),
        Case("create: integer past 64 bits in inputs", "POST", "/runs", create(f'"inputs": {{"n": {BIG}}}')),
        Case(
            "create: 10^30 in configurable",
            "POST",
            "/runs",
            create(
                '"configurable": {"version": 1, "run": {"recursionLimit": 1000000000000000000000000000000}}'
            ),
        ),
        Case("create: nesting 300 deep in inputs", "POST", "/runs", create('"inputs": ' + nested(300))),
        Case("create: NUL in a tag", "POST", "/runs", create('"tags": ["a\\u0000"]')),
        Case("create: tags as a string", "POST", "/runs", create('"tags": "urgent"')),
        Case("create: metadata as a list", "POST", "/runs", create('"metadata": [1]')),
        Case("create: workflowId as a number", "POST", "/runs", raw('{"workflowId": 7}')),
        Case(
            "create: workflowId of 1,000 characters",
            "POST",
            "/runs",
            raw('{"workflowId": "' + "w" * 1000 + '"}'),
        ),
        Case("create: mode eval", "POST", "/runs", create('"mode": "eval"')),
        Case(
            "create: inputs over the size limit",
            "POST",
            "/runs",
            create('"inputs": ' + json.dumps("x" * (MAX_BODY + 10))),
            statuses=(413,),
        ),
        Case(
            "create: 10 MB inputs",
            "POST",
            "/runs",
            create('"inputs": ' + json.dumps("x" * 10_000_000)),
            statuses=(413,),
        ),
        Case(
            "create: Content-Length over the limit",
            "POST",
            "/runs",
            b"{}" * (MAX_BODY // 2 + 10),
            statuses=(413,),
        ),
        Case(
            "create: Idempotency-Key of 300 characters",
            "POST",
            "/runs",
            create('"inputs": {}'),
            {"Idempotency-Key": "i" * 300},
        ),
        # Mint.
        Case("mint: ttlSeconds as a string", "POST", mint, raw('{"ttlSeconds": "10"}')),
        Case("mint: ttlSeconds as a boolean", "POST", mint, raw('{"ttlSeconds": true}')),
        Case("mint: ttlSeconds fractional", "POST", mint, raw('{"ttlSeconds": 10.5}')),
        Case("mint: ttlSeconds past 64 bits", "POST", mint, raw(f'{{"ttlSeconds": {BIG}}}')),
        Case("mint: intent with NUL", "POST", mint, raw('{"intent": "resolve\\u0000"}')),
        Case("mint: intent as a list", "POST", mint, raw('{"intent": ["resolve"]}')),
        Case("mint: unknown member", "POST", mint, raw('{"voter": "bob"}')),
        Case(
            "mint: nodeId of 2,000 characters",
            "POST",
            f"/runs/{run}/interrupts/{'n' * 2000}/tokens",
            raw("{}"),
        ),
        # Cancel.
        Case("cancel: NUL in reason", "POST", f"/runs/{run}/cancel", raw('{"reason": "stop\\u0000"}')),
        Case("cancel: lone surrogate in reason", "POST", f"/runs/{run}/cancel", raw('{"reason": "\\ud800"}')),
        Case("cancel: reason as a number", "POST", f"/runs/{run}/cancel", raw('{"reason": 5}')),
        Case(
            "cancel: reason of 5,000 characters",
            "POST",
            f"/runs/{run}/cancel",
            raw(json.dumps({"reason": "r" * 5000})),
        ),
        # Reads: query strings and headers.
        Case("poll: afterSequence 2^63", "GET", f"/runs/{run}/events/poll?afterSequence={BIG}&timeout=0"),
        Case("poll: afterSequence 10^30", "GET", f"/runs/{run}/events/poll?afterSequence={10**30}&timeout=0"),
        Case(
            "poll: afterSequence of 5,000 digits",
            "GET",
            f"/runs/{run}/events/poll?afterSequence={'9' * 5000}&timeout=0",
        ),
        Case("poll: afterSequence -2", "GET", f"/runs/{run}/events/poll?afterSequence=-2&timeout=0"),
        Case("poll: timeout 10^30", "GET", f"/runs/{run}/events/poll?timeout={10**30}"),
        Case("poll: empty streamMode", "GET", f"/runs/{run}/events/poll?streamMode=&timeout=0"),
        Case(
            "events: Last-Event-ID of 25 nines",
            "GET",
            f"/runs/{run}/events",
            headers={"Last-Event-ID": "9" * 25},
        ),
        Case(
            "events: Last-Event-ID of 5,000 nines",
            "GET",
            f"/runs/{run}/events",
            headers={"Last-Event-ID": "9" * 5000},
        ),
        Case("events: Last-Event-ID -5", "GET", f"/runs/{run}/events", headers={"Last-Event-ID": "-5"}),
        Case("snapshot: runId double-encoded", "GET", f"/runs/acme%252F{opaque}"),
        Case(
            "snapshot: OpenWOP-Version of 4,400 digits",
            "GET",
            f"/runs/{run}",
            headers={"OpenWOP-Version": "2" * 4400},
        ),
        Case(
            "discovery: OpenWOP-Version of 4,400 digits, no key",
            "GET",
            "/.well-known/openwop",
            headers={"OpenWOP-Version": "9" * 4400},
            keyed=False,
        ),
    ]
    return table


def row_counts(engine: Engine) -> dict[str, int]:
    metadata = MetaData()
    metadata.reflect(engine)
    with engine.connect() as conn:
        return {
            name: int(conn.execute(select(func.count()).select_from(table)).scalar_one())
            for name, table in metadata.tables.items()
            if name.startswith("wop_")
        }


def wait_for_status(client: httpx.Client, run: str, wanted: str, seconds: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        snapshot: dict[str, Any] = client.get(f"/runs/{run}", headers=ALICE).json()
        if snapshot.get("status") == wanted or time.monotonic() > deadline:
            return snapshot
        time.sleep(0.1)


@pytest.fixture
def server(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    monkeypatch.setenv("WOP_MAX_BODY_BYTES", str(MAX_BODY))
    monkeypatch.setenv("WOP_MAX_STRING_CHARS", str(MAX_STRING))
    monkeypatch.setenv("WOP_PUBLIC_URL", "https://review.example.com")
    with served(db_url) as base, httpx.Client(base_url=base, timeout=30) as client:
        yield client


def test_hostile_requests_are_refused_and_change_nothing(server: httpx.Client, db_url: str) -> None:
    created = server.post("/runs", json={"workflowId": "review", "inputs": {}}, headers=ALICE)
    assert created.status_code == 201, created.text
    run_id = created.json()["runId"]
    run = project_id(run_id)
    assert wait_for_status(server, run, "waiting-approval")["status"] == "waiting-approval"
    minted = server.post(f"/runs/{run}/interrupts/review/tokens", json={}, headers=ALICE)
    assert minted.status_code == 201, minted.text
    token = minted.json()["token"]

    engine = make_engine(db_url)
    try:
        before = row_counts(engine)
        problems: list[str] = []
        table = cases(run, token, run_id.partition("/")[2])
        for case in table:
            headers = {**JSON, **case.headers, **(ALICE if case.keyed else {})}
            try:
                response = server.request(case.method, case.path, content=case.body, headers=headers)
            except httpx.HTTPError as exc:  # a stream the server broke off is a failure too
                problems.append(f"{case.name}: {exc!r}")
                continue
            problem = judge(case, response)
            if problem:
                problems.append(f"{case.name}: {problem}")
        after = row_counts(engine)
    finally:
        engine.dispose()
    assert not problems, "\n".join(problems)
    assert after == before
    assert len(table) > 90

    # Healthy after: the run is still suspended, and a good resolve goes through once.
    assert wait_for_status(server, run, "waiting-approval")["status"] == "waiting-approval"
    head = server.head(f"/runs/{run}/events", headers=ALICE)  # would stream forever as a GET
    assert (head.status_code, head.content) == (200, b"")
    good = server.post(f"/interrupts/{token}", json={"resumeValue": {"action": "accept"}}, headers=JSON)
    assert good.status_code == 200, good.text
    assert server.get("/.well-known/openwop").status_code == 200


def judge(case: Case, response: httpx.Response) -> str | None:
    """Why ``response`` is not a proper refusal of ``case``, or ``None``."""
    if response.status_code not in case.statuses:
        return f"answered {response.status_code}, expected {case.statuses}: {response.text[:200]}"
    if not response.headers.get("content-type", "").startswith("application/json"):
        return f"content type {response.headers.get('content-type')!r}"
    if response.headers.get("openwop-version") != "2.0":
        return "no OpenWOP-Version header"
    problems = official_errors("error-envelope.schema.json", response.json())
    return f"not the error envelope: {problems}" if problems else None


def test_ids_longer_than_the_idempotency_column_are_recorded_and_replayed(server: httpx.Client) -> None:
    created = server.post("/runs", json={"workflowId": "review", "inputs": {}}, headers=ALICE)
    run = project_id(created.json()["runId"])
    # A node path of four 100-character segments: within the id limit, past the 256-character
    # endpoint column once the run id is added (PostgreSQL refused it with a 500).
    node = "~2F".join(["n" * 100] * 4)
    headers = {**ALICE, **JSON, "Idempotency-Key": "k" * 40}
    body = {"resumeValue": {"action": "accept"}}
    first = server.post(f"/runs/{run}/interrupts/{node}", json=body, headers=headers)
    second = server.post(f"/runs/{run}/interrupts/{node}", json=body, headers=headers)
    assert judge(Case("first", "POST", "", statuses=(404,)), first) is None, first.text
    assert judge(Case("replay", "POST", "", statuses=(404,)), second) is None, second.text
    assert second.headers.get("openwop-idempotent-replay") == "true"

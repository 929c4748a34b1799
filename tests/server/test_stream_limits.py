"""The per-key stream limit against a real server, on each backend: a stream over the limit is
answered ``429 rate_limited`` with ``Retry-After`` in the error envelope before any byte of a
stream is sent, on both event routes, and closed streams give their slots back.

Streams are opened on raw sockets so each one's status line is read as the server sent it.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.official import official_errors
from tests.server.conftest import ALICE, READER
from tests.server.process import served
from wop_langgraph.protocol.ids import project_id

LIMIT = 3
OPENED = 7


@pytest.fixture
def server(db_url: str) -> Iterator[str]:
    env = {"WOP_MAX_STREAMS_PER_KEY": str(LIMIT), "WOP_MAX_STREAMS_TOTAL": "50"}
    with served(db_url, extra_env=env) as base:
        yield base


def send_request(base: str, path: str, headers: dict[str, str]) -> socket.socket:
    """A connection that has sent ``GET path`` and not read anything yet."""
    address = urlsplit(base)
    sock = socket.create_connection((address.hostname, address.port), timeout=30)
    lines = [f"GET {path} HTTP/1.1", f"Host: {address.netloc}", "Accept: text/event-stream"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("ascii"))
    return sock


def read_head(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The status, the headers (lower-cased names) and whatever body bytes came with them."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection after {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, rest


def read_body(sock: socket.socket, headers: dict[str, str], rest: bytes) -> Any:
    body = rest
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return json.loads(body)


def assert_refused(sock: socket.socket) -> None:
    """The whole answer is ``429 rate_limited`` in the envelope with ``Retry-After``."""
    status, headers, rest = read_head(sock)
    assert status == 429, (status, headers, rest)
    assert headers["content-type"].startswith("application/json")
    assert int(headers["retry-after"]) >= 1
    body = read_body(sock, headers, rest)
    assert official_errors("error-envelope.schema.json", body) == [], body
    assert body["error"] == "rate_limited"
    assert body["details"] == {"limit": LIMIT, "scope": "apiKey"}


def first_frame(sock: socket.socket, rest: bytes) -> bytes:
    data = rest
    while b"\n\n" not in data:
        chunk = sock.recv(65536)
        assert chunk
        data += chunk
    return data


def waiting_run(base: str) -> str:
    with httpx.Client(base_url=base, timeout=30) as client:
        created = client.post("/runs", json={"workflowId": "approve"}, headers=ALICE)
        assert created.status_code == 201, created.text
        wire = project_id(created.json()["runId"])
        deadline = time.monotonic() + 30
        while client.get(f"/runs/{wire}", headers=ALICE).json()["status"] != "waiting-approval":
            assert time.monotonic() < deadline, "the run never reached its gate"
            time.sleep(0.1)
    return wire


def test_streams_over_the_limit_are_refused_before_the_stream_starts(server: str) -> None:
    wire = waiting_run(server)
    events = f"/runs/{wire}/events"
    socks = [send_request(server, events, READER) for _ in range(OPENED)]  # all at once
    try:
        answers = [read_head(sock) for sock in socks]
        statuses = [status for status, _, _ in answers]
        assert sorted(statuses) == [200] * LIMIT + [429] * (OPENED - LIMIT), statuses
        for sock, (status, headers, rest) in zip(socks, answers, strict=True):
            if status == 200:
                assert headers["content-type"].startswith("text/event-stream")
                assert b"retry: 1000\n\n" in first_frame(sock, rest)  # a live stream (chunked)
            else:
                assert int(headers["retry-after"]) >= 1
                body = read_body(sock, headers, rest)
                assert official_errors("error-envelope.schema.json", body) == [], body
                assert body["error"] == "rate_limited"
                assert body["details"] == {"limit": LIMIT, "scope": "apiKey"}

        # The long poll shares the limit, and is refused the same way while the streams stay open.
        socks.append(send_request(server, f"/runs/{wire}/events/poll?timeout=1", READER))
        assert_refused(socks[-1])
        # Another key is not limited by this one's streams.
        socks.append(send_request(server, events, ALICE))
        assert read_head(socks[-1])[0] == 200
    finally:
        for sock in socks:
            sock.close()

    # Closed streams give their slots back (none leaks): once the server has seen them go, the
    # limit's worth of new streams is accepted again, and one more is still refused.
    deadline = time.monotonic() + 30
    while True:
        again = [send_request(server, events, READER) for _ in range(LIMIT + 1)]
        try:
            statuses = sorted(read_head(sock)[0] for sock in again)
        finally:
            for sock in again:
                sock.close()
        if statuses == [200] * LIMIT + [429]:
            break
        assert set(statuses) <= {200, 429} and statuses.count(200) <= LIMIT, statuses
        assert time.monotonic() < deadline, f"slots were not given back: {statuses}"
        time.sleep(0.2)


def test_a_langgraph_stream_over_the_limit_is_refused_before_its_run_starts(server: str) -> None:
    """The LangGraph API's streams count under the same key: over the limit, ``runs.stream``
    answers 429 in the envelope before anything is sent, and starts no run."""
    wire = waiting_run(server)
    held = [send_request(server, f"/runs/{wire}/events", ALICE) for _ in range(LIMIT)]
    lg = httpx.Client(base_url=f"{server}/langgraph", headers={"x-api-key": "alice-key"}, timeout=30)
    try:
        assert [read_head(sock)[0] for sock in held] == [200] * LIMIT
        thread_id = lg.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "approve", "input": {}, "stream_mode": ["values"]}
        refused = lg.post(f"/threads/{thread_id}/runs/stream", json=body)
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["retry-after"]) >= 1
        assert official_errors("error-envelope.schema.json", refused.json()) == [], refused.text
        assert refused.json()["error"] == "rate_limited"
        assert lg.get(f"/threads/{thread_id}/runs").json() == []  # nothing started
        assert lg.get(f"/threads/{thread_id}").json()["status"] == "idle"

        held.pop().close()  # one slot given back: the same request streams
        deadline = time.monotonic() + 30
        while True:
            with lg.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as answer:
                if answer.status_code == 200:
                    assert answer.headers["content-type"].startswith("text/event-stream")
                    assert "event: metadata" in answer.read().decode()
                    break
                assert answer.status_code == 429
            assert time.monotonic() < deadline, "the closed stream's slot was not given back"
            time.sleep(0.2)
        assert len(lg.get(f"/threads/{thread_id}/runs").json()) == 1
    finally:
        lg.close()
        for sock in held:
            sock.close()

"""What the server does on its own: callback delivery (to a real local receiver) and the sweep."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypedDict

import httpx
import pytest
from langgraph.graph import END, START, StateGraph

from tests.server.conftest import ALICE, READER, at_rest, make_settings
from wop_langgraph.host import WopHost
from wop_langgraph.nodes import request_approval
from wop_langgraph.nodes.suspend import AUTH_REQUIRED
from wop_langgraph.protocol.egress import AllowList
from wop_langgraph.protocol.ids import project_id
from wop_langgraph.server import create_app


class Receiver:
    """A loopback HTTP server recording every POST (answers ``status`` codes in turn)."""

    def __init__(self, statuses: list[int]) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.statuses = statuses
        self.arrived = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append(({k.lower(): v for k, v in self.headers.items()}, raw))
                status = outer.statuses.pop(0) if outer.statuses else 200
                self.send_response(status)
                if status == 302:
                    self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                if status == 200:
                    outer.arrived.set()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver([503, 200])
    try:
        yield r
    finally:
        r.close()


async def test_callback_is_signed_retried_and_its_token_resolves(
    host: WopHost, db_url: str, receiver: Receiver
) -> None:
    settings = make_settings(
        db_url,
        callback_allow=AllowList(loopback_http_ports=frozenset({receiver.port})),
        callback_backoff_seconds=0.05,
        public_url="https://wop.example.com",
    )
    app = create_app(host, settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            url = f"http://127.0.0.1:{receiver.port}/hook?x=1"
            created = await client.post(
                "/runs", json={"workflowId": "approve", "callbackUrl": url}, headers=ALICE
            )
            assert created.status_code == 201, created.text
            assert await asyncio.to_thread(receiver.arrived.wait, 10)
            assert len(receiver.received) == 2  # one 503, then the retry
            headers, raw = receiver.received[-1]
            timestamp = headers["openwop-timestamp"]
            expected = hmac.new(
                b"second-secret-0123456789abcdef", f"{timestamp}.".encode() + raw, hashlib.sha256
            )
            assert headers["openwop-signature"] == "sha256=" + expected.hexdigest()
            body = json.loads(raw)
            assert set(body) == {"runId", "nodeId", "interrupt", "token", "intent", "url"}
            assert body["intent"] == "resolve"  # a single-approval gate: the callback may decide it
            assert body["runId"] == created.json()["runId"] and body["nodeId"] == "review"
            assert body["interrupt"]["kind"] == "approval"
            assert body["url"] == f"https://wop.example.com/interrupts/{body['token']}"
            resolved = await client.post(
                f"/interrupts/{body['token']}", json={"resumeValue": {"action": "accept"}}
            )
            assert resolved.status_code == 200 and resolved.json()["status"] == "running"
            assert (await at_rest(client, body["runId"]))["status"] == "completed"


async def test_callback_for_a_vote_counting_gate_carries_no_vote_and_no_guessed_url(
    host: WopHost, db_url: str
) -> None:
    receiver = Receiver([200])
    try:
        settings = make_settings(
            db_url,
            callback_allow=AllowList(loopback_http_ports=frozenset({receiver.port})),
            public_url=None,
        )
        app = create_app(host, settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://evil.example") as client:
                url = f"http://127.0.0.1:{receiver.port}/hook"
                created = await client.post(
                    "/runs", json={"workflowId": "quorum", "callbackUrl": url}, headers=ALICE
                )
                assert created.status_code == 201, created.text
                assert await asyncio.to_thread(receiver.arrived.wait, 10)
                body = json.loads(receiver.received[-1][1])
                # No public URL: no link at all (never one built on a request's Host).
                assert set(body) == {"runId", "nodeId", "interrupt", "token", "intent"}
                assert body["intent"] == "inspect"
                assert (await client.get(f"/interrupts/{body['token']}")).status_code == 200
                vote = await client.post(
                    f"/interrupts/{body['token']}", json={"resumeValue": {"action": "accept"}}
                )
                assert vote.status_code == 403 and vote.json()["error"] == "forbidden"
                assert host.pending_interrupts(created.json()["runId"])[0].votes in (None, [])
    finally:
        receiver.close()


async def test_callback_for_an_auth_required_gate_carries_an_inspect_token(
    host: WopHost, db_url: str
) -> None:
    # A hand-written gate asking for openwop-interrupt-auth-required: its callback can show the
    # gate but not decide it; a bearer with approvals:respond decides it by run.
    host.register("bearer-gate", _bearer_gate())
    receiver = Receiver([200])
    try:
        allow = AllowList(loopback_http_ports=frozenset({receiver.port}))
        app = create_app(host, make_settings(db_url, callback_allow=allow))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                url = f"http://127.0.0.1:{receiver.port}/hook"
                created = await client.post(
                    "/runs", json={"workflowId": "bearer-gate", "callbackUrl": url}, headers=ALICE
                )
                assert created.status_code == 201, created.text
                assert await asyncio.to_thread(receiver.arrived.wait, 10)
                body = json.loads(receiver.received[-1][1])
                assert body["intent"] == "inspect" and "profile" not in body["interrupt"]["data"]
                assert (await client.get(f"/interrupts/{body['token']}")).status_code == 200
                run_id = created.json()["runId"]
                decided = await client.post(
                    f"/runs/{project_id(run_id)}/interrupts/gate",
                    json={"resumeValue": {"action": "accept"}},
                    headers=ALICE,
                )
                assert decided.status_code == 200, decided.text
                assert (await at_rest(client, run_id))["status"] == "completed"
    finally:
        receiver.close()


def _bearer_gate() -> Any:
    class State(TypedDict, total=False):
        action: str

    def gate(state: State) -> State:
        return {"action": request_approval("doc", "text", "Publish?", profile=AUTH_REQUIRED).action}

    g = StateGraph(State)
    g.add_node("gate", gate)
    g.add_edge(START, "gate")
    g.add_edge("gate", END)
    return g.compile()


async def test_callback_redirects_are_not_followed(host: WopHost, db_url: str) -> None:
    receiver = Receiver([302])
    try:
        settings = make_settings(
            db_url, callback_allow=AllowList(loopback_http_ports=frozenset({receiver.port}))
        )
        app = create_app(host, settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                url = f"http://127.0.0.1:{receiver.port}/hook"
                created = await client.post(
                    "/runs", json={"workflowId": "approve", "callbackUrl": url}, headers=ALICE
                )
                assert created.status_code == 201
                for _ in range(100):
                    if receiver.received:
                        break
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.3)
                assert len(receiver.received) == 1  # no retry of a 3xx, and the Location was not called
    finally:
        receiver.close()


async def test_sweep_times_out_an_approval(host: WopHost, db_url: str) -> None:
    app = create_app(host, make_settings(db_url, sweep_interval_seconds=0.2))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            run_id = (await client.post("/runs", json={"workflowId": "timed"}, headers=ALICE)).json()["runId"]
            wire = project_id(run_id)
            # The sweep runs by itself, times the approval out, and the run fails as rejected.
            resolved: list[dict[str, Any]] = []
            for _ in range(100):
                page = (await client.get(f"/runs/{wire}/events/poll?timeout=0", headers=READER)).json()
                resolved = [e for e in page["events"] if e["type"] == "interrupt.resolved"]
                if resolved:
                    break
                await asyncio.sleep(0.1)
            assert resolved and resolved[0]["payload"]["action"] == "timeout"
            snapshot: dict[str, Any] = {}
            for _ in range(100):
                snapshot = (await client.get(f"/runs/{wire}", headers=READER)).json()
                if snapshot["status"] == "failed":
                    break
                await asyncio.sleep(0.1)
            assert snapshot["status"] == "failed"
            assert snapshot["error"]["code"] == "approval_rejected"

"""A stream that breaks mid-run is resumed by LangGraph's SDK itself: the creating response names
its stream in ``Location``, and the SDK reconnects there with ``Last-Event-ID``, getting the steps
it missed and none twice.

The break is real: the SDK talks to the server through a TCP relay that cuts the first
connection whose response carries an event id, right after that event.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from urllib.parse import urlsplit

import httpx
from langgraph_sdk import get_sync_client

from tests.server.langgraph_api.conftest import UI_ORIGIN, SdkFactory
from tests.server.process import free_port


class CuttingRelay:
    """Relays TCP to the server; cuts the first response that carries an SSE ``id:`` after it."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self.target = (parts.hostname or "127.0.0.1", int(parts.port or 80))
        self.port = free_port()
        self.cuts = 0
        self.requests: list[bytes] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._up, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client), daemon=True).start()

    def _up(self, client: socket.socket, upstream: socket.socket) -> None:
        with suppress(OSError):
            while data := client.recv(65536):
                self.requests.append(data)
                upstream.sendall(data)

    def _down(self, upstream: socket.socket, client: socket.socket) -> None:
        with suppress(OSError):
            while data := upstream.recv(65536):
                client.sendall(data)
                with self._lock:
                    cut = self.cuts == 0 and b"\nid: " in data
                    self.cuts += cut
                if cut:
                    break
        for sock in (client, upstream):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._listener.close()


@contextmanager
def relay(base: str) -> Iterator[CuttingRelay]:
    found = CuttingRelay(base)
    threading.Thread(target=found.serve, daemon=True).start()
    try:
        yield found
    finally:
        found.close()


def test_the_sdk_resumes_a_cut_stream_from_location_with_last_event_id(base: str, sdk: SdkFactory) -> None:
    with relay(base) as cutting:
        client = get_sync_client(url=f"{cutting.url}/langgraph", api_key="alice-key")
        try:
            thread_id = client.threads.create()["thread_id"]
            parts = list(client.runs.stream(thread_id, "counter", input={"n": 0}, stream_mode="values"))
        finally:
            client.close()
    assert cutting.cuts == 1  # the stream was really cut
    reconnects = [r for r in cutting.requests if r.startswith(b"GET ") and b"/stream" in r.split(b"\r\n")[0]]
    assert len(reconnects) == 1
    head = reconnects[0].lower()
    assert b"last-event-id: " in head and b"stream_mode=values" in head.split(b"\r\n")[0]
    # every step once, in order, across the two connections (each starts with metadata)
    assert [p.data for p in parts if p.event == "values"] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert [p.event for p in parts].count("metadata") == 2
    assert sdk().threads.get(thread_id)["values"] == {"n": 2}


def test_stream_responses_name_their_stream_in_location(base: str, sdk: SdkFactory) -> None:
    client = sdk()
    thread_id = client.threads.create()["thread_id"]
    body = {"assistant_id": "counter", "input": {"n": 0}, "stream_mode": ["values", "updates"]}
    with httpx.stream(
        "POST",
        f"{base}/langgraph/threads/{thread_id}/runs/stream",
        json=body,
        headers={"x-api-key": "alice-key", "Origin": UI_ORIGIN},
    ) as r:
        location, content_location = r.headers["location"], r.headers["content-location"]
        exposed = r.headers["access-control-expose-headers"].lower()
        r.read()
    run_id = content_location.rsplit("/", 1)[1]
    # relative to the SDK's base URL (both SDKs append it to theirs), with the stream's modes
    assert location == f"/threads/{thread_id}/runs/{run_id}/stream?stream_mode=values&stream_mode=updates"
    assert "location" in exposed.replace(" ", "").split(",")

    stateless = httpx.post(
        f"{base}/langgraph/runs/stream",
        json={"assistant_id": "counter", "input": {"n": 0}},
        headers={"x-api-key": "alice-key"},
    )
    assert stateless.status_code == 200
    assert stateless.headers["location"].endswith("/stream?stream_mode=values")
    assert stateless.headers["location"].startswith("/threads/")

"""Stream slots: taken at once or refused, given back once, per key and in total."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from wop_langgraph.protocol.errors import RateLimited
from wop_langgraph.server.streams import RETRY_AFTER_SECONDS, StreamLimits


def test_a_slot_is_refused_past_each_limit_and_given_back_once() -> None:
    limits = StreamLimits(per_key=2, total=3)
    first, second = limits.hold("a"), limits.hold("a")
    with pytest.raises(RateLimited) as refused:
        limits.hold("a")
    assert refused.value.details == {"limit": 2, "scope": "apiKey"}
    assert refused.value.retry_after == RETRY_AFTER_SECONDS
    assert limits.open_streams("a") == 2  # a refusal takes nothing
    third = limits.hold("b")
    with pytest.raises(RateLimited) as full:
        limits.hold("c")
    assert full.value.details == {"limit": 3, "scope": "server"}
    first.release()
    first.release()  # a second release gives nothing back twice
    assert limits.open_streams("a") == 1 and limits.open_streams() == 2
    with limits.hold("a"):
        assert limits.open_streams("a") == 2
    assert limits.open_streams("a") == 1
    second.release()
    third.release()
    assert limits.open_streams() == 0


async def test_a_streamed_response_calls_on_close_when_the_client_left_before_it_started() -> None:
    # The client is gone before the response starts: the body generator never runs, so its
    # finally blocks cannot give back what the route took for the stream; the response must.
    from starlette.requests import ClientDisconnect
    from starlette.types import Message

    from wop_langgraph.server.streams import SlotStreamingResponse

    entered: list[str] = []
    closed: list[str] = []

    async def body() -> AsyncIterator[str]:
        try:
            entered.append("body")
            yield "data: 1\n\n"
        finally:
            closed.append("body")

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        raise OSError("the client left")

    limits = StreamLimits(per_key=1, total=1)
    response = SlotStreamingResponse(
        limits.hold("a"), body(), media_type="text/event-stream", on_close=lambda: closed.append("route")
    )
    scope = {"type": "http", "asgi": {"spec_version": "2.4"}, "method": "GET", "path": "/"}
    with pytest.raises(ClientDisconnect):
        await response(scope, receive, send)
    assert entered == [] and closed == ["route"] and limits.open_streams("a") == 0

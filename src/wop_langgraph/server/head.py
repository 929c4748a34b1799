"""``HEAD`` on every ``GET`` route: the ``GET`` response's status and headers, without a body."""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadMiddleware"]


class HeadMiddleware:
    """Serve ``HEAD`` as ``GET`` and drop the body (pure ASGI).

    A streaming route (the SSE events) would otherwise keep producing frames nobody reads: once
    the headers are sent, the request reads as disconnected, which ends the stream.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        # ASGI < 2.4 makes a streaming response watch receive() for the disconnect below.
        asgi = {**scope.get("asgi", {}), "spec_version": "2.0"}
        scope = {**scope, "method": "GET", "asgi": asgi}
        headers_sent = asyncio.Event()
        body_read = False
        finished = False

        async def head_receive() -> Message:
            nonlocal body_read
            if not body_read:
                body_read = True
                return await receive()
            await headers_sent.wait()
            return {"type": "http.disconnect"}

        async def head_send(message: Message) -> None:
            nonlocal finished
            if message["type"] == "http.response.start":
                await send(message)
                headers_sent.set()
            elif message["type"] == "http.response.body" and not finished:
                finished = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app(scope, head_receive, head_send)

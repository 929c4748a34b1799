"""Counts the requests that change something until they are answered (see ``host.foreground``)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from wop_langgraph.host.foreground import Foreground

__all__ = ["ForegroundMiddleware"]

#: Reads are not counted: a long-poll or an event stream lasts as long as its reader wants.
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


class ForegroundMiddleware:
    """Counts each request that is not a read in ``foreground`` until its answer is sent (pure ASGI)."""

    def __init__(self, app: ASGIApp, foreground: Foreground) -> None:
        self.app = app
        self.foreground = foreground

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _READS:
            await self.app(scope, receive, send)
            return
        self.foreground.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.foreground.leave()

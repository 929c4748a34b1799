"""Counts the requests that change something until they are answered (see ``host.foreground``)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from wop_langgraph.host.foreground import Foreground

__all__ = ["ForegroundMiddleware"]

#: Reads are not counted: a long-poll or an event stream lasts as long as its reader wants.
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


class ForegroundMiddleware:
    """Counts each request that is not a read in ``foreground`` until its answer is sent (pure ASGI).

    Paths under ``exempt`` prefixes count themselves: the LangGraph API's ``runs/wait`` and
    ``runs/stream`` are POSTs that last until the run rests, so they count only while they
    change something (``langgraph_api.routes_runs``), or the workers would defer to them.
    """

    def __init__(self, app: ASGIApp, foreground: Foreground, exempt: tuple[str, ...] = ()) -> None:
        self.app = app
        self.foreground = foreground
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] in _READS
            or (self.exempt and str(scope.get("path", "")).startswith(self.exempt))
        ):
            await self.app(scope, receive, send)
            return
        self.foreground.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.foreground.leave()

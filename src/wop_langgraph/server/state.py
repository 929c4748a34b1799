"""What the routes share: the host, the parsed configuration and the callback queue."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from fastapi import Request

from wop_langgraph.host import WopHost
from wop_langgraph.protocol.errors import CapabilityNotProvided
from wop_langgraph.server.streams import StreamLimits
from wop_langgraph.tokens import SigningKeys

if TYPE_CHECKING:
    from wop_langgraph.server.callbacks import CallbackDelivery
    from wop_langgraph.server.settings import ApiKeys, Settings

__all__ = ["ServerState", "server_state", "state_of"]


@dataclass
class ServerState:
    """One app's state, stored on ``app.state.wop``."""

    host: WopHost
    settings: Settings
    signing_keys: SigningKeys
    api_keys: ApiKeys
    delivery: CallbackDelivery
    streams: StreamLimits = field(default_factory=lambda: StreamLimits(100, 2000))

    @property
    def token_ttl(self) -> timedelta:
        return timedelta(seconds=self.settings.token_ttl_seconds)

    def link_base(self) -> str:
        """The origin links are built on: ``WOP_PUBLIC_URL``, never a request's ``Host``.

        Raises:
            CapabilityNotProvided: no public URL is configured (422).
        """
        if not self.settings.public_url:
            raise CapabilityNotProvided(
                "this server cannot build links: set WOP_PUBLIC_URL to the origin reviewers reach it at "
                "(links are never built from the request's Host header)",
                details={"setting": "WOP_PUBLIC_URL"},
            )
        return self.settings.public_url.rstrip("/")


async def server_state(request: Request) -> ServerState:
    """The app's :class:`ServerState` (a FastAPI dependency).

    ``async`` because it does no I/O: FastAPI runs a plain ``def`` dependency on the thread
    pool, a hop per dependency per request (this and :mod:`.auth`'s run on the event loop).
    """
    return state_of(request)


def state_of(request: Request) -> ServerState:
    """The app's :class:`ServerState`, for dependencies that need it without depending on
    :func:`server_state` (every sub-dependency FastAPI solves costs time on every request)."""
    state = request.app.state.wop
    assert isinstance(state, ServerState)
    return state

"""``create_app(host, settings)``: the FastAPI app over a :class:`~wop_langgraph.host.WopHost`."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from wop_langgraph.host import WopHost
from wop_langgraph.server import (
    discovery,
    docs_page,
    html,
    inbox_page,
    routes_events,
    routes_fork,
    routes_interrupts,
    routes_lists,
    routes_proof,
    routes_runs,
    routes_tokens,
)
from wop_langgraph.server.callbacks import attach_callbacks
from wop_langgraph.server.errors import ProtocolVersionMiddleware, install_error_handlers
from wop_langgraph.server.foreground import ForegroundMiddleware
from wop_langgraph.server.head import HeadMiddleware
from wop_langgraph.server.langgraph_api import mount_langgraph_api
from wop_langgraph.server.limits import RequestLimitsMiddleware
from wop_langgraph.server.maintenance import lifespan
from wop_langgraph.server.notifying import notifier_from_settings, with_notifier
from wop_langgraph.server.openapi import install_openapi
from wop_langgraph.server.paths import SlashEscapeMiddleware, bounded_path_ids
from wop_langgraph.server.settings import Settings
from wop_langgraph.server.state import ServerState
from wop_langgraph.server.streams import StreamLimits

__all__ = ["create_app"]


def create_app(host: WopHost, settings: Settings | None = None) -> FastAPI:
    """Build the OpenWOP HTTP app over ``host``.

    Nothing runs until the app is served: the lifespan recovers interrupted runs, starts the
    callback worker, the timeout sweep and (with ``WOP_NOTIFY_DIRECTORY``) the notification
    delivery. The server's delivery table is created here.

    Raises:
        ConfigurationError: missing or malformed signing keys or API keys.
    """
    settings = settings or Settings()
    keys = settings.keyring()
    receipt_keys = settings.receipt_keyring()
    if receipt_keys is not None:
        host.use_receipt_keys(receipt_keys, checkpoint_every=settings.receipt_checkpoint_seconds)
    api_keys = settings.api_keyring()
    delivery = attach_callbacks(host, settings)
    state = ServerState(
        host=host,
        settings=settings,
        signing_keys=keys,
        api_keys=api_keys,
        delivery=delivery,
        streams=StreamLimits(settings.max_streams_per_key, settings.max_streams_total),
    )
    notifier = notifier_from_settings(settings, keys)
    if notifier is not None:
        notifier.attach(host)

    app = FastAPI(
        title="wop-langgraph",
        lifespan=with_notifier(lifespan, notifier, settings.notify_poll_seconds),
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.wop = state
    # routes_fork before routes_runs: GET /runs/{runId} would otherwise take GET /runs/{runId}:fork.
    modules = (
        discovery,
        routes_fork,
        routes_proof,
        routes_runs,
        routes_lists,
        routes_tokens,
        routes_events,
        routes_interrupts,
        html,
        inbox_page,
        docs_page,
    )
    for module in modules:
        app.include_router(module.router, dependencies=[Depends(bounded_path_ids)])
    install_error_handlers(app, [route for module in modules for route in module.router.routes])
    install_openapi(app, settings.request_limits(), host.registry.workflow_ids)
    mount_langgraph_api(app, state)
    # The last added runs first: the foreground count, version negotiation, then HEAD, body
    # limits, path escapes.
    app.add_middleware(SlashEscapeMiddleware)
    app.add_middleware(RequestLimitsMiddleware, limits=settings.request_limits())
    app.add_middleware(HeadMiddleware)
    app.add_middleware(ProtocolVersionMiddleware)
    # Outermost: a request counts from its first byte to its answer's last.
    exempt = (settings.langgraph_prefix + "/",) if settings.langgraph_prefix else ()
    app.add_middleware(ForegroundMiddleware, foreground=host.foreground, exempt=exempt)
    return app

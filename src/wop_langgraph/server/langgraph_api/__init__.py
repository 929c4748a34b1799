"""The LangGraph Server API over the OpenWOP host, mounted by ``wop-langgraph serve`` at ``/langgraph``.

The subset of LangGraph's server that its SDKs (``langgraph_sdk``, ``@langchain/langgraph-sdk``),
agent-chat-ui and Agent Inbox call: ``/info``, assistants, threads (with state, history and
search), runs (background, SSE stream, wait, join, cancel) and stateless runs. Every route is
one or more :class:`~wop_langgraph.host.WopHost` operations (see :mod:`.service`): a LangGraph
run *is* an OpenWOP run, with the same id, events, claims and audit trail. Keys are the OpenWOP
surface's (``x-api-key``); refusals use the OpenWOP error envelope.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from wop_langgraph.server.errors import install_error_handlers
from wop_langgraph.server.langgraph_api import routes_assistants, routes_runs, routes_threads
from wop_langgraph.server.langgraph_api.service import LangGraphService
from wop_langgraph.server.state import ServerState

__all__ = ["create_langgraph_app", "mount_langgraph_api"]


def create_langgraph_app(state: ServerState) -> FastAPI:
    """The LangGraph API as its own app over ``state``'s host (its thread tables are created here)."""
    app = FastAPI(
        title="wop-langgraph: LangGraph Server API", docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.wop = state
    # A runs/wait drives its run itself (none when worker processes drive the runs).
    wait_drives = state.settings.langgraph_wait_drives if state.settings.workers else 0
    service = LangGraphService(
        state.host, wait_drives=wait_drives, created_without_callback=state.delivery.created_without_url
    )
    service.queue.start()  # starts enqueued runs when their turn comes (and those queued before a restart)
    app.state.langgraph = service
    # Runs first: a client's hot loop is runs/wait and runs/stream, matched route by route in
    # this order (no path of one module is another's: the order changes no answer).
    modules = (routes_runs, routes_threads, routes_assistants)
    for module in modules:
        app.include_router(module.router)
    install_error_handlers(app, [route for module in modules for route in module.router.routes])
    origins = [o.strip() for o in (state.settings.langgraph_cors_origins or "").split(",") if o.strip()]
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["content-location", "location"],
        )
    return app


def mount_langgraph_api(app: FastAPI, state: ServerState) -> None:
    """Mount the LangGraph API under ``WOP_LANGGRAPH_PREFIX`` (nothing when it is empty).

    The mount is the app's first route: every path under the prefix is the LangGraph API's, and
    its requests (a client's hot loop) are routed at once instead of being matched against each
    OpenWOP route first.
    """
    prefix = state.settings.langgraph_prefix
    if prefix:
        app.mount(prefix, create_langgraph_app(state))
        routes = app.router.routes
        routes.insert(0, routes.pop())

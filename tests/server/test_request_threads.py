"""The server runs blocking handlers on as many threads as the database pool keeps connections.

A burst of requests beyond the pool would open connections only to close them as they come
back (measured: a new PostgreSQL session costs ~1 ms CPU and ~4 ms wall); queued for a
thread instead, the extra requests cost nothing.
"""

from __future__ import annotations

from pathlib import Path

from anyio import to_thread
from fastapi.testclient import TestClient

from tests.server.conftest import make_host, make_settings
from wop_langgraph.server import create_app


def _threads(db_url: str, **overrides: object) -> tuple[int, int]:
    """The thread limit inside the running app, and the engine pool's size."""
    host = make_host(db_url)
    try:
        app = create_app(host, make_settings(db_url, workers=0, **overrides))
        with TestClient(app) as client:
            limit = client.portal.call(lambda: to_thread.current_default_thread_limiter().total_tokens)
        return int(limit), host.engine.pool.size()  # type: ignore[attr-defined]
    finally:
        host.saver.close()


def test_request_threads_default_to_the_pool_size(tmp_path: Path) -> None:
    limit, pool = _threads(f"sqlite:///{tmp_path / 'wop.db'}")
    assert limit == pool == 10


def test_request_threads_can_be_set(tmp_path: Path) -> None:
    limit, _ = _threads(f"sqlite:///{tmp_path / 'wop.db'}", request_threads=3)
    assert limit == 3

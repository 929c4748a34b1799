"""Where the LangGraph API is served: ``/langgraph`` by default, another prefix, or not at all."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.server.conftest import make_settings, serving
from tests.server.langgraph_api.graphs import WORKFLOWS
from wop_langgraph.host import WopHost
from wop_langgraph.server import create_app


@pytest.mark.parametrize(
    ("prefix", "served_at"), [(None, "/langgraph"), ("/lg/v1", "/lg/v1"), ("off", None), ("", None)]
)
async def test_the_prefix_setting_moves_or_removes_the_api(
    db_url: str, prefix: str | None, served_at: str | None
) -> None:
    host = WopHost.from_url(db_url)
    host.register("two-questions", WORKFLOWS["two-questions"])
    overrides = {} if prefix is None else {"langgraph_prefix": prefix}
    try:
        app = create_app(host, make_settings(db_url, workers=0, **overrides))
        async with serving(app) as client:
            for candidate in ("/langgraph", "/lg/v1"):
                info = await client.get(f"{candidate}/info")
                assert info.status_code == (200 if candidate == served_at else 404)
            # the OpenWOP surface is unaffected
            assert (await client.get("/.well-known/openwop")).status_code == 200
            if served_at is not None:
                found = await client.get(
                    f"{served_at}/assistants/two-questions", headers={"x-api-key": "alice-key"}
                )
                assert found.status_code == 200 and found.json()["graph_id"] == "two-questions"
    finally:
        host.saver.close()


@pytest.mark.parametrize("prefix", ["langgraph", "/langgraph/", "/a b", "/x?y"])
def test_a_malformed_prefix_is_refused_at_start_up(prefix: str) -> None:
    with pytest.raises(ValidationError, match="WOP_LANGGRAPH_PREFIX"):
        make_settings("sqlite:///unused.db", langgraph_prefix=prefix)


def test_no_route_of_the_api_answers_a_path_and_method_of_another() -> None:
    # The routes are matched in order, runs first for the hot loop: that changes no answer
    # only while no two routes serve one path and method.
    import re

    from wop_langgraph.server.langgraph_api import routes_assistants, routes_runs, routes_threads

    routes = [r for m in (routes_runs, routes_threads, routes_assistants) for r in m.router.routes]
    assert len(routes) > 20
    for route in routes:
        path = re.sub(r"\{[^}]+\}", "x", route.path)
        takers = [r for r in routes if r.methods & route.methods and r.path_regex.fullmatch(path)]
        assert takers == [route], (route.path, [r.path for r in takers])

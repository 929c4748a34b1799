"""``POST /threads`` answers from the row it inserted (no read back) and still refuses a taken id.

A minted id (no ``thread_id`` given) is a random UUID and is inserted without a lookup; a given
id is looked up first: taken, it is ``409`` (``if_exists: do_nothing``: the existing thread),
whoever's it is, and the stored thread is unchanged.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.server.conftest import make_settings, serving
from tests.server.langgraph_api.test_wait_drive import ALICE, _graph
from wop_langgraph.host import WopHost
from wop_langgraph.server import create_app

BOB = {"x-api-key": "bob-key"}


async def test_a_created_thread_is_answered_as_stored_and_a_taken_id_is_refused(db_url: str) -> None:
    host = WopHost.from_url(db_url)
    host.register("mail", _graph())
    try:
        async with serving(create_app(host, make_settings(db_url, workers=1))) as client:
            minted = (await client.post("/langgraph/threads", json={}, headers=ALICE)).json()
            stored = (await client.get(f"/langgraph/threads/{minted['thread_id']}", headers=ALICE)).json()
            assert stored == minted and minted["status"] == "idle" and minted["metadata"] == {}

            body = {"thread_id": "t-given-1", "metadata": {"a": 1}}
            first = await client.post("/langgraph/threads", json=body, headers=ALICE)
            assert first.status_code == 200, first.text
            again = await client.post(
                "/langgraph/threads", json={**body, "metadata": {"a": 2}}, headers=ALICE
            )
            assert again.status_code == 409, again.text
            other = await client.post("/langgraph/threads", json=body, headers=BOB)
            assert other.status_code == 409, other.text
            same = await client.post(
                "/langgraph/threads", json={**body, "if_exists": "do_nothing"}, headers=ALICE
            )
            assert same.status_code == 200 and same.json() == first.json()
            kept = (await client.get("/langgraph/threads/t-given-1", headers=ALICE)).json()
            assert kept == first.json() and kept["metadata"] == {"a": 1}
    finally:
        host.saver.close()


async def test_a_json_body_is_parsed_once_by_the_request_limits(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The route takes the document the limits parsed and checked; only a body they did not
    # parse (not declared JSON) is parsed by the route itself.
    from wop_langgraph.server.langgraph_api import bodies

    parsed: list[bytes] = []
    loads = bodies.json.loads

    def counted(raw: bytes) -> Any:
        parsed.append(raw)
        return loads(raw)

    monkeypatch.setattr(bodies, "json", SimpleNamespace(loads=counted))  # the route's json only
    host = WopHost.from_url(db_url)
    try:
        async with serving(create_app(host, make_settings(db_url, workers=0))) as client:
            declared = await client.post("/langgraph/threads", json={"metadata": {"a": 1}}, headers=ALICE)
            plain = {**ALICE, "content-type": "text/plain"}
            undeclared = await client.post(
                "/langgraph/threads", content=b'{"metadata": {"a": 2}}', headers=plain
            )
    finally:
        host.saver.close()
    assert declared.json()["metadata"] == {"a": 1}, declared.text
    assert undeclared.json()["metadata"] == {"a": 2}, undeclared.text
    assert parsed == [b'{"metadata": {"a": 2}}']

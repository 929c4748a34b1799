"""Every official conformance fixture loads, or is refused with a reason naming what is missing.

The fixtures are kept unedited in ``third_party/openwop/conformance/fixtures`` (CC BY 4.0, see
``third_party/openwop``); when the shared copy they came from is present, they must be identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.host._support import HostFactory
from tests.official import openwop_dir
from wop_langgraph.definitions import load_definitions

FIXTURES = Path(__file__).resolve().parents[2] / "third_party" / "openwop" / "conformance" / "fixtures"

#: The fixtures this host refuses, and the node type each refusal must name.
REFUSED = {
    "conformance-phase4-replay-divergence.json": "core.ai.structuredOutput",
}


def fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def test_the_vendored_fixtures_are_the_official_bytes() -> None:
    shared = openwop_dir() / "conformance" / "fixtures"
    if not shared.is_dir():
        pytest.skip(f"no shared OpenWOP copy at {shared} to compare with")
    assert [p.name for p in fixture_files()] == sorted(p.name for p in shared.glob("*.json"))
    for path in fixture_files():
        assert path.read_bytes() == (shared / path.name).read_bytes(), path.name


def test_every_fixture_loads_or_is_refused_with_a_reason(make_host: HostFactory) -> None:
    host = make_host()
    report = load_definitions(host, FIXTURES)
    assert len(fixture_files()) == 24
    assert set(report.refused) == set(REFUSED)
    for name, type_id in REFUSED.items():
        assert f"node type {type_id!r}" in report.refused[name], report.refused[name]
    expected = sorted(json.loads(p.read_text())["id"] for p in fixture_files() if p.name not in REFUSED)
    assert sorted(report.loaded) == expected == host.registry.definition_ids()
    for workflow_id in report.loaded:
        definition = host.registry.get(workflow_id).definition
        assert definition == json.loads((FIXTURES / f"{workflow_id}.json").read_text())


def test_loading_twice_is_idempotent(make_host: HostFactory) -> None:
    host = make_host()
    first = load_definitions(host, FIXTURES)
    second = load_definitions(host, FIXTURES)
    assert first == second


def test_a_missing_folder_is_an_error(make_host: HostFactory, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_definitions(make_host(), tmp_path / "nope")


def test_a_broken_file_is_refused_and_the_rest_load(make_host: HostFactory, tmp_path: Path) -> None:
    (tmp_path / "a-broken.json").write_text("{not json")
    (tmp_path / "b-noop.json").write_bytes((FIXTURES / "conformance-noop.json").read_bytes())
    (tmp_path / "c-same-id.json").write_bytes((FIXTURES / "conformance-noop.json").read_bytes())
    report = load_definitions(make_host(), tmp_path)
    assert report.loaded == ("conformance-noop",)
    assert set(report.refused) == {"a-broken.json", "c-same-id.json"}
    assert "earlier file" in report.refused["c-same-id.json"]


def test_conversation_replay_projects_a_byte_equal_conversation_channel(make_host: HostFactory) -> None:
    # conformance-conversation-replay declares channels.conversation (reducer "message"): the
    # source run's snapshot projects it, non-empty, and a replay fork's is byte-equal.
    from tests.host._graphs import ALICE

    host = make_host(conversations=True)
    load_definitions(host, FIXTURES)
    source = host.create_run("conformance-conversation-replay", {}, owner=ALICE)
    assert source["status"] == "completed"
    channels = host.snapshot(source["runId"])["channels"]
    conversation = channels["conversation"]
    assert [m["type"] for m in conversation] == (
        ["conversation.opened"] + ["conversation.exchanged"] * 3 + ["conversation.closed"]
    )
    assert [m["turnIndex"] for m in conversation if m["type"] == "conversation.exchanged"] == [0, 1, 2]
    forked = host.fork(source["runId"], mode="replay", principal=ALICE)
    assert host.snapshot(forked["runId"])["status"] == "completed"
    assert json.dumps(host.snapshot(forked["runId"])["channels"]) == json.dumps(channels)
    # A definition that declares no channel projects none.
    plain = host.create_run("conformance-noop", {}, owner=ALICE)
    assert "channels" not in host.snapshot(plain["runId"])

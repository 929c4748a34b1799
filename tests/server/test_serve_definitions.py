"""``wop-langgraph serve --definitions``: argument checks that stop before the server starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.conftest import API_KEYS, SIGNING_KEYS
from wop_langgraph.server.cli import serve_main


def test_serve_needs_a_target_or_definitions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        serve_main([])
    assert stopped.value.code == 2
    assert "--definitions DIR" in capsys.readouterr().err


def test_a_missing_definitions_folder_stops_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WOP_SIGNING_KEYS", SIGNING_KEYS)
    monkeypatch.setenv("WOP_API_KEYS", API_KEYS)
    missing = tmp_path / "no-such-folder"
    assert serve_main(["--definitions", str(missing), "--db", f"sqlite:///{tmp_path / 'w.db'}"]) == 2
    assert f"no definitions folder at {missing}" in capsys.readouterr().err

"""``WOP_NOTIFY_*``: what the server builds from them, and what it refuses at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.conftest import API_KEYS, SIGNING_KEYS, make_settings
from wop_langgraph.server.cli import serve_main
from wop_langgraph.server.notifying import notifier_from_settings
from wop_langgraph.server.settings import ConfigurationError


def test_no_directory_means_no_notifier() -> None:
    assert notifier_from_settings(make_settings("sqlite://")) is None


def test_settings_build_channels_links_and_policy(tmp_path: Path) -> None:
    directory = tmp_path / "directory.json"
    directory.write_text('{"alice": {"email": "alice@example.test", "apprise": ["ntfy://ntfy.sh/a"]}}')
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "subject.txt").write_text("Decide: $title\n")
    settings = make_settings(
        "sqlite://",
        notify_directory=str(directory),
        notify_smtp_host="127.0.0.1",
        notify_smtp_port=2525,
        notify_reminders="0.5, 0.9",
        notify_escalation_to="oncall,lead",
        notify_templates=str(tmp_path / "templates"),
    )
    notifier = notifier_from_settings(settings)
    assert notifier is not None
    contact = notifier.directory.get("alice")
    assert contact is not None and contact.addresses == ["mailto:alice@example.test", "ntfy://ntfy.sh/a"]
    assert notifier.email is not None and notifier.email.settings.port == 2525
    assert notifier.links is not None and notifier.links.public_url == settings.public_url
    assert notifier.policy.reminders == (0.5, 0.9)
    assert notifier.policy.escalation_for("any") == ["oncall", "lead"]
    assert notifier.templates.subject == "Decide: $title"


def test_settings_register_channels_of_ones_own_before_the_built_in_ones() -> None:
    settings = make_settings(
        "sqlite://",
        notify_directory='{"alice": {"other": ["pager:alice"]}}',
        notify_channels="tests.notify.pager:Pager, tests.notify.pager:Pager",
    )
    notifier = notifier_from_settings(settings)
    assert notifier is not None
    assert [c.name for c in notifier.channels] == ["pager", "pager", "email", "apprise"]
    first = next(iter(notifier.channels))
    assert notifier.channels.route("pager:alice") is first  # a class was named: each got its instance
    assert notifier.channels.route("ntfy://ntfy.sh/a") is notifier.apprise


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"notify_directory": "{not json"}, "not valid JSON"),
        ({"notify_directory": '{"alice": "alice@example.test"}'}, "entry of 'alice' must be an object"),
        ({"notify_directory": "/nonexistent/directory.json"}, "No such file"),
        ({"notify_directory": "{}", "notify_reminders": "1.5"}, "strictly between 0 and 1"),
        ({"notify_directory": "{}", "notify_templates": "/nonexistent"}, "is not a directory"),
        ({"notify_directory": "{}", "notify_channels": "tests.notify.pager"}, "expected MODULE:ATTR"),
        ({"notify_directory": "{}", "notify_channels": "tests.notify.nowhere:Pager"}, "no module named"),
        ({"notify_directory": "{}", "notify_channels": "tests.notify.pager:Pagr"}, "has no attribute 'Pagr'"),
        (
            {"notify_directory": "{}", "notify_channels": "tests.notify.pager:NOT_A_CHANNEL"},
            "is not a channel",
        ),
        ({"notify_directory": "{}", "notify_channels": "tests.notify.pager:FilePager"}, "KeyError"),
    ],
)
def test_bad_settings_are_refused_with_a_reason(values: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigurationError, match="WOP_NOTIFY_") as caught:
        notifier_from_settings(make_settings("sqlite://", **values))
    assert words in str(caught.value)


def test_serve_refuses_a_bad_directory_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WOP_SIGNING_KEYS", SIGNING_KEYS)
    monkeypatch.setenv("WOP_API_KEYS", API_KEYS)
    monkeypatch.setenv("WOP_NOTIFY_DIRECTORY", "{broken")
    assert serve_main(["tests.notify.graphs:WORKFLOWS", "--db", f"sqlite:///{tmp_path / 'w.db'}"]) == 2
    assert "WOP_NOTIFY_*: notify directory: not valid JSON" in capsys.readouterr().err

"""The judge itself: the official files load, every reference resolves, stand-ins are labelled."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import tests.official as official
from tests.protocol.cases import EVENT


def test_the_official_files_are_found() -> None:
    names = {p.name for p in official.official_files()}
    assert {"suspend-request.schema.json", "run-event.schema.json", "run-event-payloads.schema.json"} <= names


def test_every_external_ref_resolves_to_an_official_file_or_a_labelled_stand_in() -> None:
    assert official.unresolved_external_refs() == []
    for uri, schema in official.STAND_INS.items():
        assert "STAND-IN" in schema["$comment"], uri
        with pytest.raises(KeyError):  # a stand-in never shadows an official document
            official.official_schema(uri)


def test_official_schemas_are_themselves_valid() -> None:
    for name in ("suspend-request.schema.json", "run-event.schema.json", "run-event-payloads.schema.json"):
        Draft202012Validator.check_schema(official.official_schema(name))


def test_env_var_overrides_the_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "openwop"
    shutil.copytree(official.openwop_dir(), copy)
    monkeypatch.setenv(official.ENV_VAR, str(copy))
    assert official.openwop_dir() == copy.resolve()
    monkeypatch.setenv(official.ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match=official.ENV_VAR):
        official.official_files()


def test_default_location_is_the_repositorys_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(official.ENV_VAR, raising=False)
    repo = Path(official.__file__).resolve().parents[1]
    assert official.openwop_dir() == repo / "third_party" / "openwop"


def test_the_type_oneof_defect_is_pinned() -> None:
    # run-event.schema.json as vendored refuses EVERY registered type: `oneOf [enum, pattern]`
    # where each enum member also matches the pattern. `event_errors` judges `type` with anyOf
    # semantics instead. If this starts failing, the upstream schema was fixed: drop the
    # workaround in tests/official.py.
    raw = Draft202012Validator(
        {"$ref": official.RUN_EVENT_ID},
        registry=official.registry(),
        format_checker=official.format_checker(),
    )
    failures = [e for e in raw.iter_errors(EVENT) if list(e.absolute_path) == ["type"]]
    assert failures and failures[0].validator == "oneOf"
    assert official.event_errors(EVENT) == []
    assert official.event_errors({**EVENT, "type": "openwop.reserved"})


def test_date_time_is_asserted() -> None:
    assert official.is_valid_official(
        "run-event.schema.json", "2025-06-01T12:00:60Z", pointer="/properties/timestamp"
    )
    assert not official.is_valid_official(
        "run-event.schema.json", "2025-06-01", pointer="/properties/timestamp"
    )

"""The runtime's copy of the official configurable schema is the official file, unedited."""

from __future__ import annotations

from importlib import resources

from tests.official import openwop_dir
from wop_langgraph.protocol.official import configurable_schema


def test_shipped_configurable_schema_is_byte_identical_to_the_official_file() -> None:
    shipped = (
        resources.files("wop_langgraph.protocol.official").joinpath("configurable.schema.json").read_bytes()
    )
    official = (openwop_dir() / "schemas" / "v2" / "configurable.schema.json").read_bytes()
    assert shipped == official


def test_only_the_budget_reference_is_made_local() -> None:
    schema = configurable_schema()
    assert schema["properties"]["run"]["properties"]["escalationThreshold"] == {
        "type": "integer",
        "minimum": 0,
    }
    assert "budget-policy.schema.json" not in str(schema)

"""The generated contract in ``schemas/``: up to date, valid JSON Schema, and faithful to the models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.official import official_examples, official_schema, validate_official
from wop_langgraph.protocol import ConversationOpened, ConversationTurn, is_event_type
from wop_langgraph.protocol.wire_schemas import render_schema, wire_schemas

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"


def test_committed_schemas_are_current() -> None:
    expected = {name: render_schema(schema) for name, schema in wire_schemas().items()}
    on_disk = {
        str(p.relative_to(SCHEMAS)): p.read_text(encoding="utf-8") for p in SCHEMAS.rglob("*.schema.json")
    }
    stale = sorted(name for name in expected if on_disk.get(name) != expected[name])
    extra = sorted(set(on_disk) - set(expected))
    assert not stale and not extra, (
        f"schemas/ is stale (changed: {stale}, no longer generated: {extra}); "
        "run: python scripts/gen_schemas.py"
    )


def test_rendering_is_deterministic() -> None:
    first = {name: render_schema(schema) for name, schema in wire_schemas().items()}
    second = {name: render_schema(schema) for name, schema in wire_schemas().items()}
    assert first == second
    assert all(text.endswith("}\n") for text in first.values())


def test_the_generator_script_agrees_with_the_committed_files() -> None:
    # `--check` writes nothing, so this test never edits the repository.
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_schemas.py"), "--check"], capture_output=True, text=True
    )
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


@pytest.mark.parametrize("name", sorted(wire_schemas()))
def test_generated_schemas_are_valid_json_schema(name: str) -> None:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_registered_event_type_fits_our_type_grammar() -> None:
    # run-event.schema.json's `type` is oneOf [enum, pattern]; every enum member fits the
    # pattern, so our single pattern accepts exactly the registered and vendor names.
    branches = official_schema("run-event.schema.json")["properties"]["type"]["oneOf"]
    enum = next(b["enum"] for b in branches if "enum" in b)
    pattern = next(b["pattern"] for b in branches if "pattern" in b)
    from wop_langgraph.protocol.events import EVENT_TYPE_PATTERN

    assert pattern == EVENT_TYPE_PATTERN
    assert all(is_event_type(t) for t in enum)
    assert not is_event_type("openwop.anything")


def test_official_examples_are_accepted_by_our_models() -> None:
    judged = {
        ("https://openwop.dev/spec/v2/conversation-turn.schema.json", ""): ConversationTurn,
        ("https://openwop.dev/spec/v2/conversation-event.schema.json", "/$defs/ConversationOpenedPayload"): (
            ConversationOpened
        ),
    }
    examples = official_examples()
    assert examples, "the official files carry examples; finding none means the walk is broken"
    for uri, pointer, example in examples:
        model = judged.get((uri, pointer))
        assert model is not None, f"an official example at {uri}#{pointer} has no model judged against it"
        # A `$comment` member annotates the example; the closed def itself would refuse it.
        doc = {k: v for k, v in example.items() if k != "$comment"}
        validate_official(uri, doc, pointer=pointer)
        assert model.from_wire(doc).to_wire() == doc

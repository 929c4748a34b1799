"""Write the project's wire contract to ``schemas/`` as JSON Schema, generated from the models.

Run from anywhere: ``python scripts/gen_schemas.py``. The output is deterministic (sorted keys,
two-space indent, trailing newline), so regenerating an unchanged contract changes no file;
generated files that the models no longer produce are removed. ``tests/protocol`` fails when the
committed files are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from wop_langgraph.protocol.wire_schemas import render_schema, wire_schemas

SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"


def main() -> int:
    """Regenerate ``schemas/``; print what changed and return 0."""
    wanted = {SCHEMAS_DIR / name: render_schema(schema) for name, schema in wire_schemas().items()}
    for stale in sorted(set(SCHEMAS_DIR.rglob("*.schema.json")) - set(wanted)):
        stale.unlink()
        print(f"removed {stale.relative_to(SCHEMAS_DIR.parent)}")
    for path, text in sorted(wanted.items()):
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {path.relative_to(SCHEMAS_DIR.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write the project's wire contract to ``schemas/`` as JSON Schema, generated from the models.

Usage: ``python scripts/gen_schemas.py`` regenerates ``schemas/``; ``--check`` writes nothing and
exits 1 when a committed file is stale. The output is deterministic (sorted keys, two-space
indent, trailing newline), so regenerating an unchanged contract changes no file; generated
files the models no longer produce are removed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCHEMAS_DIR = REPO / "schemas"

# Run from a checkout even when the package is not installed.
sys.path.insert(0, str(REPO / "src"))

from wop_langgraph.protocol.wire_schemas import render_schema, wire_schemas  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or with ``--check`` verify) ``schemas/``; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if schemas/ is stale")
    args = parser.parse_args(argv)

    wanted = {SCHEMAS_DIR / name: render_schema(schema) for name, schema in wire_schemas().items()}
    stale = sorted(set(SCHEMAS_DIR.rglob("*.schema.json")) - set(wanted))
    changed = sorted(
        p for p, text in wanted.items() if not p.is_file() or p.read_text(encoding="utf-8") != text
    )
    for path in stale:
        print(f"{'stale' if args.check else 'removed'} {path.relative_to(REPO)}")
        if not args.check:
            path.unlink()
    for path in changed:
        print(f"{'out of date' if args.check else 'wrote'} {path.relative_to(REPO)}")
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(wanted[path], encoding="utf-8", newline="\n")
    return 1 if args.check and (stale or changed) else 0


if __name__ == "__main__":
    sys.exit(main())

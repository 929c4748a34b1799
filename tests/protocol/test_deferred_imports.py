"""``rfc3987_syntax`` (2.1 s to import: it builds a grammar) is imported when an IRI format is
first checked, not when wop_langgraph starts; the checks are the same ones.

Each case runs in a fresh interpreter: this test process has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")

PROBE = """
import json, sys
import wop_langgraph
from wop_langgraph.protocol.errors import ValidationError
from wop_langgraph.protocol.jsonschema_check import validate_against_schema

loaded_at_start = "rfc3987_syntax.syntax_helpers" in sys.modules
samples = ["https://example.com/r\\u00e9sum\\u00e9", "http://[::1", "relative/p\\u00e4th", "a b"]
verdicts = {}
for format_ in ("iri", "iri-reference"):
    for value in samples:
        try:
            validate_against_schema(value, {"type": "string", "format": format_}, what="probe")
            verdicts[f"{format_} {value}"] = True
        except ValidationError:
            verdicts[f"{format_} {value}"] = False
import rfc3987_syntax
real = {
    f"{format_} {value}": rfc3987_syntax.is_valid_syntax(format_.replace("-", "_"), value)
    for format_ in ("iri", "iri-reference")
    for value in samples
}
print(json.dumps({
    "loaded_at_start": loaded_at_start,
    "verdicts": verdicts,
    "real": real,
    "real_module_now": "syntax_helpers" in vars(sys.modules["rfc3987_syntax"]),
}))
"""


def _probe() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_starting_does_not_import_the_iri_grammar_and_the_iri_checks_are_unchanged() -> None:
    result = _probe()
    assert result["loaded_at_start"] is False
    assert result["verdicts"] == result["real"]  # the real module's answers, through jsonschema
    assert set(result["verdicts"].values()) == {True, False}  # type: ignore[union-attr]
    assert result["real_module_now"] is True

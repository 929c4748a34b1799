"""The official fixtures, driven leg by leg over HTTP by the conformance runner, on each database.

The conformance table (``docs/conformance.md``) is the runner's output: a leg that starts or stops passing (or
whose capability discovery starts advertising) changes it, and the table must be regenerated
(``python -m tests.conformance.runner --write-readme``).
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from tests.conformance.runner import LEGS, markdown_table, readme_table, run_legs, serve_for_conformance

pytestmark = pytest.mark.slow


def test_every_fixture_has_a_leg() -> None:
    from tests.conformance.runner import FIXTURES

    fixtures = {p.stem for p in FIXTURES.glob("*.json")}
    assert len(fixtures) == 24
    assert {leg.fixture for leg in LEGS} == fixtures


def test_the_runner_results_are_the_readme_table(db_url: str) -> None:
    with contextmanager(serve_for_conformance)(db_url) as base:
        results = run_legs(base, db_url)
    failures = [f"{r.fixture} / {r.leg}: {r.detail}" for r in results if r.result == "fail"]
    assert markdown_table(results) == readme_table(), "\n".join(failures)

"""LangGraph's own checkpointer conformance suite, run against AsyncSQLModelSaver on each backend.

langgraph-checkpoint-conformance 0.0.2 has 81 tests: 58 for the five base capabilities and 23
for the three extended ones, which it only runs when the saver overrides them. The suite calls
the factory once per capability; each call gets a new saver on an emptied store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport
from sqlalchemy import delete

from wop_langgraph.store import AsyncSQLModelSaver
from wop_langgraph.store.checkpoint_tables import checkpoint_writes_table, checkpoints_table

EXPECTED = {
    "put": 17,
    "put_writes": 10,
    "get_tuple": 10,
    "list": 16,
    "delete_thread": 5,
    "delete_for_runs": 7,
    "copy_thread": 8,
    "prune": 8,
}


async def _run_suite(url: str) -> CapabilityReport:
    @checkpointer_test(name=f"AsyncSQLModelSaver[{url.split(':')[0]}]")
    async def factory() -> AsyncIterator[AsyncSQLModelSaver]:
        saver = AsyncSQLModelSaver.from_url(url)
        await saver.asetup()
        with saver.engine.begin() as conn:
            conn.execute(delete(checkpoint_writes_table))
            conn.execute(delete(checkpoints_table))
        try:
            yield saver
        finally:
            saver.close()

    return await validate(factory)


async def test_all_81_conformance_tests_pass(db_url: str) -> None:
    report = await _run_suite(db_url)

    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert failures == {}
    assert {name: r.tests_passed for name, r in report.results.items()} == EXPECTED
    assert all(r.detected and r.passed is True and r.tests_failed == 0 for r in report.results.values())
    assert sum(r.tests_passed for r in report.results.values()) == 81
    assert report.conformance_level() == "FULL"

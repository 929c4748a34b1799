"""Real compiled LangGraph graphs over SQLModelSaver: interrupts, resumes, subgraphs, pruning.

Every scenario runs on SQLite and PostgreSQL and in the three ``durability`` modes. These are
the behaviours the conformance suite cannot see, modelled on LangGraph's own
``test_interrupt_multiple``, ``test_parallel_interrupts`` and ``test_double_interrupt_subgraph``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from tests.store.conftest import new_thread

from wop_langgraph.store import AsyncSQLModelSaver, SQLModelSaver

Durability = Literal["sync", "async", "exit"]
DURABILITY: list[Durability] = ["sync", "async", "exit"]


class TwoQuestions(TypedDict):
    a: str
    b: str


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _two_questions(saver: Any) -> Any:
    def ask_twice(state: TwoQuestions) -> dict[str, str]:
        first = interrupt({"q": "first?"})
        second = interrupt({"q": "second?"})
        return {"a": first, "b": second}

    builder = StateGraph(TwoQuestions)
    builder.add_node("ask_twice", ask_twice)
    builder.add_edge(START, "ask_twice")
    builder.add_edge("ask_twice", END)
    return builder.compile(checkpointer=saver)


def _parallel(saver: Any) -> Any:
    def asker(who: str) -> Any:
        def node(state: Log) -> dict[str, list[str]]:
            return {"log": [f"{who}:{interrupt({'who': who})}"]}

        return node

    builder = StateGraph(Log)
    builder.add_node("left", asker("left"))
    builder.add_node("right", asker("right"))
    builder.add_node("join", lambda state: {"log": ["join"]})
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_edge("join", END)
    return builder.compile(checkpointer=saver)


def _nested(saver: Any) -> Any:
    inner = StateGraph(Log)
    inner.add_node("inner_ask", lambda state: {"log": [f"inner:{interrupt('inner?')}"]})
    inner.add_edge(START, "inner_ask")
    inner.add_edge("inner_ask", END)

    outer = StateGraph(Log)
    outer.add_node("sub", inner.compile())
    outer.add_node("after", lambda state: {"log": ["after"]})
    outer.add_edge(START, "sub")
    outer.add_edge("sub", "after")
    outer.add_edge("after", END)
    return outer.compile(checkpointer=saver)


def _config(thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _values(interrupts: Sequence[Any]) -> list[Any]:
    return [i.value for i in interrupts]


@pytest.mark.parametrize("durability", DURABILITY)
def test_second_question_replaces_the_first_in_get_state(
    shared_saver: SQLModelSaver, durability: Durability
) -> None:
    graph, config = _two_questions(shared_saver), _config(new_thread())

    [first] = graph.invoke({"a": "", "b": ""}, config, durability=durability)["__interrupt__"]
    assert first.value == {"q": "first?"}
    assert _values(graph.get_state(config).interrupts) == [{"q": "first?"}]

    [second] = graph.invoke(Command(resume={first.id: "A1"}), config, durability=durability)["__interrupt__"]
    assert second.value == {"q": "second?"} and second.id != first.id
    # The __interrupt__ slot (-3) was upserted in place: the pending question is the second one.
    state = graph.get_state(config)
    assert _values(state.interrupts) == [{"q": "second?"}]
    assert [i.id for i in state.interrupts] == [second.id]

    final = graph.invoke(Command(resume={second.id: "A2"}), config, durability=durability)
    assert final == {"a": "A1", "b": "A2"}
    done = graph.get_state(config)
    assert done.interrupts == () and done.next == ()


class _NeverOverwrites(SQLModelSaver):
    """A broken saver that keeps the first ``__interrupt__`` of a task: the test above must see it."""

    def put_writes(self, config: RunnableConfig, writes: Any, task_id: str, task_path: str = "") -> None:
        found = self.get_tuple(config)
        asked = {(t, c) for t, c, _ in (found.pending_writes or [])} if found else set()
        kept = [(c, v) for c, v in writes if not (c == "__interrupt__" and (task_id, c) in asked)]
        super().put_writes(config, kept, task_id, task_path)


def test_a_saver_without_the_upsert_would_show_the_first_question(module_db_url: str) -> None:
    broken = _NeverOverwrites.from_url(module_db_url)
    try:
        graph, config = _two_questions(broken), _config(new_thread())
        [first] = graph.invoke({"a": "", "b": ""}, config, durability="sync")["__interrupt__"]
        [second] = graph.invoke(Command(resume={first.id: "A1"}), config, durability="sync")["__interrupt__"]
        assert second.value == {"q": "second?"}
        assert _values(graph.get_state(config).interrupts) == [{"q": "first?"}]
    finally:
        broken.close()


@pytest.mark.parametrize("durability", DURABILITY)
def test_parallel_interrupts_in_two_nodes_resume_independently(
    shared_saver: SQLModelSaver, durability: Durability
) -> None:
    graph, config = _parallel(shared_saver), _config(new_thread())

    asked = graph.invoke({"log": []}, config, durability=durability)["__interrupt__"]
    by_who = {i.value["who"]: i for i in asked}
    assert set(by_who) == {"left", "right"}
    assert sorted(v["who"] for v in _values(graph.get_state(config).interrupts)) == ["left", "right"]

    out = graph.invoke(Command(resume={by_who["left"].id: "L"}), config, durability=durability)
    assert [i.id for i in out["__interrupt__"]] == [by_who["right"].id]
    assert [i.id for i in graph.get_state(config).interrupts] == [by_who["right"].id]

    final = graph.invoke(Command(resume={by_who["right"].id: "R"}), config, durability=durability)
    assert sorted(final["log"]) == ["join", "left:L", "right:R"]
    assert graph.get_state(config).interrupts == ()


@pytest.mark.parametrize("durability", DURABILITY)
def test_subgraph_interrupt_resumes_by_id(shared_saver: SQLModelSaver, durability: Durability) -> None:
    graph, config = _nested(shared_saver), _config(new_thread())

    [asked] = graph.invoke({"log": []}, config, durability=durability)["__interrupt__"]
    assert asked.value == "inner?"
    state = graph.get_state(config, subgraphs=True)
    assert _values(state.interrupts) == ["inner?"]
    [task] = state.tasks
    assert task.name == "sub" and task.state is not None and _values(task.state.interrupts) == ["inner?"]

    final = graph.invoke(Command(resume={asked.id: "yes"}), config, durability=durability)
    assert final == {"log": ["inner:yes", "after"]}


@pytest.mark.parametrize("durability", DURABILITY)
def test_a_second_saver_on_another_engine_resumes_the_run(
    shared_saver: SQLModelSaver, module_db_url: str, durability: Durability
) -> None:
    config = _config(new_thread())
    [asked] = _two_questions(shared_saver).invoke({"a": "", "b": ""}, config, durability=durability)[
        "__interrupt__"
    ]

    other = SQLModelSaver.from_url(module_db_url)
    try:
        assert other.engine is not shared_saver.engine
        graph = _two_questions(other)
        assert [i.id for i in graph.get_state(config).interrupts] == [asked.id]
        [second] = graph.invoke(Command(resume={asked.id: "A1"}), config, durability=durability)[
            "__interrupt__"
        ]
        final = graph.invoke(Command(resume={second.id: "A2"}), config, durability=durability)
        assert final == {"a": "A1", "b": "A2"}
    finally:
        other.close()


def test_prune_keeps_a_forked_away_pending_interrupt_resumable(shared_saver: SQLModelSaver) -> None:
    graph = _two_questions(shared_saver)
    thread = new_thread()
    config = _config(thread)
    [asked] = graph.invoke({"a": "", "b": ""}, config)["__interrupt__"]
    waiting_at = graph.get_state(config).config["configurable"]["checkpoint_id"]
    graph.update_state(config, {"a": "edited"})  # a newer checkpoint; the question stays behind

    finished = _config(new_thread())
    _parallel(shared_saver).invoke({"log": []}, finished)  # a control thread: its questions are...
    control = _parallel(shared_saver)
    for i in control.get_state(finished).interrupts:
        control.invoke(Command(resume={i.id: "ok"}), finished)  # ...all answered

    shared_saver.prune([thread, finished["configurable"]["thread_id"]])

    kept = [t.config["configurable"]["checkpoint_id"] for t in shared_saver.list(_config(thread))]
    assert waiting_at in kept and len(kept) == 2
    assert len(list(shared_saver.list(_config(finished["configurable"]["thread_id"])))) == 1
    old = _config(thread, waiting_at)
    assert [i.id for i in graph.get_state(old).interrupts] == [asked.id]
    [second] = graph.invoke(Command(resume={asked.id: "A1"}), old)["__interrupt__"]
    assert second.value == {"q": "second?"}


async def test_async_graph_round_trip(shared_async_saver: AsyncSQLModelSaver) -> None:
    graph, config = _two_questions(shared_async_saver), _config(new_thread())
    [first] = (await graph.ainvoke({"a": "", "b": ""}, config))["__interrupt__"]
    [second] = (await graph.ainvoke(Command(resume={first.id: "A1"}), config))["__interrupt__"]
    assert _values((await graph.aget_state(config)).interrupts) == [{"q": "second?"}]
    assert await graph.ainvoke(Command(resume={second.id: "A2"}), config) == {"a": "A1", "b": "A2"}
    assert graph.get_state(config).values == {"a": "A1", "b": "A2"}  # sync read on the async saver

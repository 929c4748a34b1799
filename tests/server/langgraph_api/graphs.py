"""Graphs the LangGraph API tests serve: ``tests.server.langgraph_api.graphs:WORKFLOWS``.

* ``chat-agent``: LangChain ``create_agent`` with ``HumanInTheLoopMiddleware`` and a scripted chat
  model (offline, deterministic): "email" asks for one ``send_email`` call, "batch" for
  ``send_email`` and ``delete_file``; anything else is answered with how many user turns it saw
  (a second turn sees the first). Tools report what they did in their result, so a test reads
  every side effect from the thread's messages.
* ``inbox-email``: Agent Inbox's ``HumanInterrupt`` (the project's example, unchanged).
* ``two-questions``: two parallel nodes, each a plain ``interrupt()``: two pending at once.
* ``slow``: an async node that sleeps, for busy threads and cancel.
* ``broken``: a node that raises, for a failed run.
* ``publish-gate``: an OpenWOP ``request_approval`` gate (accept, reject, edit-accept) on a draft.
* ``counter``: ``n`` counted up by two steps, the second a little slow: a stream to cut between them.
* ``two-gates``: two parallel OpenWOP approval gates (accept / reject): a batch answer with a bad part.
* ``journal``: appends each input's entries and a ``wrote:`` line a second later, reporting
  progress with ``get_stream_writer()``: the order in which runs of a thread ran, and ``custom``.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from wop_langgraph.examples import agent_inbox
from wop_langgraph.nodes import request_approval

EMAIL = {"to": "ops@example.com", "subject": "Release"}
FILE = {"path": "/tmp/old.log"}


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email."""
    return f"EXECUTED send_email to={to} subject={subject}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"EXECUTED delete_file path={path}"


class ScriptedChatModel(BaseChatModel):
    """Tool calls when asked for "email" or "batch", a summary after tools, else a counted echo."""

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        humans = [m for m in messages if isinstance(m, HumanMessage)]
        last = str(humans[-1].content) if humans else ""
        turn = len(humans)
        if messages and isinstance(messages[-1], ToolMessage):
            results = [
                str(m.content) for m in messages[messages.index(humans[-1]) :] if isinstance(m, ToolMessage)
            ]
            reply = AIMessage(content="Done: " + "; ".join(results), id=f"ai-done-{turn}")
        elif "batch" in last:
            calls = [
                {"name": "send_email", "args": EMAIL, "id": f"call-email-{turn}", "type": "tool_call"},
                {"name": "delete_file", "args": FILE, "id": f"call-file-{turn}", "type": "tool_call"},
            ]
            reply = AIMessage(content="", tool_calls=calls, id=f"ai-calls-{turn}")
        elif "email" in last:
            calls = [{"name": "send_email", "args": EMAIL, "id": f"call-email-{turn}", "type": "tool_call"}]
            reply = AIMessage(content="", tool_calls=calls, id=f"ai-calls-{turn}")
        else:
            reply = AIMessage(content=f"turn {turn}: you said {last!r}", id=f"ai-echo-{turn}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build_chat_agent() -> Any:
    gate = {"allowed_decisions": ["approve", "edit", "reject"]}
    middleware = HumanInTheLoopMiddleware(interrupt_on={"send_email": gate, "delete_file": gate})
    return create_agent(ScriptedChatModel(), tools=[send_email, delete_file], middleware=[middleware])


class Questions(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]


def _asker(name: str) -> Any:
    def node(state: Questions) -> dict[str, Any]:
        return {"answers": [f"{name}={interrupt({'question': f'{name}?'})}"]}

    return node


def build_two_questions() -> Any:
    graph = StateGraph(Questions)
    graph.add_node("first", _asker("first"))
    graph.add_node("second", _asker("second"))
    graph.add_edge(START, "first")
    graph.add_edge(START, "second")
    graph.add_edge("first", END)
    graph.add_edge("second", END)
    return graph.compile()


class Slow(TypedDict, total=False):
    done: bool


async def _sleep(state: Slow) -> dict[str, Any]:
    await asyncio.sleep(30)
    return {"done": True}


def build_slow() -> Any:
    graph = StateGraph(Slow)
    graph.add_node("sleep", _sleep)
    graph.add_edge(START, "sleep")
    graph.add_edge("sleep", END)
    return graph.compile()


def _fail(state: Slow) -> dict[str, Any]:
    raise RuntimeError("the tool is down")


def build_broken() -> Any:
    graph = StateGraph(Slow)
    graph.add_node("fail", _fail)
    graph.add_edge(START, "fail")
    graph.add_edge("fail", END)
    return graph.compile()


class Draft(TypedDict, total=False):
    draft: str
    published: str
    feedback: str


def _publish(state: Draft) -> dict[str, Any]:
    decision = request_approval(
        "doc-1",
        "text",
        "Publish the draft?",
        actions=("accept", "reject", "edit-accept"),
        artifact_data=state.get("draft", ""),
    )
    published = decision.edited_artifact_data if decision.action == "edit-accept" else state.get("draft")
    return {"published": str(published), "feedback": decision.feedback or ""}


def build_publish_gate() -> Any:
    graph = StateGraph(Draft)
    graph.add_node("publish", _publish)
    graph.add_edge(START, "publish")
    graph.add_edge("publish", END)
    return graph.compile()


class Gates(TypedDict, total=False):
    decisions: Annotated[list[str], operator.add]


def _gate(name: str) -> Any:
    def node(state: Gates) -> dict[str, Any]:
        decision = request_approval(f"{name}-1", "text", f"{name} sign-off?", actions=("accept", "reject"))
        return {"decisions": [f"{name}={decision.action}"]}

    return node


def build_two_gates() -> Any:
    graph = StateGraph(Gates)
    for name in ("legal", "finance"):
        graph.add_node(name, _gate(name))
        graph.add_edge(START, name)
        graph.add_edge(name, END)
    return graph.compile()


class Counter(TypedDict):
    n: int


def _count(state: Counter) -> dict[str, Any]:
    return {"n": state["n"] + 1}


async def _count_slowly(state: Counter) -> dict[str, Any]:
    await asyncio.sleep(1.5)
    return {"n": state["n"] + 1}


def build_counter() -> Any:
    graph = StateGraph(Counter)
    graph.add_node("count", _count)
    graph.add_node("count_slowly", _count_slowly)
    graph.add_edge(START, "count")
    graph.add_edge("count", "count_slowly")
    graph.add_edge("count_slowly", END)
    return graph.compile()


class Journal(TypedDict, total=False):
    entries: Annotated[list[str], operator.add]


async def _write(state: Journal) -> dict[str, Any]:
    last = (state.get("entries") or ["nothing"])[-1]
    writer = get_stream_writer()
    writer({"progress": f"writing {last}"})
    await asyncio.sleep(1.0)
    writer({"progress": f"wrote {last}"})
    return {"entries": [f"wrote:{last}"]}


def build_journal() -> Any:
    graph = StateGraph(Journal)
    graph.add_node("write", _write)
    graph.add_edge(START, "write")
    graph.add_edge("write", END)
    return graph.compile()


WORKFLOWS: dict[str, Any] = {
    "chat-agent": build_chat_agent(),
    agent_inbox.WORKFLOW_ID: agent_inbox.build_graph(),
    "two-questions": build_two_questions(),
    "slow": build_slow(),
    "broken": build_broken(),
    "counter": build_counter(),
    "publish-gate": build_publish_gate(),
    "journal": build_journal(),
    "two-gates": build_two_gates(),
}

"""LangChain ``create_agent`` with ``HumanInTheLoopMiddleware``, registered unchanged.

The agent's model is a small scripted chat model (no network): asked something, it calls the
``send_email`` and ``delete_file`` tools; given the tools' results, it answers. The middleware
gates both tools; on ``WopHost`` its interrupt is one ``approval`` with one item per tool call.

    wop-langgraph serve wop_langgraph.examples.hitl_agent:workflows --db sqlite:///agent.db
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.pregel import Pregel

__all__ = ["SENT", "WORKFLOW_ID", "ScriptedToolModel", "build_agent", "workflows"]

WORKFLOW_ID = "hitl-agent"
#: What the tools did, in order (the example's observable side effect).
SENT: list[dict[str, Any]] = []


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email."""
    SENT.append({"tool": "send_email", "to": to, "subject": subject})
    return f"sent to {to}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    SENT.append({"tool": "delete_file", "path": path})
    return f"deleted {path}"


class ScriptedToolModel(BaseChatModel):
    """A deterministic chat model: tool calls for a new request, a summary once tools answered.

    It decides from the conversation alone, so a resumed or recovered run gets the same answers.
    """

    tool_calls: list[dict[str, Any]]

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if messages and isinstance(messages[-1], ToolMessage):
            results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
            reply = AIMessage(content="Done: " + "; ".join(results))
        else:
            calls = [{**c, "id": f"call-{i}", "type": "tool_call"} for i, c in enumerate(self.tool_calls)]
            reply = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build_agent(
    interrupt_on: dict[str, Any] | None = None, tool_calls: list[dict[str, Any]] | None = None
) -> Pregel[Any, Any, Any, Any]:
    """The agent: both tools gated (approve / edit / reject by default)."""
    model = ScriptedToolModel(
        tool_calls=tool_calls
        or [
            {"name": "send_email", "args": {"to": "ops@example.com", "subject": "Release"}},
            {"name": "delete_file", "args": {"path": "/tmp/old.log"}},
        ]
    )
    gate = {"allowed_decisions": ["approve", "edit", "reject"]}
    middleware = HumanInTheLoopMiddleware(
        interrupt_on=interrupt_on or {"send_email": gate, "delete_file": gate}
    )
    return create_agent(model, tools=[send_email, delete_file], middleware=[middleware])


def workflows() -> dict[str, Pregel[Any, Any, Any, Any]]:
    """``{workflowId: graph}`` for ``wop-langgraph serve``."""
    return {WORKFLOW_ID: build_agent()}


if __name__ == "__main__":
    from wop_langgraph.examples._walkthrough import walk

    # One approval lists both tool calls; accepting it approves them all.
    walk(
        WORKFLOW_ID,
        build_agent(),
        {"messages": [{"role": "user", "content": "Email ops and clean up."}]},
        lambda record: {"action": "accept"},
    )

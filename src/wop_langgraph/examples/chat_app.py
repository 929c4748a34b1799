"""A terminal chat app that drives the chat example (:mod:`wop_langgraph.examples.chat`) over HTTP.

It talks to a running server through the official ``openwop_client`` SDK only (no in-process
host). Serve the chat workflow with conversations enabled, then start the app::

    export WOP_SIGNING_KEYS="k1=$(openssl rand -hex 32)"
    export WOP_API_KEYS="demo-key=acme:alice:runs:create+runs:read+approvals:respond"
    wop-langgraph serve wop_langgraph.examples.chat_app:WORKFLOWS --conversations \
        --db sqlite:///chat.db --port 8001

    python -m wop_langgraph.examples.chat_app --api-key demo-key   # --server http://127.0.0.1:8001
    python -m wop_langgraph.examples.chat_app --api-key demo-key --run RUN_ID   # continue one

Both need the ``chat`` extra (the server and ``openwop-client``). The chat server uses port 8001 so
it can run beside the review server's default 8000.

The app creates a run of the chat workflow and then loops: it long-polls the run's events, finds
the pending ``conversation.exchange`` interrupt (its ``prompt`` and ``outcomeSchema`` come from the
``interrupt.requested`` event), shows the prompt, reads an answer, and resolves the interrupt by
run (``POST /runs/{runId}/interrupts/{nodeId}``). When the run completes it prints the outputs.

Answers are turned into the outcome object as follows (see :func:`parse_answer`):

* an answer starting with ``{`` is parsed as a JSON object and sent as is;
* any other answer fills the schema's single required property (``late`` becomes
  ``{"problem": "late"}``) as a string; a schema that does not require exactly one property
  needs a JSON answer.

Each question says up front what it takes, from the turn's ``outcomeSchema`` (choices of an
``enum``, the form of a ``pattern`` by its ``examples``). A refused answer (``400
validation_error``: it fails the turn's ``outcomeSchema``) is explained in the same words, naming
the field by its ``title`` (``“Order id”: “A-7” is not accepted; enter text in the form
A-1042.``), and the same question is asked again; the run is unchanged. End of input (Ctrl-D)
stops the app and leaves the run waiting; ``--run RUN_ID`` picks it up again where it waits. Run
statuses are shown in words (a waiting turn is ``waiting-approval`` on the wire, as OpenWOP's
status table says for ``conversation.*`` interrupts: "waiting for your answer" here).

``ask`` and ``say`` are injectable, so :class:`ChatApp` can be driven without a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from wop_langgraph._extras import MISSING_EXTRA_STATUS, missing_extra
from wop_langgraph.examples.chat import WORKFLOW_ID, build_chat_graph
from wop_langgraph.kinds.review.reasons import allowed, refused

if TYPE_CHECKING:
    from openwop_client import OpenwopClient  # type: ignore[import-untyped,unused-ignore]

__all__ = [
    "DEFAULT_SERVER",
    "WORKFLOWS",
    "ChatApp",
    "PendingExchange",
    "expected",
    "explain_refusal",
    "main",
    "parse_answer",
    "status_words",
]

WORKFLOWS: Final = {WORKFLOW_ID: build_chat_graph()}
"""The target ``wop-langgraph serve wop_langgraph.examples.chat_app:WORKFLOWS --conversations``."""

EXCHANGE: Final = "conversation.exchange"

DEFAULT_SERVER: Final = "http://127.0.0.1:8001"
"""Where the chat server listens by default (the review server's default is port 8000)."""

_STATUS_WORDS: Final = {
    "pending": "starting",
    "running": "working",
    "paused": "paused",
    "waiting-approval": "waiting for your answer",
    "waiting-input": "waiting for your answer",
    "waiting-external": "waiting for something outside this chat",
    "completed": "finished",
    "failed": "stopped by an error",
    "cancelling": "being cancelled",
    "cancelled": "cancelled",
}


def status_words(status: str) -> str:
    """A run status as a person reads it (``waiting-approval``: ``waiting for your answer``)."""
    return _STATUS_WORDS.get(status, status)


def _label(name: str, schema: dict[str, Any]) -> str:
    """A property's ``title``, else its name in words (``orderId``: ``Order id``)."""
    title = schema.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    words = "".join(f" {c.lower()}" if c.isupper() else c for c in name).replace("_", " ").replace("-", " ")
    return words.strip().capitalize() or name


def _properties(outcome_schema: dict[str, Any]) -> dict[str, Any]:
    properties = outcome_schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _single_field(outcome_schema: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    required = outcome_schema.get("required") or []
    if len(required) != 1:
        return None
    prop = _properties(outcome_schema).get(required[0])
    return str(required[0]), prop if isinstance(prop, dict) else {}


def expected(outcome_schema: dict[str, Any]) -> str | None:
    """What a plain answer should be, said before the first try (``Answer with one of refund or
    replacement.``), or ``None`` when the schema says nothing a person could use."""
    field = _single_field(outcome_schema)
    if field is None:
        return None
    what = allowed(field[1])
    if what in ("an answer", "text"):
        return None
    description = field[1].get("description")
    hint = (
        f"{description.strip().rstrip('.')}: " if isinstance(description, str) and description.strip() else ""
    )
    return f"{hint}answer with {what}." if hint else f"Answer with {what}."


def explain_refusal(
    details: dict[str, Any] | None, outcome: dict[str, Any], outcome_schema: dict[str, Any]
) -> str:
    """Why the server refused ``outcome``, in a person's words, from its ``details`` and the schema.

    ``details`` is the ``validation_error`` envelope's: ``path`` (a JSON pointer into the
    outcome), ``rule`` (the failing keyword) and ``errors``; the field is named by its title.
    """
    details = details or {}
    path = str(details.get("path") or "")
    rule = str(details.get("rule") or "")
    listed = details.get("errors")
    message = (
        str(listed[0].get("message", ""))
        if isinstance(listed, list) and listed and isinstance(listed[0], dict)
        else ""
    )
    properties = _properties(outcome_schema)
    name = path.strip("/").split("/")[0].replace("~1", "/").replace("~0", "~") if path.strip("/") else ""
    if rule == "required" or not name:
        missing = [str(r) for r in outcome_schema.get("required") or [] if r not in outcome]
        if missing:
            prop = properties.get(missing[0]) or {}
            return f"“{_label(missing[0], prop)}” is missing: please give {allowed(prop)}."
        if rule == "additionalProperties" or outcome.keys() - properties.keys():
            known = ", ".join(f"“{_label(k, v)}”" for k, v in properties.items())
            return f"That answer has something this question does not ask for; it asks for {known}."
        return f"That answer is not accepted ({message or rule or 'no reason given'})."
    prop = properties.get(name)
    prop = prop if isinstance(prop, dict) else {}
    return refused(_label(name, prop), prop, outcome.get(name), rule, message)


@dataclass(frozen=True)
class PendingExchange:
    """The open ``conversation.exchange`` interrupt, as read from its ``interrupt.requested`` event."""

    node_id: str
    key: str
    prompt: str
    outcome_schema: dict[str, Any]
    turn_index: int | None


def parse_answer(text: str, outcome_schema: dict[str, Any]) -> dict[str, Any]:
    """The outcome object for a typed answer.

    ``{...}`` is parsed as JSON; anything else fills the schema's single required property.

    Raises:
        ValueError: malformed JSON, JSON that is not an object, or plain text for a schema that
            does not require exactly one property.
    """
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"that is not valid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise ValueError("the answer must be a JSON object")
        return value
    required = outcome_schema.get("required") or []
    if len(required) != 1:
        raise ValueError('please answer with a JSON object, e.g. {"field": "value"}')
    return {str(required[0]): text}


class ChatApp:
    """Run one conversation of the chat workflow against a server.

    Args:
        client: an ``openwop_client.OpenwopClient`` for the server.
        ask: shows a prompt and returns the user's answer (default :func:`input`); raising
            ``EOFError`` stops the app.
        say: shows a line of output (default :func:`print`).
        workflow_id: the workflow to run.
        poll_timeout: seconds each long-poll may wait for new events.
    """

    def __init__(
        self,
        client: OpenwopClient,
        *,
        ask: Callable[[str], str] = input,
        say: Callable[[str], None] = print,
        workflow_id: str = WORKFLOW_ID,
        poll_timeout: int = 10,
    ) -> None:
        self.client = client
        self.ask = ask
        self.say = say
        self.workflow_id = workflow_id
        self.poll_timeout = poll_timeout
        self.run_id: str | None = None
        self._after: int | None = None
        self._pending: dict[str, PendingExchange] = {}
        self._outputs: dict[str, Any] | None = None

    def run(self, run_id: str | None = None) -> dict[str, Any] | None:
        """Create a run (or continue ``run_id``) and converse until it ends; the run's outputs, or
        ``None`` if it did not complete (failed, cancelled, or the user stopped).

        Continuing reads the run's events from the start, so the turn it waits at is asked again.
        """
        from openwop_client.types import CreateRunRequest  # type: ignore[import-untyped,unused-ignore]

        if run_id is None:
            created = self.client.runs_create(
                CreateRunRequest(workflowId=self.workflow_id, inputs={}), idempotency_key=str(uuid.uuid4())
            )
            self.run_id = created.runId
            self.say(f"[run {created.runId} started]")
        else:
            self.run_id = run_id
            self.say(f"[continuing run {run_id}: {status_words(self.client.runs_get(run_id).status)}]")
        while True:
            status, terminal = self._poll()
            if terminal:
                return self._finish(status)
            pending = next(iter(self._pending.values()), None)
            if pending is None:
                continue  # still working: poll again
            if not self._converse(pending):
                self.say(
                    f"[stopped; run {self.run_id} is still waiting for your answer: "
                    f"continue it with --run {self.run_id}]"
                )
                return None

    def _poll(self) -> tuple[str, bool]:
        """Read new events (long-poll) and update the pending exchanges; ``(status, isTerminal)``."""
        assert self.run_id is not None
        page = self.client.runs_poll_events(
            self.run_id, after_sequence=self._after, timeout_seconds=self.poll_timeout
        )
        for event in page.events:
            self._after = max(event.sequence, -1 if self._after is None else self._after)
            payload = event.payload if isinstance(event.payload, dict) else {}
            if event.type == "interrupt.requested" and payload.get("kind") == EXCHANGE and event.nodeId:
                data = payload.get("data") or {}
                self._pending[event.nodeId] = PendingExchange(
                    node_id=event.nodeId,
                    key=str(payload.get("key", "")),
                    prompt=str(data.get("prompt", "")),
                    outcome_schema=dict(data.get("outcomeSchema") or {}),
                    turn_index=data.get("turnIndex"),
                )
            elif event.type == "interrupt.resolved" and event.nodeId:
                self._pending.pop(event.nodeId, None)
            elif event.type == "conversation.closed":
                self.say(f"[conversation closed: {payload.get('reason', '?')}]")
            elif event.type == "run.completed":
                self._outputs = dict(payload.get("outputs") or {})
        return page.status, page.isTerminal

    def _converse(self, pending: PendingExchange) -> bool:
        """Ask until the server accepts an answer (or refuses it as already answered); ``False``
        when the user ends the input."""
        from openwop_client import WopError  # type: ignore[import-untyped,unused-ignore]
        from openwop_client.types import ResolveInterruptRequest  # type: ignore[import-untyped,unused-ignore]

        assert self.run_id is not None
        hint = expected(pending.outcome_schema)
        question = f"{pending.prompt}\n({hint})" if hint else pending.prompt
        while True:
            try:
                text = self.ask(f"{question}\n> ")
            except EOFError:
                return False
            try:
                outcome = parse_answer(text, pending.outcome_schema)
            except ValueError as exc:
                self.say(f"! {exc}")
                continue
            try:
                self.client.interrupts_resolve_by_run(
                    self.run_id,
                    pending.node_id,
                    ResolveInterruptRequest(resumeValue=outcome),
                    idempotency_key=str(uuid.uuid4()),
                )
            except WopError as exc:
                code = exc.envelope.error if exc.envelope is not None else None
                if exc.status == 400 and code == "validation_error":
                    details = exc.envelope.details if exc.envelope is not None else None
                    self.say(f"! {explain_refusal(details, outcome, pending.outcome_schema)}")
                    continue
                if exc.status == 409 and code == "interrupt_already_resolved":
                    self.say("[this turn was already answered]")
                    self._pending.pop(pending.node_id, None)
                    return True
                raise
            self._pending.pop(pending.node_id, None)
            return True

    def _finish(self, status: str) -> dict[str, Any] | None:
        if status != "completed" or self._outputs is None:
            assert self.run_id is not None
            error = self.client.runs_get(self.run_id).error
            detail = f": {error.code}: {error.message}" if error is not None else ""
            self.say(f"[run ended: {status_words(status)}{detail}]")
            return None
        summary = self._outputs.get("summary")
        if summary is not None:
            self.say(f"Thanks! {summary}")
        self.say(json.dumps(self._outputs, indent=2, sort_keys=True))
        return self._outputs


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m wop_langgraph.examples.chat_app --server URL --api-key KEY [--run RUN_ID]``."""
    parser = argparse.ArgumentParser(
        prog="python -m wop_langgraph.examples.chat_app",
        description="Chat with the order-problem workflow on a wop-langgraph server.",
    )
    parser.add_argument(
        "--server", default=DEFAULT_SERVER, help=f"server base URL (default {DEFAULT_SERVER})"
    )
    parser.add_argument(
        "--api-key", required=True, help="an API key with runs:create, runs:read, approvals:respond"
    )
    parser.add_argument("--workflow", default=WORKFLOW_ID, help=f"workflow id (default {WORKFLOW_ID})")
    parser.add_argument(
        "--run", metavar="RUN_ID", help="continue this run where it waits, instead of a new one"
    )
    args = parser.parse_args(argv)
    problem = missing_extra("chat", "python -m wop_langgraph.examples.chat_app")
    if problem:
        print(problem, file=sys.stderr)
        return MISSING_EXTRA_STATUS
    from openwop_client import OpenwopClient, WopError  # type: ignore[import-untyped,unused-ignore]

    app = ChatApp(OpenwopClient(args.server, args.api_key), ask=input, workflow_id=args.workflow)
    try:
        return 0 if app.run(args.run) is not None else 1
    except WopError as exc:
        print(f"chat_app: the server refused: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

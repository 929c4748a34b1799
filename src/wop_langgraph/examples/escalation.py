"""Support-ticket routing with escalation: a recorded, model-free router over a labelled dataset.

The dataset (``data/tickets.csv``, 300 tickets) holds, for each ticket, its text, the queue it
truly belongs to (``label``) and what a classifier predicted for it with which confidence
(``predicted``, ``confidence``). It was generated once by :func:`generate_tickets` with a fixed
seed (``python -m wop_langgraph.examples.escalation`` rewrites it; a test checks the committed
file is exactly that output). Confidence is correlated with correctness, as with a reasonably
calibrated model: most low-confidence predictions are wrong, few high-confidence ones are.

The graph's ``route`` node asks the agent (:class:`RecordedRouter`, which replays the recorded
prediction: deterministic, no model) and calls
:func:`~wop_langgraph.nodes.escalate_on_low_confidence`; below the run's
``configurable.run.escalationThreshold`` the run suspends with a ``low-confidence`` interrupt.
:func:`run_dataset` runs every ticket through a :class:`~wop_langgraph.host.WopHost` at one
threshold and resolves each escalation as a simulated person who always knows the right queue:
``{}`` (ratify) when the agent was right, ``{"decision": <label>}`` when it was wrong.
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from wop_langgraph.host import Principal, WopHost
from wop_langgraph.nodes import escalate_on_low_confidence

__all__ = [
    "AGENT_ID",
    "DATA_FILE",
    "NODE_ID",
    "QUEUES",
    "WORKFLOW_ID",
    "RecordedRouter",
    "SimulationResult",
    "Ticket",
    "TicketOutcome",
    "TicketState",
    "build_escalation_graph",
    "generate_tickets",
    "load_tickets",
    "run_dataset",
    "simulated_review",
    "threshold_configurable",
    "tickets_csv",
]

QUEUES: Final = ("billing", "technical", "account", "shipping")
DATA_FILE: Final = Path(__file__).parent / "data" / "tickets.csv"
DATASET_SEED: Final = 7
DATASET_SIZE: Final = 300
AGENT_ID: Final = "ticket-router"
WORKFLOW_ID: Final = "ticket-routing"
NODE_ID: Final = "route"
_COLUMNS: Final = ("ticket_id", "text", "label", "predicted", "confidence")

_TEMPLATES: Final[dict[str, tuple[str, ...]]] = {
    "billing": (
        "I was charged twice for my {plan} plan this month.",
        "Can I get an invoice with our VAT number for the {plan} plan?",
        "Why did my {plan} subscription price go up?",
        "The refund for order {order} has not arrived yet.",
    ),
    "technical": (
        "The export to {fmt} fails with an error since this morning.",
        "Uploads larger than {size} MB time out.",
        "The mobile app crashes when I open the {page} page.",
        "The API returns 500 on the {page} endpoint.",
    ),
    "account": (
        "I cannot log in after resetting my password.",
        "Please add {name} as an admin on our workspace.",
        "How do I change the e-mail address on my account?",
        "Two-factor codes from my old phone no longer work.",
    ),
    "shipping": (
        "Order {order} still shows 'in transit' after {days} days.",
        "The parcel for order {order} arrived damaged.",
        "Can you ship order {order} to a different address?",
        "Tracking for order {order} has not updated in {days} days.",
    ),
}
_FILLERS: Final[dict[str, tuple[str, ...]]] = {
    "plan": ("Starter", "Team", "Business"),
    "fmt": ("CSV", "PDF", "XLSX"),
    "size": ("20", "50", "100"),
    "page": ("reports", "settings", "billing"),
    "name": ("Dana", "Kim", "Lee"),
    "order": tuple(f"A-{n}" for n in range(1000, 1100, 7)),
    "days": ("5", "9", "12"),
}


@dataclass(frozen=True)
class Ticket:
    """One labelled ticket with the classifier's recorded prediction.

    Attributes:
        ticket_id: ``T-0001`` ...
        text: what the customer wrote.
        label: the queue the ticket truly belongs to (the ground truth).
        predicted: the queue the classifier chose.
        confidence: the classifier's confidence in ``predicted``, 0..1 (two decimals, below 1).
    """

    ticket_id: str
    text: str
    label: str
    predicted: str
    confidence: float

    @property
    def agent_correct(self) -> bool:
        """Whether the recorded prediction is the true queue."""
        return self.predicted == self.label


def generate_tickets(n: int = DATASET_SIZE, seed: int = DATASET_SEED) -> list[Ticket]:
    """The synthetic dataset, a pure function of ``n`` and ``seed``.

    Confidence is ``0.2 + 0.79 * (1 - u) ** 0.4`` for a uniform ``u`` (most mass near the top),
    rounded to two decimals; the prediction is right with probability
    ``1 / (1 + exp(-10 * (confidence - 0.5)))``. Only ``Random.random`` is used, whose sequence
    is stable across Python versions.
    """
    rng = random.Random(seed)

    def pick(options: Sequence[str]) -> str:
        return options[min(int(rng.random() * len(options)), len(options) - 1)]

    tickets: list[Ticket] = []
    for number in range(1, n + 1):
        label = pick(QUEUES)
        template = pick(_TEMPLATES[label])
        fills = {name: pick(values) for name, values in _FILLERS.items()}
        text = template.format(**fills)
        confidence = round(0.2 + 0.79 * (1 - rng.random()) ** 0.4, 2)
        right = rng.random() < 1 / (1 + math.exp(-10 * (confidence - 0.5)))
        predicted = label if right else pick([q for q in QUEUES if q != label])
        tickets.append(Ticket(f"T-{number:04d}", text, label, predicted, confidence))
    return tickets


def tickets_csv(tickets: Iterable[Ticket]) -> str:
    """The tickets as CSV text (header row, ``\\n`` line ends): the format of ``DATA_FILE``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(_COLUMNS)
    for t in tickets:
        writer.writerow((t.ticket_id, t.text, t.label, t.predicted, f"{t.confidence:.2f}"))
    return buffer.getvalue()


def load_tickets(path: Path = DATA_FILE) -> list[Ticket]:
    """Read a tickets CSV (default: the shipped dataset)."""
    with path.open(newline="", encoding="utf-8") as handle:
        return [
            Ticket(row["ticket_id"], row["text"], row["label"], row["predicted"], float(row["confidence"]))
            for row in csv.DictReader(handle)
        ]


# -- the agent and the graph ---------------------------------------------------------------------

#: An agent: ``(ticket_id, text) -> (queue, confidence)``.
Router = Callable[[str, str], tuple[str, float]]


class RecordedRouter:
    """The agent: replays the classifier's recorded prediction for a ticket (deterministic, no model).

    It sees only the ticket id and text, never the label.
    """

    def __init__(self, tickets: Iterable[Ticket]) -> None:
        self._recorded = {t.ticket_id: (t.predicted, t.confidence) for t in tickets}

    def __call__(self, ticket_id: str, text: str) -> tuple[str, float]:
        """The recorded ``(queue, confidence)`` of ``ticket_id``."""
        del text  # a real model would read it
        return self._recorded[ticket_id]


class TicketState(TypedDict, total=False):
    """The state of the routing graph."""

    ticket_id: str
    text: str
    queue: str
    dispatched_to: str


def build_escalation_graph(
    agent: Router | None = None, *, audit_rate: float = 0.0
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """``route`` (agent + escalation) then ``dispatch``; default agent: the shipped recordings.

    ``audit_rate``: the share of confident decisions also sent to a person as an audit sample.
    """
    router = agent or RecordedRouter(load_tickets())

    def route(state: TicketState) -> dict[str, Any]:
        """Let the agent choose a queue; below the run's threshold a person confirms or corrects it."""
        queue, confidence = router(state["ticket_id"], state.get("text", ""))
        return {"queue": escalate_on_low_confidence(AGENT_ID, queue, confidence, audit_rate=audit_rate)}

    def dispatch(state: TicketState) -> dict[str, Any]:
        """Put the ticket on its queue."""
        return {"dispatched_to": f"{state['queue']}-queue"}

    graph = StateGraph(TicketState)
    graph.add_node(NODE_ID, route)
    graph.add_node("dispatch", dispatch)
    graph.add_edge(START, NODE_ID)
    graph.add_edge(NODE_ID, "dispatch")
    graph.add_edge("dispatch", END)
    return graph.compile()


# -- running the dataset -------------------------------------------------------------------------


@dataclass(frozen=True)
class TicketOutcome:
    """What happened to one ticket's run."""

    ticket: Ticket
    run_id: str
    escalated: bool
    queue: str

    @property
    def correct(self) -> bool:
        """Whether the ticket ended on its true queue (after any review)."""
        return self.queue == self.ticket.label


@dataclass(frozen=True)
class SimulationResult:
    """Every ticket's outcome at one threshold, and the runs' event logs.

    Attributes:
        threshold: the threshold the runs used, 0..1.
        outcomes: one per ticket, in dataset order.
        events: every run's ``RunEventDoc`` dicts, run after run.
    """

    threshold: float
    outcomes: tuple[TicketOutcome, ...]
    events: tuple[dict[str, Any], ...]

    @property
    def escalation_rate(self) -> float:
        """The share of tickets that were escalated (0.0 for no tickets)."""
        return _share(sum(o.escalated for o in self.outcomes), len(self.outcomes))

    @property
    def auto_accept_error(self) -> float:
        """The share of wrong queues among tickets that were not escalated (0.0 if none)."""
        auto = [o for o in self.outcomes if not o.escalated]
        return _share(sum(not o.correct for o in auto), len(auto))

    @property
    def final_error(self) -> float:
        """The share of tickets that ended on a wrong queue, reviews included."""
        return _share(sum(not o.correct for o in self.outcomes), len(self.outcomes))

    @property
    def labels(self) -> dict[str, str]:
        """Run id -> true queue: the ground truth for :func:`wop_langgraph.analysis.threshold_report`."""
        return {o.run_id: o.ticket.label for o in self.outcomes}


def threshold_configurable(threshold: float) -> dict[str, Any]:
    """The run ``configurable`` for ``threshold`` (0..1, a whole percentage: 0.35 -> 35).

    Raises:
        ValueError: outside 0..1, or not a whole percentage.
    """
    percent = round(threshold * 100)
    if not 0.0 <= threshold <= 1.0 or not math.isclose(percent, threshold * 100, abs_tol=1e-9):
        raise ValueError(f"the threshold must be a whole percentage from 0 to 1, got {threshold!r}")
    return {"version": 1, "run": {"escalationThreshold": percent}}


def simulated_review(ticket: Ticket, proposed: Any) -> dict[str, Any]:
    """What the simulated person answers: ratify a right queue, replace a wrong one with the label."""
    return {} if proposed == ticket.label else {"decision": ticket.label}


def run_dataset(
    host: WopHost,
    tickets: Sequence[Ticket],
    threshold: float,
    *,
    owner: Principal | None = None,
    reviewer: Principal | None = None,
    workflow_id: str = WORKFLOW_ID,
    agent: Router | None = None,
    progress: Callable[[Iterable[Ticket]], Iterable[Ticket]] | None = None,
    audit_rate: float = 0.0,
) -> SimulationResult:
    """Route every ticket through ``host`` at ``threshold``; a simulated person resolves each escalation.

    (Re-)registers :func:`build_escalation_graph` under ``workflow_id`` with ``agent`` (default:
    a :class:`RecordedRouter` over ``tickets``), replacing whatever was registered there; every
    run this function starts is finished before it returns, so no suspended run is affected.
    ``progress`` wraps the iteration over the tickets (e.g. ``tqdm``). ``audit_rate``: see
    :func:`build_escalation_graph`; an audited ticket counts as escalated in its outcome (a
    person saw it).

    Raises:
        ValueError: ``threshold`` is not a whole percentage from 0 to 1.
        RuntimeError: a run did not end as expected (not completed after its review).
    """
    configurable = threshold_configurable(threshold)
    host.register(
        workflow_id, build_escalation_graph(agent or RecordedRouter(tickets), audit_rate=audit_rate)
    )
    owner = owner or Principal(tenant="acme", subject_id="router-bot", scopes=frozenset({"runs:create"}))
    reviewer = reviewer or Principal(
        tenant=owner.tenant, subject_id="support-lead", scopes=frozenset({"approvals:respond"})
    )
    outcomes: list[TicketOutcome] = []
    events: list[dict[str, Any]] = []
    for ticket in progress(tickets) if progress is not None else tickets:
        inputs = {"ticket_id": ticket.ticket_id, "text": ticket.text}
        snapshot = host.create_run(workflow_id, inputs, owner=owner, configurable=configurable)
        run_id = snapshot["runId"]
        escalated = False
        for pending in host.pending_interrupts(run_id):
            if pending.kind != "low-confidence":
                raise RuntimeError(f"run {run_id} suspended with an unexpected {pending.kind!r} interrupt")
            answer = simulated_review(ticket, pending.payload["data"]["decision"])
            host.resolve(run_id, pending.node_id, answer, reviewer)
            escalated = True
        run_events = host.events(run_id)
        last = run_events[-1]
        if last["type"] != "run.completed":
            error = last["payload"].get("error", {})
            raise RuntimeError(f"run {run_id} ended with {last['type']}, not run.completed: {error}")
        outcomes.append(TicketOutcome(ticket, run_id, escalated, str(last["payload"]["outputs"]["queue"])))
        events.extend(run_events)
    return SimulationResult(threshold, tuple(outcomes), tuple(events))


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


if __name__ == "__main__":
    DATA_FILE.parent.mkdir(parents=True, exist_ok=True)
    DATA_FILE.write_text(tickets_csv(generate_tickets()), encoding="utf-8")
    print(f"wrote {DATASET_SIZE} tickets to {DATA_FILE}")

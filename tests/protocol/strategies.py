"""Hypothesis strategies producing VALID wire documents, written from the official schemas' rules.

The strategies build plain JSON (dicts, lists, scalars), never our models, so a model that is
stricter or looser than the official schema shows up as a disagreement in the tests.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

ACTIONS = ["accept", "reject", "refine", "edit-accept", "ask"]
KINDS = [
    "approval",
    "clarification",
    "external-event",
    "custom",
    "conversation.start",
    "conversation.exchange",
    "conversation.close",
    "low-confidence",
    "credential",
]
CREDENTIAL_RESUME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["outcome"],
    "properties": {"outcome": {"enum": ["authorized", "declined"]}},
}

text = st.text(max_size=12)
non_empty = st.text(min_size=1, max_size=12)
str_lists = st.lists(text, max_size=3)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=6,
)
json_objects = st.dictionaries(text, json_values, max_size=3)

author_ids = st.from_regex(r"[A-Za-z0-9._~:-]{1,40}", fullmatch=True)
tenant_ids = st.from_regex(r"(anon:)?[A-Za-z0-9._~-]{1,20}", fullmatch=True)
opaques = st.from_regex(r"[A-Za-z0-9._~-]{16,40}", fullmatch=True)
tenant_bound_ids = st.builds(lambda t, o: f"{t}/{o}", tenant_ids, opaques)
event_ids = opaques
type_ids = st.from_regex(r"[a-z][a-z0-9_-]{0,8}(\.[a-z][a-zA-Z0-9_-]{0,8}){1,2}", fullmatch=True)
probabilities = st.floats(min_value=0, max_value=1, allow_nan=False) | st.sampled_from([0, 1])
non_negative = st.integers(min_value=0, max_value=2**40)
hatch_keys = st.from_regex(r"(openwop-|x-|vendor\.)[a-z]{0,6}", fullmatch=True)
timestamps = st.builds(
    lambda d, frac, off: d.replace(microsecond=0).isoformat() + frac + off,
    st.datetimes(),
    st.sampled_from(["", ".5", ".123456"]),
    st.sampled_from(["Z", "+00:00", "-05:30", "+14:00"]),
)

# Small, valid JSON Schemas: a few realistic shapes plus annotation-only objects (unknown
# keywords are legal in 2020-12).
json_schemas = st.sampled_from(
    [
        {},
        {"type": "object"},
        {"type": "string", "minLength": 1},
        {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
        {"enum": [1, 2, "three"]},
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    ]
) | st.dictionaries(st.from_regex(r"x-[a-z]{1,5}", fullmatch=True), json_values, max_size=2)


def _payload(kind: str, data: st.SearchStrategy[dict[str, Any]], *, credential: bool = False) -> Any:
    optional: dict[str, st.SearchStrategy[Any]] = {"timeoutMs": non_negative}
    required: dict[str, st.SearchStrategy[Any]] = {
        "kind": st.just(kind),
        "key": st.text(min_size=1, max_size=256),
        "data": data,
    }
    if credential:
        required["resumeSchema"] = st.just(dict(CREDENTIAL_RESUME_SCHEMA))
    else:
        optional["resumeSchema"] = json_schemas
    return st.fixed_dictionaries(required, optional=optional)


approval_data = st.fixed_dictionaries(
    {
        "artifactId": non_empty,
        "artifactType": non_empty,
        "title": non_empty,
        "actions": st.lists(st.sampled_from(ACTIONS), min_size=1, unique=True),
    },
    optional={
        "description": text,
        "artifactData": json_values,
        "onTimeout": st.sampled_from(["reject", "approve", "escalate"]),
        "requiredApprovals": st.integers(min_value=1, max_value=9),
        "approversList": str_lists,
        "rejectionPolicy": st.sampled_from(["single-veto", "majority"]),
        "overrideBypassesQuorum": st.booleans(),
        "approverGroupRefs": str_lists,
        "approverRoleRefs": str_lists,
        "audience": st.fixed_dictionaries(
            {}, optional={"subjects": str_lists, "groups": str_lists, "roles": str_lists}
        ),
    },
)
clarification_data = st.fixed_dictionaries(
    {
        "questions": st.lists(
            st.fixed_dictionaries(
                {"id": non_empty, "question": non_empty}, optional={"schema": json_schemas}
            ),
            min_size=1,
            max_size=3,
        )
    },
    optional={"contextType": text},
)
external_event_data = st.fixed_dictionaries({"eventType": text, "correlation": json_objects})
custom_data = st.fixed_dictionaries({"customKind": non_empty}, optional={"payload": json_values})
conversation_ids = st.text(min_size=1, max_size=256)
conversation_start_data = st.fixed_dictionaries(
    {"conversationId": conversation_ids}, optional={"title": text, "initialPrompt": text}
)
conversation_exchange_data = st.fixed_dictionaries(
    {"conversationId": conversation_ids, "prompt": non_empty},
    optional={"outcomeSchema": json_schemas, "turnIndex": non_negative},
)
conversation_close_data = st.fixed_dictionaries(
    {"conversationId": conversation_ids}, optional={"reason": text}
)
low_confidence_data = st.fixed_dictionaries(
    {"agentId": author_ids, "threshold": probabilities, "observed": probabilities},
    optional={"decision": json_values},
)
credential_data = st.fixed_dictionaries(
    {
        "provider": non_empty,
        "scopes": st.lists(non_empty, unique=True, max_size=3),
        "reason": st.sampled_from(["missing", "expired", "insufficient_scope"]),
        "connectUrl": st.builds(
            lambda host, path: f"https://{host}.example/{path}",
            st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
            st.from_regex(r"[a-z0-9/_-]{0,12}", fullmatch=True),
        ),
    },
    optional={"credentialRef": st.fixed_dictionaries({"id": non_empty})},
)

PAYLOADS: dict[str, Any] = {
    "approval": _payload("approval", approval_data),
    "clarification": _payload("clarification", clarification_data),
    "external-event": _payload("external-event", external_event_data),
    "custom": _payload("custom", custom_data),
    "conversation.start": _payload("conversation.start", conversation_start_data),
    "conversation.exchange": _payload("conversation.exchange", conversation_exchange_data),
    "conversation.close": _payload("conversation.close", conversation_close_data),
    "low-confidence": _payload("low-confidence", low_confidence_data),
    "credential": _payload("credential", credential_data, credential=True),
}
"""A strategy of valid ``InterruptPayload`` documents for each kind."""

subjects = st.fixed_dictionaries(
    {
        "issuer": non_empty,
        "subjectId": st.from_regex(r"[A-Za-z0-9:@._-]{1,30}", fullmatch=True),
        "tenant": tenant_ids,
        "lane": st.sampled_from(["api-key", "oauth2", "oidc", "session", "anonymous"]),
        "kind": st.sampled_from(["user", "agent", "anonymous", "workload"]),
    },
    optional={"keyClass": non_empty},
)
refine_feedback = st.fixed_dictionaries(
    {"scope": st.sampled_from(["whole", "section", "items"])},
    optional={"sectionPath": text, "itemIds": str_lists, "tags": str_lists, "text": text},
)


def _with_hatch(base: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda doc, extra: {**extra, **doc}, base, st.dictionaries(hatch_keys, json_values, max_size=2)
    )


@st.composite
def interrupt_resolved(draw: st.DrawFn) -> dict[str, Any]:
    """A valid ``interrupt.resolved`` payload, honouring the refine / edit-accept rules."""
    doc = draw(
        st.fixed_dictionaries(
            {"nodeId": author_ids, "interruptId": tenant_bound_ids},
            optional={
                "kind": st.sampled_from(KINDS),
                "reason": st.text(min_size=1, max_size=64),
                "resumeValue": json_values,
                "resolvedBy": subjects,
                "decision": st.sampled_from(["granted", "rejected", "overridden"]),
                "action": st.sampled_from(["accept", "reject", "refine", "edit-accept", "timeout"]),
            },
        )
    )
    if doc.get("action") == "refine" or draw(st.booleans()):
        doc["refineFeedback"] = draw(refine_feedback)
    if doc.get("action") == "edit-accept" or draw(st.booleans()):
        doc["editedArtifactData"] = draw(json_values)
    return {**draw(st.dictionaries(hatch_keys, json_values, max_size=2)), **doc}


EVENT_PAYLOADS: dict[str, Any] = {
    "interrupt.resolved": interrupt_resolved(),
    "node.suspended": _with_hatch(
        st.fixed_dictionaries(
            {"nodeId": author_ids, "interruptId": tenant_bound_ids},
            optional={
                "kind": st.sampled_from(KINDS),
                "reason": st.text(min_size=1, max_size=64),
                "key": st.text(min_size=1, max_size=300),
            },
        )
    ),
    "node.started": _with_hatch(
        st.fixed_dictionaries({"nodeId": author_ids, "typeId": type_ids}, optional={"attempt": non_negative})
    ),
    "node.completed": _with_hatch(
        st.fixed_dictionaries(
            {"nodeId": author_ids}, optional={"outputs": json_objects, "durationMs": non_negative}
        )
    ),
    "node.failed": _with_hatch(
        st.fixed_dictionaries(
            {
                "nodeId": author_ids,
                "error": st.fixed_dictionaries(
                    {"code": non_empty, "message": non_empty},
                    optional={"details": json_objects, "retryable": st.booleans()},
                ),
            },
            optional={"attempts": st.integers(min_value=1, max_value=10)},
        )
    ),
    "node.resumed": _with_hatch(
        st.fixed_dictionaries(
            {"nodeId": author_ids}, optional={"interruptId": tenant_bound_ids, "resumeValue": json_values}
        )
    ),
    "agent.decided": _with_hatch(
        st.fixed_dictionaries(
            {"agentId": author_ids, "decision": json_values},
            optional={"confidence": probabilities, "causationHostId": non_empty},
        )
    ),
    "run.completed": _with_hatch(
        st.fixed_dictionaries({"outputs": json_objects}, optional={"durationMs": non_negative})
    ),
    "run.cancelled": _with_hatch(
        st.fixed_dictionaries(
            {},
            optional={
                "reason": text,
                "cancelledBy": text,
                "durationMs": non_negative,
                "parentRunId": tenant_bound_ids,
            },
        )
    ),
    "conversation.closed": _with_hatch(
        st.fixed_dictionaries(
            {"conversationId": conversation_ids}, optional={"reason": text, "turnCount": non_negative}
        )
    ),
}
"""Strategies of valid payload documents for several event types (hatch members included)."""

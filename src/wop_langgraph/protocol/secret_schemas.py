"""A host never asks a person for a secret through a question, a form or a turn.

An interrupt's embedded JSON Schemas (``resumeSchema``, a clarification question's ``schema``, a
conversation turn's ``outcomeSchema``) shape what a person types into a review page or a chat.
A schema that marks a value as a secret (``format: password``, ``writeOnly: true``, anywhere in
it) would solicit credential material that then lands in the event log, the audit trail and
every receipt. The ``credential`` kind exists for this: it sends the person to connect the
credential on the provider's own page and carries no material (oauth.md §The credential
interrupt). So such a schema is refused where the interrupt is raised, before anything is
recorded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from wop_langgraph.protocol.errors import ValidationError

__all__ = ["refuse_secret_schemas"]


def refuse_secret_schemas(payload: Mapping[str, Any]) -> None:
    """Refuse an interrupt payload whose embedded schemas ask for a secret.

    Raises:
        ValidationError: ``400 validation_error``; ``details.path`` is the JSON pointer of the
            offending keyword, ``details.use`` names ``request_credential``.
    """
    for pointer, schema in _embedded_schemas(payload):
        found = _secret_keyword(schema, pointer)
        if found is not None:
            raise ValidationError(
                f"an interrupt may not ask for a secret (the schema at {found} marks its value as "
                "one): a question, form or turn would put the secret in the event log; ask for the "
                "credential with request_credential(...) (kind: credential) instead, which sends the "
                "person to connect it and carries no credential material",
                details={"path": found, "reason": "credential_material", "use": "request_credential"},
            )


def _embedded_schemas(payload: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(pointer, schema)`` of every JSON Schema an interrupt payload embeds."""
    if payload.get("resumeSchema") is not None:
        yield "/resumeSchema", payload["resumeSchema"]
    data = payload.get("data")
    if not isinstance(data, Mapping):
        return
    questions = data.get("questions")
    if payload.get("kind") == "clarification" and isinstance(questions, list):
        for index, question in enumerate(questions):
            if isinstance(question, Mapping) and question.get("schema") is not None:
                yield f"/data/questions/{index}/schema", question["schema"]
    if data.get("outcomeSchema") is not None:
        yield "/data/outcomeSchema", data["outcomeSchema"]


def _secret_keyword(node: Any, pointer: str) -> str | None:
    """The pointer of the first ``format: password`` / ``writeOnly: true`` in ``node``, if any."""
    if isinstance(node, Mapping):
        if node.get("format") == "password":
            return f"{pointer}/format"
        if node.get("writeOnly") is True:
            return f"{pointer}/writeOnly"
        children: Iterator[tuple[str, Any]] = ((str(k), v) for k, v in node.items())
    elif isinstance(node, list):
        children = ((str(i), v) for i, v in enumerate(node))
    else:
        return None
    for name, child in children:
        found = _secret_keyword(child, f"{pointer}/{name.replace('~', '~0').replace('/', '~1')}")
        if found is not None:
            return found
    return None

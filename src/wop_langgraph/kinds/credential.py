"""``credential``: a provider authorization is needed; resumed with ``{outcome}`` (fixed schema)."""

from __future__ import annotations

from typing import Final

from wop_langgraph.kinds.base import InterruptKind
from wop_langgraph.kinds.review.waiting import CredentialPage
from wop_langgraph.nodes.questions import request_credential
from wop_langgraph.protocol.payloads import CredentialInterrupt
from wop_langgraph.protocol.snapshot import waiting_status_for

__all__ = ["CREDENTIAL"]

CREDENTIAL: Final = InterruptKind(
    name="credential",
    wire_kind="credential",
    payload_model=CredentialInterrupt,
    waiting_status=waiting_status_for("credential"),
    review=CredentialPage(),
    node_call=request_credential,  # its fixed resumeSchema is the whole resume rule
)

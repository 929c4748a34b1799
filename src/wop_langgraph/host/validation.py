"""The host's value checks: re-exported from :mod:`wop_langgraph.protocol.resume_check` and
:mod:`wop_langgraph.protocol.storable`.

They live in ``protocol`` because the node API applies the same checks outside the host.
"""

from wop_langgraph.protocol.resume_check import check_resume_value
from wop_langgraph.protocol.storable import INT64_MAX, INT64_MIN, STORABLE_MAX_DEPTH, require_storable

__all__ = ["INT64_MAX", "INT64_MIN", "STORABLE_MAX_DEPTH", "check_resume_value", "require_storable"]

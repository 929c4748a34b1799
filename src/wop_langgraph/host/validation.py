"""The host's value checks: re-exported from :mod:`wop_langgraph.protocol.storable`.

They live in ``protocol`` because the node API applies the same checks outside the host; a
resume value's check is its kind's (:meth:`wop_langgraph.kinds.InterruptKind.check_resume`).
"""

from wop_langgraph.protocol.storable import INT64_MAX, INT64_MIN, STORABLE_MAX_DEPTH, require_storable

__all__ = ["INT64_MAX", "INT64_MIN", "STORABLE_MAX_DEPTH", "require_storable"]

"""The host's resume checks: re-exported from :mod:`wop_langgraph.protocol.resume_check`.

They live in ``protocol`` because the node API applies the same checks outside the host.
"""

from wop_langgraph.protocol.resume_check import check_resume_value, require_json

__all__ = ["check_resume_value", "require_json"]

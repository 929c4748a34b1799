"""Whom to tell about an interrupt (interrupt.md: ``audience``, else the eligibility refs).

``audience`` when the gate gives one; else the union of ``approversList`` and the members of
``approverGroupRefs``/``approverRoleRefs`` found through the host's membership resolver (the
one that decides eligibility), for the ref kinds the host honours; else the workflow's default.
Group and role members can only be found among the subjects the directory knows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from wop_langgraph.protocol.keys import tenant_of
from wop_langgraph.protocol.principal import MembershipResolver, Principal

__all__ = ["recipients_for"]


def recipients_for(
    run_id: str,
    data: Mapping[str, Any],
    *,
    known: Iterable[str],
    membership: MembershipResolver | None,
    ref_kinds: Collection[str],
    default: Sequence[str] = (),
) -> list[str]:
    """The subjects to notify, in a stable order without duplicates."""
    audience = data.get("audience")
    if isinstance(audience, Mapping) and any(audience.get(k) for k in ("subjects", "groups", "roles")):
        subjects, groups, roles = (list(audience.get(k) or []) for k in ("subjects", "groups", "roles"))
    else:
        subjects = list(data.get("approversList") or [])
        groups = list(data.get("approverGroupRefs") or []) if "group" in ref_kinds else []
        roles = list(data.get("approverRoleRefs") or []) if "role" in ref_kinds else []
    chosen = list(subjects)
    if (groups or roles) and membership is not None:
        tenant = tenant_of(run_id)
        for subject in known:
            held = membership(Principal(tenant=tenant, subject_id=subject))
            if set(groups) & held.groups or set(roles) & held.roles:
                chosen.append(subject)
    if not chosen:
        chosen = list(default)
    return list(dict.fromkeys(str(s) for s in chosen))

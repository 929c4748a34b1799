"""A griffe extension for the docs site's API reference (mkdocs.yml loads it).

The docstrings cross-reference with Sphinx roles (``:meth:`close```, ``:class:`~a.b.C```), which
Markdown would show verbatim; this renders each as inline code of the name a reader sees (the last
part after a leading ``~``), leaving the source untouched.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

ROLE = re.compile(r":(?:meth|class|mod|func|attr|data|exc|obj):`(~?)([^`]+)`")


def _shown(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


class RolesAsCode(Extension):
    """Rewrites Sphinx roles in every loaded docstring as inline code."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_shown, obj.docstring.value)

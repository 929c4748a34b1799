"""A third-party import that costs seconds at start-up, put off until it is used.

jsonschema registers its ``iri`` and ``iri-reference`` format checks as it is imported, with
``from rfc3987_syntax import is_valid_syntax``, and ``rfc3987_syntax`` builds a Lark grammar as
it is imported: 2.1 s of every start of a process here (``python -X importtime``: the CLI,
the server, each worker process), for two formats no schema of ours uses. Imported before
jsonschema, this module registers a stand-in for ``rfc3987_syntax`` whose ``is_valid_syntax``
imports the real module on its first call. The checks stay the same ones (installed or not,
as without this module); a schema that asks for an IRI format pays for them when it does.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

__all__ = ["defer_rfc3987_syntax"]

_NAME = "rfc3987_syntax"


def defer_rfc3987_syntax() -> None:
    """Register the stand-in, unless jsonschema or the real module is imported already."""
    if "jsonschema" in sys.modules or _NAME in sys.modules:
        return  # too late to matter, or already paid for
    if importlib.util.find_spec(_NAME) is None:
        return  # not installed: jsonschema registers no IRI checks, as without this module
    stand_in = types.ModuleType(_NAME, "rfc3987_syntax, imported when first used")

    def real() -> Any:
        if sys.modules.get(_NAME) is stand_in:
            del sys.modules[_NAME]
        return importlib.import_module(_NAME)

    def is_valid_syntax(term: str, value: str) -> bool:
        return bool(real().is_valid_syntax(term, value))

    def attribute(name: str) -> Any:  # any other name: the real module's (PEP 562)
        if name.startswith("__"):  # the import system asks for ``__path__`` and the like
            raise AttributeError(name)
        return getattr(real(), name)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    stand_in.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[_NAME] = stand_in


defer_rfc3987_syntax()

"""Optional dependencies: which extra provides a module, and the one line that says so.

A command that needs an extra that is not installed prints :func:`missing_extra`'s line and
exits with status 2, never a traceback.
"""

from __future__ import annotations

import importlib
from typing import Final

__all__ = ["EXTRAS", "MISSING_EXTRA_STATUS", "missing_extra"]

EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "server": ("fastapi", "uvicorn", "pydantic_settings", "httpx"),
    "postgres": ("psycopg", "psycopg_pool"),
    "chat": ("openwop_client",),
    "adapters": ("langchain",),
    "notify": ("apprise",),
}
"""The importable modules each extra of ``pyproject.toml`` brings (those the commands need)."""

MISSING_EXTRA_STATUS: Final = 2
"""Exit status of a command whose extra is missing (as for a usage error)."""


def missing_extra(extra: str, command: str) -> str | None:
    """One line naming ``extra`` and how to install it, or ``None`` when all its modules import."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing = exc.name or module
            return (
                f"{command}: needs the '{extra}' extra ({missing} is not installed); "
                f'install it with: pip install "wop-langgraph[{extra}]" '
                f'(in a checkout: pip install -e ".[{extra}]")'
            )
    return None

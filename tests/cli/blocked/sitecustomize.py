"""Make the modules named in ``$WOP_TEST_BLOCK_IMPORTS`` unimportable in this interpreter.

Put this folder on ``PYTHONPATH`` of a child process: Python imports ``sitecustomize`` at
start-up, and the finder below refuses the named top-level modules as if they were not
installed, so a test can run the real CLI without an extra.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

_BLOCKED = frozenset(filter(None, os.environ.get("WOP_TEST_BLOCK_IMPORTS", "").split(",")))


class _Blocker:
    @staticmethod
    def find_spec(name: str, path: object = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocker())

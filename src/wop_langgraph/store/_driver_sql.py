"""Old name of :mod:`wop_langgraph.store.statements`, kept only for ``store/events.py``.

Issue 37 renamed the statement engine; ``store/events.py`` belongs to issue 38's change and
switches its import there. Delete this module once nothing imports it.
"""

from wop_langgraph.store.statements import Reads, driver_statement

__all__ = ["Reads", "driver_statement"]

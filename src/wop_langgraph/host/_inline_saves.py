"""A sync pass saves its checkpoints on the thread that drives it, not on a pool thread.

LangGraph's sync loop hands every save (a task's writes, each checkpoint) to a thread pool
that it makes for each invocation, through langchain-core's ``get_executor_for_config`` as
``langgraph.pregel._executor`` looks it up. A pass streamed with ``durability="sync"`` waits
for each checkpoint save before its next step anyway, so the handoff buys nothing and costs a
thread start or two per pass and a thread switch per save: measured, about a third of a
full-path cycle on SQLite (``benchmarks/full_path.py``).

Inside :func:`saving_inline`, the first executor that LangGraph asks for (the pass's own loop;
a graph that a node runs asks later and gets LangGraph's) runs the saver's ``put`` and
``put_writes``, and the loop's wrapper that orders checkpoint saves, in the thread that submits
them. Anything else (the tasks of a step that runs several, a cache write) goes to a thread
pool made as LangGraph makes it, when first needed.

This replaces one name in a private LangGraph module (``langgraph`` is pinned ``<1.3``); where
the name is missing, passes run as LangGraph runs them. ``tests/host/test_inline_saves.py``
fails if the saves stop running on the driving thread.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

__all__ = ["saving_inline"]

_HOOKED_MODULE = "langgraph.pregel._executor"
_HOOKED_NAME = "get_executor_for_config"
#: The loop's method that saves a checkpoint once the saves before it are done.
_ORDERED_PUT = "_checkpointer_put_after_previous"
_SAVER_METHODS = frozenset({"put", "put_writes"})

_OpenExecutor = Callable[[Any], AbstractContextManager[concurrent.futures.Executor]]


class _Ticket:
    """One pass's claim on the first executor that LangGraph asks for inside it."""

    __slots__ = ("saver", "taken")

    def __init__(self, saver: object) -> None:
        self.saver = saver
        self.taken = False


_TICKET: contextvars.ContextVar[_Ticket | None] = contextvars.ContextVar("wop_inline_saves", default=None)
_install_lock = threading.Lock()


@contextmanager
def saving_inline(saver: object) -> Iterator[bool]:
    """Stream a sync graph in this block to have ``saver``'s saves run on the streaming thread.

    Yields whether the hook is in place (``False``: this LangGraph has no such name to hook,
    and the pass runs as LangGraph runs it).
    """
    hooked = _install()
    token = _TICKET.set(_Ticket(saver))
    try:
        yield hooked
    finally:
        _TICKET.reset(token)


def _install() -> bool:
    """Put the hook in place once per process; whether it is."""
    module = importlib.import_module(_HOOKED_MODULE)
    with _install_lock:
        current = getattr(module, _HOOKED_NAME, None)
        if current is None:
            return False
        if not getattr(current, "_wop_inline_saves", False):
            setattr(module, _HOOKED_NAME, _hooked(current))
        return True


def _hooked(original: _OpenExecutor) -> _OpenExecutor:
    @contextmanager
    def get_executor_for_config(config: Any) -> Iterator[concurrent.futures.Executor]:
        ticket = _TICKET.get()
        if ticket is None or ticket.taken:
            with original(config) as executor:
                yield executor
            return
        ticket.taken = True
        with _InlineSaves(ticket.saver, lambda: original(config)) as executor:
            yield executor

    get_executor_for_config._wop_inline_saves = True  # type: ignore[attr-defined]
    return get_executor_for_config


class _InlineSaves(concurrent.futures.Executor):
    """Runs the saves at once in the submitting thread, the rest on a pool made when needed."""

    def __init__(
        self, saver: object, open_pool: Callable[[], AbstractContextManager[concurrent.futures.Executor]]
    ) -> None:
        self._saver = saver
        self._open_pool = open_pool
        self._pool: concurrent.futures.Executor | None = None
        self._stack = ExitStack()
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if self._is_save(fn, args):
            return _run_now(fn, args, kwargs)
        return self._other_work().submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        # Leaving the pool's own context shuts it down as LangGraph's would be (waiting).
        with self._lock:
            self._pool = None
        self._stack.close()

    def _is_save(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
        # LangGraph submits ``ctx.run, function, *arguments`` (``contextvars.Context.run``).
        if not args or not isinstance(getattr(fn, "__self__", None), contextvars.Context):
            return False
        function = args[0]
        name = getattr(function, "__name__", None)
        owner = getattr(function, "__self__", None)
        if owner is self._saver:
            return name in _SAVER_METHODS
        return name == _ORDERED_PUT

    def _other_work(self) -> concurrent.futures.Executor:
        with self._lock:
            if self._pool is None:
                self._pool = self._stack.enter_context(self._open_pool())
            return self._pool


def _run_now(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> concurrent.futures.Future[Any]:
    """``fn(*args, **kwargs)`` run here, as a done future (its exception kept, as a pool
    thread keeps it; ``KeyboardInterrupt`` and the like go up at once)."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_running_or_notify_cancel()
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:
        future.set_exception(exc)
    else:
        future.set_result(result)
    return future

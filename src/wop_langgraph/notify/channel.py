"""The :class:`Channel` protocol and :class:`Channels`, the ordered list an address is routed through.

A channel is anything with a ``name``, ``accepts(address)`` and ``send(address, message)``;
the dispatcher hands each outbox address to the first channel that accepts it. ``send`` either
returns (delivered) or raises :class:`SendError`, whose ``permanent`` flag says whether a retry
could help: a transient failure is retried with the policy's backoff, a permanent one makes a
dead letter at once. An address no channel accepts is a permanent failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

from wop_langgraph.notify.message import Message

__all__ = ["Channel", "Channels", "SendError", "redact"]


class SendError(Exception):
    """A failed send; ``permanent`` when retrying cannot help (refused address, bad URL)."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@runtime_checkable
class Channel(Protocol):
    """A way to deliver a rendered :class:`~wop_langgraph.notify.message.Message` to an address.

    ``send`` is called on the delivery thread, one address at a time, at least once per
    notification (a worker that dies mid-send is retried after its lease): make it idempotent
    where the receiver allows. Any exception other than :class:`SendError` counts as transient.
    The error's message is kept in the notification's ``last_error``: leave secrets out of it
    (dead letters show addresses only as scheme and host).
    """

    @property
    def name(self) -> str:
        """A short name for logs (``"email"``, ``"apprise"``, ``"slack"``)."""
        ...

    def accepts(self, address: str) -> bool:
        """Whether this channel delivers to ``address`` (as the directory wrote it)."""
        ...

    def send(self, address: str, message: Message) -> None:
        """Deliver ``message`` to ``address``.

        Raises:
            SendError: the send failed (``permanent=True`` when retrying cannot help).
        """
        ...


class Channels:
    """An ordered list of channels: an address goes to the first one that accepts it."""

    def __init__(self, channels: Iterable[Channel] = ()) -> None:
        self._channels = tuple(channels)
        for channel in self._channels:
            if not isinstance(channel, Channel):
                raise TypeError(f"{channel!r} is not a Channel (name, accepts(address), send(address, msg))")

    def __iter__(self) -> Iterator[Channel]:
        return iter(self._channels)

    def route(self, address: str) -> Channel | None:
        """The first channel that accepts ``address``, or ``None``."""
        return next((c for c in self._channels if c.accepts(address)), None)

    def send(self, address: str, message: Message) -> None:
        """Send ``message`` through the channel that accepts ``address``.

        Raises:
            SendError: no channel accepts ``address`` (permanent), or the channel's own failure.
        """
        channel = self.route(address)
        if channel is None:
            names = ", ".join(c.name for c in self._channels) or "none"
            raise SendError(f"no channel accepts this address (channels: {names})", permanent=True)
        channel.send(address, message)


def redact(address: str) -> str:
    """An address fit for logs and dead letters: the scheme and host only (URLs carry secrets).

    ``mailto:`` addresses are kept whole; other addresses without ``//`` keep their scheme only.
    """
    if address.startswith("mailto:"):
        return address
    parts = urlsplit(address)
    if not parts.netloc:
        return f"{parts.scheme}:…" if parts.scheme else "…"
    return f"{parts.scheme}://{parts.hostname or '…'}" + (f":{parts.port}" if port_of(parts) else "")


def port_of(parts: object) -> int | None:
    """The port of a ``urlsplit`` result, or ``None`` when absent or malformed."""
    try:
        return parts.port  # type: ignore[attr-defined, no-any-return]
    except ValueError:
        return None

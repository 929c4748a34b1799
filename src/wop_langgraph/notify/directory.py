"""The operator's directory: which addresses reach a principal (email, Apprise URLs, others).

Configured in code (:class:`Directory` over :class:`Contact` values) or read from a JSON file
or text (``{"alice": {"email": "alice@example.com", "apprise": ["ntfy://..."]}, ...}``); ``other``
lists addresses for channels of your own (``"other": ["sms:+15550100"]``). A subject the
directory does not know cannot be notified, whatever the gate says.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Contact", "Directory"]


@dataclass(frozen=True)
class Contact:
    """How to reach one principal: email addresses, Apprise URLs (chat, push, webhooks), and
    ``other`` addresses, as written, for channels of your own."""

    email: tuple[str, ...] = ()
    apprise: tuple[str, ...] = ()
    other: tuple[str, ...] = ()

    @property
    def addresses(self) -> list[str]:
        """Every address as stored in the outbox: ``mailto:<email>``, the Apprise URLs, the others."""
        return [f"mailto:{e}" for e in self.email] + list(self.apprise) + list(self.other)


@dataclass(frozen=True)
class Directory:
    """Subject id -> :class:`Contact`."""

    contacts: Mapping[str, Contact] = field(default_factory=dict)

    def __iter__(self) -> Iterator[str]:
        return iter(self.contacts)

    def get(self, subject_id: str) -> Contact | None:
        """The contact of ``subject_id``, or ``None``."""
        return self.contacts.get(subject_id)

    @classmethod
    def from_mapping(cls, entries: Mapping[str, Any]) -> Directory:
        """Build from ``{subject: {"email": str | [str], "apprise": str | [str], "other": str | [str]}}``.

        Raises:
            ValueError: an entry that is not an object, or an address that is not a string.
        """
        contacts: dict[str, Contact] = {}
        for subject, entry in entries.items():
            if not isinstance(entry, Mapping):
                raise ValueError(f"notify directory: the entry of {subject!r} must be an object")
            contacts[str(subject)] = Contact(
                email=_strings(entry.get("email"), subject, "email"),
                apprise=_strings(entry.get("apprise"), subject, "apprise"),
                other=_strings(entry.get("other"), subject, "other"),
            )
        return cls(contacts)

    @classmethod
    def load(cls, source: str | os.PathLike[str]) -> Directory:
        """Read a JSON file, or JSON text when ``source`` starts with ``{``.

        Raises:
            ValueError: unreadable JSON or a malformed entry (the message names the entry).
        """
        text = str(source)
        if not text.lstrip().startswith("{"):
            text = Path(source).read_text(encoding="utf-8")
        try:
            entries = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"notify directory: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(entries, dict):
            raise ValueError("notify directory: the top level must be an object of subject -> contact")
        return cls.from_mapping(entries)


def _strings(value: object, subject: str, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) and item for item in items):
        raise ValueError(f"notify directory: {name} of {subject!r} must be a string or a list of strings")
    return tuple(items)

"""Channels of a user's own (not ours), for the tests and for a served process's ``WOP_NOTIFY_CHANNELS``.

``Pager`` keeps what it was given in a list (or fails as told); ``FilePager`` appends each message
as a JSON line to the file ``WOP_TEST_PAGER_FILE`` names, so a test can read what a server sent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from wop_langgraph.notify import Message


@dataclass
class Pager:
    """A channel for ``pager:<id>`` addresses that remembers what it sent (or fails as told)."""

    prefix: str = "pager:"
    name: str = "pager"
    sent: list[tuple[str, Message]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)

    def accepts(self, address: str) -> bool:
        return address.startswith(self.prefix)

    def send(self, address: str, message: Message) -> None:
        if self.failures:
            raise self.failures.pop(0)
        self.sent.append((address, message))


class FilePager:
    """``pager:`` addresses, written as JSON lines to ``$WOP_TEST_PAGER_FILE``."""

    name = "file-pager"

    def __init__(self) -> None:
        self.path = Path(os.environ["WOP_TEST_PAGER_FILE"])

    def accepts(self, address: str) -> bool:
        return address.startswith("pager:")

    def send(self, address: str, message: Message) -> None:
        line = {"address": address, "subject": message.subject, "text": message.text, "link": message.link}
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


NOT_A_CHANNEL = object()

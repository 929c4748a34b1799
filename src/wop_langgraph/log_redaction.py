"""Keep signed interrupt tokens out of every log line: a token in a log is a live credential.

Whoever holds an ``ow2.`` token can answer its gate until it expires, and review links carry
one in their path (``GET /interrupts/ow2.hs256...``), which uvicorn's access log prints in
full. :func:`redact` replaces every ``ow2.`` token, and every ``/interrupts/<segment>`` path
segment, with a short fingerprint, ``ow2:...#<first 8 hex of its sha256>``: enough to tell two
links apart in a log, or to match a log line to a token one already holds, and useless to
resolve with.

:class:`RedactTokens` is a :class:`logging.Filter` that redacts a record's message and its
string arguments in place (uvicorn's access formatter unpacks the arguments, so their number
and order are kept). :func:`install_log_redaction` applies it to every record the process
creates, whichever logger or handler it goes through (``serve`` and ``worker`` call it first).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["RedactTokens", "fingerprint", "install_log_redaction", "redact"]

# An ow2 token: "ow2." then dot-separated base64url / keyId segments.
_TOKEN = re.compile(r"ow2\.[A-Za-z0-9_~\-]+(?:\.[A-Za-z0-9_~\-]+)*")
# The segment after a path that begins with /interrupts/ (the token surface), bare or in a URL;
# /runs/{runId}/interrupts/{nodeId} is not the token surface and keeps its node id.
_PATH = re.compile(r"(^|[\s\"'(=,\[]|://[^/\s\"']+)/interrupts/([^/\s?#\"']+)")


_MARK = "ow2:..."


def fingerprint(secret: str) -> str:
    """``ow2:...#<8 hex>``: the first 8 hex digits of ``secret``'s sha256, never the secret."""
    return f"{_MARK}#" + hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def redact(text: str) -> str:
    """``text`` with every ``/interrupts/<segment>`` and every ``ow2.`` token fingerprinted.

    Idempotent: a fingerprint is left as it is, so a record redacted twice (by the record factory
    and by a handler's :class:`RedactTokens`) keeps the one fingerprint.
    """
    if "ow2." not in text and "/interrupts/" not in text:
        return text  # the common case, kept cheap: most log lines name no token
    text = _PATH.sub(_fingerprinted_segment, text)
    return _TOKEN.sub(lambda m: fingerprint(m.group(0)), text)


def _fingerprinted_segment(match: re.Match[str]) -> str:
    if match.group(2) == _MARK:  # already a fingerprint (the segment pattern stops at its '#')
        return match.group(0)
    return f"{match.group(1)}/interrupts/{fingerprint(match.group(2))}"


def _redacted_arg(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


class RedactTokens(logging.Filter):
    """A filter that fingerprints tokens in a record's message and string arguments; never drops one.

    Install it on a handler (filters on a logger do not see its children's records), or use
    :func:`install_log_redaction` for every record of the process.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


def redact_record(record: logging.LogRecord) -> None:
    """Redact ``record`` in place: its message, its arguments, and any text already formatted."""
    if isinstance(record.msg, str):
        record.msg = redact(record.msg)
    if isinstance(record.args, tuple):
        record.args = tuple(_redacted_arg(a) for a in record.args)
    elif isinstance(record.args, Mapping):
        record.args = {k: _redacted_arg(v) for k, v in record.args.items()}
    if record.exc_text:
        record.exc_text = redact(record.exc_text)


_installed: list[Callable[..., logging.LogRecord]] = []


def install_log_redaction() -> None:
    """Redact every log record this process creates from now on (idempotent).

    Wraps the log record factory, so records of every logger (uvicorn's access and error logs,
    this package's, a library's) are redacted before any handler or formatter sees them.
    """
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redact_record(record)
        return record

    _installed.append(previous)
    logging.setLogRecordFactory(factory)

"""UTC time helpers: one rule for naive datetimes (SQLite hands them back) and one wire format."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["as_utc", "iso_z", "utcnow"]


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC datetime; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def iso_z(moment: datetime) -> str:
    """ISO 8601 in UTC with millisecond precision and a ``Z`` suffix."""
    return as_utc(moment).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"

"""Adapter tests reuse the host fixtures (every run's events are checked against the official schemas)."""

from __future__ import annotations

from tests.host.conftest import _fresh_counts, host, make_host, schema_waivers

__all__ = ["_fresh_counts", "host", "make_host", "schema_waivers"]

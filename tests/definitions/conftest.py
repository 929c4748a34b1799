"""Definition tests reuse the host fixtures: every run's events are judged by the official schemas."""

from tests.host.conftest import _fresh_counts, host, make_host, schema_waivers

__all__ = ["_fresh_counts", "host", "make_host", "schema_waivers"]

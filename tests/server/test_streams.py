"""Stream slots: taken at once or refused, given back once, per key and in total."""

from __future__ import annotations

import pytest

from wop_langgraph.protocol.errors import RateLimited
from wop_langgraph.server.streams import RETRY_AFTER_SECONDS, StreamLimits


def test_a_slot_is_refused_past_each_limit_and_given_back_once() -> None:
    limits = StreamLimits(per_key=2, total=3)
    first, second = limits.hold("a"), limits.hold("a")
    with pytest.raises(RateLimited) as refused:
        limits.hold("a")
    assert refused.value.details == {"limit": 2, "scope": "apiKey"}
    assert refused.value.retry_after == RETRY_AFTER_SECONDS
    assert limits.open_streams("a") == 2  # a refusal takes nothing
    third = limits.hold("b")
    with pytest.raises(RateLimited) as full:
        limits.hold("c")
    assert full.value.details == {"limit": 3, "scope": "server"}
    first.release()
    first.release()  # a second release gives nothing back twice
    assert limits.open_streams("a") == 1 and limits.open_streams() == 2
    with limits.hold("a"):
        assert limits.open_streams("a") == 2
    assert limits.open_streams("a") == 1
    second.release()
    third.release()
    assert limits.open_streams() == 0

"""``wop-langgraph serve`` with every thread under ``cProfile`` on its own CPU clock (for
:mod:`langgraph_api_profile`): ``SIGUSR1`` writes the merged profile so far (pickled
``pstats``-shaped dict) to ``$WOP_PROFILE_OUT.<n>``, n = 0, 1, ...

Timing by ``time.thread_time`` charges each function the CPU its thread spent, not the time it
waited for the GIL, a lock or the database: what a loaded machine's wall clock cannot tell.
"""

from __future__ import annotations

import _thread
import cProfile
import os
import pickle
import signal
import sys
import threading
import time
from typing import Any

OUT = os.environ["WOP_PROFILE_OUT"]
_profiles: list[cProfile.Profile] = []
_guard = threading.Lock()
_dumps = [0]
_bootstrap_inner = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]


def _profiled_bootstrap(self: threading.Thread) -> None:
    profile = cProfile.Profile(time.thread_time)
    with _guard:
        _profiles.append(profile)
    profile.enable()
    _bootstrap_inner(self)


def _dump_aside(*_: Any) -> None:
    # On a thread of its own, unprofiled: the dump's own work stays out of the profile.
    _thread.start_new_thread(_dump, ())


def _dump() -> None:
    merged: dict[Any, tuple[Any, ...]] = {}
    for profile in list(_profiles):
        profile.snapshot_stats()  # (reads without disabling: other threads' profiles go on)
        for key, (cc, nc, tt, ct, callers) in profile.stats.items():  # type: ignore[attr-defined]
            if key in merged:
                mcc, mnc, mtt, mct, mcallers = merged[key]
                for caller, figures in callers.items():
                    old = mcallers.get(caller)
                    mcallers[caller] = (
                        figures if old is None else tuple(a + b for a, b in zip(old, figures, strict=True))
                    )
                merged[key] = (mcc + cc, mnc + nc, mtt + tt, mct + ct, mcallers)
            else:
                merged[key] = (cc, nc, tt, ct, dict(callers))
    with open(f"{OUT}.{_dumps[0]}", "wb") as out:
        pickle.dump(merged, out)
    _dumps[0] += 1


def main() -> None:
    threading.Thread._bootstrap_inner = _profiled_bootstrap  # type: ignore[attr-defined]
    main_profile = cProfile.Profile(time.thread_time)
    _profiles.append(main_profile)
    signal.signal(signal.SIGUSR1, _dump_aside)
    from wop_langgraph.cli import main as cli

    sys.argv = ["wop-langgraph", *sys.argv[1:]]
    main_profile.enable()
    cli()


if __name__ == "__main__":
    main()

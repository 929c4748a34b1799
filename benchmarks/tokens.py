"""How many interrupt tokens one core verifies per second: valid, bad-MAC and oversized.

Each mode verifies the same token over and over, except ``valid_distinct``:

* ``valid``: a genuine token (with an approver, ~340 characters) that verifies (a link opened
  again and again, or a flood carrying one token: its payload is decoded once and remembered;
  grammar, kid and MAC are checked on every call);
* ``valid_distinct``: 5,000 genuine tokens in turn, more than ``verify`` remembers, so every
  one is decoded and checked in full (the cost of a token seen for the first time);
* ``bad_mac``: the same token with its last MAC character changed (refused after the HMAC);
* ``oversized``: a 64 KiB string (refused by its length, before anything is read).

Modes are measured in interleaved rounds; the figure is the median round, in tokens per second
of wall time and of this process's CPU time (steadier on a busy machine). Each round also times
``hmac.digest`` (OpenSSL's one-shot HMAC-SHA256) of the distinct tokens' signed texts, the same
bytes verification MACs: the floor no verification of a token can beat. ``--baseline FILE``
loads another ``tokens.py`` (e.g. ``git show main:src/wop_langgraph/tokens.py``) and measures it
in the same rounds, interleaved with this one, so a before/after comparison sees the same load::

    PYTHONPATH=src python benchmarks/tokens.py --rounds 7 --tokens 20000
    git show HEAD~1:src/wop_langgraph/tokens.py > /tmp/tokens_before.py
    PYTHONPATH=src python benchmarks/tokens.py --baseline /tmp/tokens_before.py

Target: ``valid_distinct`` (tokens seen for the first time) at least 100,000 tokens/s (CPU
time) on one core.
"""

from __future__ import annotations

import argparse
import hmac
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import wop_langgraph.tokens

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
MODES = ("valid", "valid_distinct", "bad_mac", "oversized")
FLOOR = "hmac.digest"  # not a verification: the one-shot HMAC of each distinct token's signed text
TARGET = 100_000


def load(path: Path) -> ModuleType:
    """Another implementation of the token module, imported from a file under its own name."""
    spec = importlib.util.spec_from_file_location("tokens_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def modes(tokens: ModuleType) -> dict[str, Callable[[int], None]]:
    """Each mode verifies ``n`` tokens with ``tokens``' own keyring, mint and verify."""
    keys = tokens.SigningKeys({"k2": "new-secret-0123456789abcdef", "k1": "old-secret-0123456789abcdef"})
    good = tokens.mint(
        keys,
        run_id="acme/run-0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        node_id="review",
        interrupt_id="review:4b5a69788796a5b4c3d2e1f00f1e2d3c",
        now=NOW - timedelta(minutes=1),
        approver="alice@example.com",
    ).token
    distinct = [
        tokens.mint(
            keys,
            run_id=f"acme/run-{i:032x}",
            node_id="review",
            interrupt_id=f"review:{i:032x}",
            now=NOW - timedelta(minutes=1),
            approver="alice@example.com",
        ).token
        for i in range(5_000)
    ]
    bad = good[:-1] + ("A" if good[-1] != "A" else "B")
    huge = "ow2." + "A" * (64 * 1024)
    verify, invalid = tokens.verify, tokens.InterruptTokenInvalid

    def valid(n: int) -> None:
        for _ in range(n):
            verify(keys, good, now=NOW)

    def valid_distinct(n: int) -> None:
        for i in range(n):
            verify(keys, distinct[i % len(distinct)], now=NOW)

    def refused(token: str) -> Callable[[int], None]:
        def run(n: int) -> None:
            for _ in range(n):
                try:
                    verify(keys, token, now=NOW)
                except invalid:
                    pass
                else:
                    raise AssertionError("a bad token verified")

        return run

    signed = [token.rsplit(".", 1)[0].encode() for token in distinct]
    secret = b"new-secret-0123456789abcdef"

    def floor(n: int) -> None:
        for i in range(n):
            hmac.digest(secret, signed[i % len(signed)], "sha256")

    return {
        FLOOR: floor,
        "valid": valid,
        "valid_distinct": valid_distinct,
        "bad_mac": refused(bad),
        "oversized": refused(huge),
    }


def measure(
    implementations: dict[str, ModuleType], rounds: int, count: int, warmup: int
) -> dict[tuple[str, str], tuple[list[float], list[float]]]:
    """Wall and CPU tokens/s per (implementation, mode), one figure per round."""
    runners = {name: modes(module) for name, module in implementations.items()}
    for per_mode in runners.values():
        for run in per_mode.values():
            run(warmup)
    figures: dict[tuple[str, str], tuple[list[float], list[float]]] = {
        (name, mode): ([], []) for name in runners for mode in (*MODES, FLOOR)
    }
    for round_ in range(rounds):
        names = list(runners)
        names = names[round_ % len(names) :] + names[: round_ % len(names)]  # rotate who goes first
        for mode in (*MODES, FLOOR):
            for name in names:
                wall, cpu = time.perf_counter(), time.process_time()
                runners[name][mode](count)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                figures[name, mode][0].append(count / wall)
                figures[name, mode][1].append(count / max(cpu, 1e-9))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=20_000, help="verifications per mode per round")
    parser.add_argument("--warmup", type=int, default=2_000)
    parser.add_argument("--baseline", type=Path, help="another tokens.py, measured in the same rounds")
    args = parser.parse_args(argv)

    implementations = {"current": wop_langgraph.tokens}
    if args.baseline is not None:
        implementations["baseline"] = load(args.baseline)
    figures = measure(implementations, args.rounds, args.tokens, args.warmup)

    print(f"token verification, tokens/s (median of {args.rounds} rounds of {args.tokens:,}; one core)")
    print(f"{'implementation':<15} {'mode':<14} {'wall':>12} {'cpu':>12}")
    for (name, mode), (wall, cpu) in figures.items():
        print(f"{name:<15} {mode:<14} {statistics.median(wall):>12,.0f} {statistics.median(cpu):>12,.0f}")
    if args.baseline is not None:
        for mode in MODES:
            ratios = [
                now / before
                for now, before in zip(figures["current", mode][1], figures["baseline", mode][1], strict=True)
            ]
            print(f"current / baseline {mode:<14} {statistics.median(ratios):.2f}x (cpu, per round)")
    distinct_cpu = statistics.median(figures["current", "valid_distinct"][1])
    floor_cpu = statistics.median(figures["current", FLOOR][1])
    print(f"valid_distinct costs {floor_cpu / distinct_cpu:.1f}x one hmac.digest of its signed text (cpu)")
    verdict = "met" if distinct_cpu >= TARGET else "NOT met"
    print(f"target: valid_distinct >= {TARGET:,}/s (cpu): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

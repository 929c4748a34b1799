"""``wop-langgraph export RUN_ID`` and ``wop-langgraph verify BUNDLE [--keys FILE]``.

``export`` writes a run's proof bundle from its database (``--db``, default
``$WOP_DATABASE_URL``), with the public keys of ``$WOP_RECEIPT_KEYS`` (or of ``--keys``).
``verify`` needs no database and no network: it checks the bundle against the keys in
``--keys`` (a JWKS-style document, e.g. saved from ``GET /.well-known/wop-receipt-keys``) or,
without it, against the bundle's own keys (integrity, not origin). Exit status: 0 verified,
1 a check failed (the first broken sequence is named), 2 unusable input.
``keygen KID`` prints a new ``WOP_RECEIPT_KEYS`` entry.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from wop_langgraph._clock import utcnow
from wop_langgraph.proof.keys import PublicKeys, ReceiptKeys, generate_seed
from wop_langgraph.proof.verify import verify_bundle

__all__ = ["export_main", "keygen_main", "verify_main"]


def _read_json(path: str, what: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"wop-langgraph: cannot read {what} {path!r}: {exc}") from None


def _keys_file(path: str) -> PublicKeys:
    try:
        return PublicKeys.from_jwks(_read_json(path, "keys"))
    except ValueError as exc:
        raise SystemExit(f"wop-langgraph: the keys in {path!r}: {exc}") from None


def verify_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="wop-langgraph verify", description="Verify a run's proof bundle offline."
    )
    parser.add_argument("bundle", help="the bundle file ('-': stdin)")
    parser.add_argument("--keys", help="trusted public keys (JWKS-style JSON); default: the bundle's own")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        keys = None if args.keys is None else _keys_file(args.keys)
        bundle = _read_json(args.bundle, "bundle")
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    if not isinstance(bundle, dict):
        print("wop-langgraph: the bundle is not a JSON object", file=sys.stderr)
        return 2
    report = verify_bundle(bundle, keys)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        verdict = "verified" if report.ok else f"BROKEN at sequence {report.first_broken}"
        print(
            f"run {report.run_id}: {verdict} ({report.events} events, {report.receipts} receipts, "
            f"{report.checkpoints} checkpoints; checkpointed to sequence {report.covered_to}"
            f"{'' if report.newest_checkpoint_at is None else ' at ' + report.newest_checkpoint_at}; "
            f"keys {'pinned' if report.keys_pinned else 'from the bundle (not pinned)'})"
        )
        for problem in sorted(report.problems, key=lambda p: -1 if p.sequence is None else p.sequence):
            where = "-" if problem.sequence is None else problem.sequence
            print(f"  sequence {where}: {problem.code}: {problem.message}")
    return 0 if report.ok else 1


def export_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="wop-langgraph export", description="Write a run's proof bundle.")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--db", default=os.environ.get("WOP_DATABASE_URL"), help="database URL")
    parser.add_argument("--keys", help="public keys to include (default: those of $WOP_RECEIPT_KEYS)")
    parser.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    args = parser.parse_args(argv)
    if not args.db:
        print("wop-langgraph export: give --db or set WOP_DATABASE_URL", file=sys.stderr)
        return 2
    try:
        keys = _keys_file(args.keys) if args.keys else _env_keys()
    except (SystemExit, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    from wop_langgraph.store.engine import make_engine, reading
    from wop_langgraph.store.proof_bundle import export_bundle
    from wop_langgraph.store.runs import get_run

    engine = make_engine(args.db)
    try:
        with reading(engine) as conn:
            if get_run(conn, args.run_id) is None:
                print(f"wop-langgraph export: run {args.run_id!r} not found", file=sys.stderr)
                return 1
            bundle = export_bundle(conn, args.run_id, keys, now=utcnow())
    finally:
        engine.dispose()
    text = json.dumps(bundle, indent=1, ensure_ascii=False)
    if args.output == "-":
        print(text)
    else:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    return 0


def _env_keys() -> PublicKeys | None:
    configured = os.environ.get("WOP_RECEIPT_KEYS", "").strip()
    if not configured:
        return None
    return ReceiptKeys.parse(configured, revoked=os.environ.get("WOP_RECEIPT_KEYS_REVOKED", "")).public()


def keygen_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="wop-langgraph keygen", description="Print a new receipt key entry."
    )
    parser.add_argument("kid", metavar="KID")
    args = parser.parse_args(argv)
    seed = generate_seed()
    try:
        public = ReceiptKeys.parse(f"{args.kid}={seed}").public().to_jwks()["keys"][0]["x"]
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"{args.kid}={seed}")
    print(f"# public half, to keep after rotating it out: {args.kid}=pub:{public}", file=sys.stderr)
    return 0

"""``wop-langgraph export`` and ``wop-langgraph verify`` as an auditor runs them: the real
console command in a child process, the run's database, and then only the public keys."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._support import _run
from tests.host._graphs import approval_graph
from tests.host._support import start
from tests.proof import _attacks as attack
from tests.proof.test_receipts import BOB, CAROL
from wop_langgraph.host import WopHost
from wop_langgraph.proof.keys import ReceiptKeys, generate_seed

SEED = generate_seed()
KEYS = ReceiptKeys.parse(f"audit-1={SEED}")
CLI = [sys.executable, "-m", "wop_langgraph.cli"]


@pytest.fixture
def host(db_url: str) -> Iterator[WopHost]:
    made = WopHost.from_url(db_url)
    made.use_receipt_keys(KEYS)
    yield made
    made.close()
    made.saver.close()


def test_export_then_verify_offline_and_name_the_broken_sequence(
    host: WopHost, db_url: str, tmp_path: Path
) -> None:
    run_id, _ = start(host, approval_graph(required_approvals=2))
    host.resolve(run_id, "review", {"action": "accept"}, BOB)
    host.resolve(run_id, "review", {"action": "accept"}, CAROL)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(KEYS.public().to_jwks()))
    bundle = tmp_path / "bundle.json"

    exported = _run(
        [*CLI, "export", run_id, "--db", db_url, "-o", str(bundle)],
        env={"WOP_RECEIPT_KEYS": f"audit-1={SEED}"},
    )
    assert exported.returncode == 0, exported.stderr
    assert json.loads(bundle.read_text())["keys"] == KEYS.public().to_jwks()
    verified = _run([*CLI, "verify", str(bundle), "--keys", str(keys)])
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"run {run_id}: verified" in verified.stdout and "keys pinned" in verified.stdout

    decided = attack.sequence_of(host.engine, run_id, "interrupt.resolved")
    payload = attack.payload_at(host.engine, run_id, decided)
    payload["resolvedBy"]["subjectId"] = "mallory"
    attack.edit_payload(host.engine, run_id, decided, payload)
    assert _run([*CLI, "export", run_id, "--db", db_url, "-o", str(bundle)]).returncode == 0
    broken = _run([*CLI, "verify", str(bundle), "--keys", str(keys), "--json"])
    assert broken.returncode == 1
    report = json.loads(broken.stdout)
    assert report["firstBrokenSequence"] == decided
    assert report["ok"] is False

    # Pinned keys decide: the bundle's own keys (none, exported without WOP_RECEIPT_KEYS) do not.
    unpinned = _run([*CLI, "verify", str(bundle)])
    assert unpinned.returncode == 1 and "unknown-key" in unpinned.stdout


def test_verify_refuses_unusable_input(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    assert _run([*CLI, "verify", str(tmp_path / "bad.json")]).returncode == 2
    (tmp_path / "keys.json").write_text(json.dumps({"keys": [{"kty": "RSA"}]}))
    (tmp_path / "b.json").write_text("{}")
    refused = _run([*CLI, "verify", str(tmp_path / "b.json"), "--keys", str(tmp_path / "keys.json")])
    assert refused.returncode == 2 and "Ed25519" in refused.stderr
    not_a_bundle = _run([*CLI, "verify", str(tmp_path / "b.json")])
    assert not_a_bundle.returncode == 1 and "malformed" in not_a_bundle.stdout


def test_keygen_prints_an_entry_the_host_accepts() -> None:
    made = _run([*CLI, "keygen", "k9"])
    assert made.returncode == 0
    assert ReceiptKeys.parse(made.stdout.strip()).signing_kid == "k9"
    assert "pub:" in made.stderr

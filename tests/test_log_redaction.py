"""No signed token reaches a log: the access log and every record of a served process show only
a fingerprint of each review link's token."""

from __future__ import annotations

import logging
import tempfile

import httpx
import pytest

from tests.server.conftest import ALICE
from tests.server.process import rested, served
from wop_langgraph.log_redaction import RedactTokens, fingerprint, redact
from wop_langgraph.protocol.ids import project_id

TOKEN = "ow2.hs256.k1.eyJydW5JZCI6ImFjbWUvcnVuIn0.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


def test_tokens_and_token_paths_become_fingerprints() -> None:
    mark = fingerprint(TOKEN)
    assert mark.startswith("ow2:...#") and len(mark) == len("ow2:...#") + 8
    line = f'127.0.0.1:5 - "GET /interrupts/{TOKEN}/form HTTP/1.1" 200'
    assert redact(line) == f'127.0.0.1:5 - "GET /interrupts/{mark}/form HTTP/1.1" 200'
    assert redact(f"see https://wop.example:8443/interrupts/{TOKEN}?x=1") == (
        f"see https://wop.example:8443/interrupts/{mark}?x=1"
    )
    assert redact(f"callback carried token={TOKEN}.") == f"callback carried token={mark}."
    # A mangled token on the token surface is still hidden; by-run paths keep their node id.
    assert TOKEN[4:40] not in redact(f"/interrupts/x{TOKEN[4:40]}")
    assert (
        redact("POST /runs/acme~2Fr1/interrupts/review HTTP/1.1")
        == "POST /runs/acme~2Fr1/interrupts/review HTTP/1.1"
    )


def test_redacting_twice_keeps_the_one_fingerprint() -> None:
    """A record may be redacted by the process's record factory and again by a handler's filter."""
    for text in (f"GET /interrupts/{TOKEN} HTTP/1.1", f"token={TOKEN}", f"/interrupts/x{TOKEN[4:40]}"):
        once = redact(text)
        assert redact(once) == once


def test_the_filter_redacts_arguments_and_keeps_their_shape(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tests.redaction")
    caplog.handler.addFilter(RedactTokens())
    with caplog.at_level(logging.INFO, logger="tests.redaction"):
        logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", f"/interrupts/{TOKEN}", "1.1", 200)
    (record,) = caplog.records
    assert isinstance(record.args, tuple) and len(record.args) == 5
    assert TOKEN not in caplog.text and fingerprint(TOKEN) in caplog.text


def test_a_served_process_logs_no_token(db_url: str) -> None:
    """The real server, at log level info: a review page, an inspect, a resolve by token. Its
    captured stdout and stderr hold each token's fingerprint and no part of any token."""
    with tempfile.TemporaryFile() as output:
        with (
            served(
                db_url,
                extra_args=["--log-level", "info"],
                extra_env={"PYTHONUNBUFFERED": "1"},
                output=output,
            ) as base,
            httpx.Client(base_url=base, headers=ALICE, timeout=30) as client,
        ):
            created = client.post("/runs", json={"workflowId": "approve"})
            assert created.status_code == 201, created.text
            run_id = str(created.json()["runId"])
            assert rested(client, run_id)["status"] == "waiting-approval"
            tokens_url = f"/runs/{project_id(run_id)}/interrupts/review/tokens"
            inspect = client.post(tokens_url, json={"intent": "inspect"}).json()["token"]
            resolve = client.post(tokens_url, json={}).json()["token"]
            assert client.get(f"/interrupts/{inspect}", headers={"Accept": "text/html"}).status_code == 200
            assert client.get(f"/interrupts/{resolve}").status_code == 200
            decided = client.post(f"/interrupts/{resolve}", json={"resumeValue": {"action": "accept"}})
            assert decided.status_code == 200, decided.text
            assert rested(client, run_id)["status"] == "completed"
            refused = client.post(f"/interrupts/{resolve}", json={"resumeValue": {"action": "accept"}})
            assert refused.status_code == 409
        output.seek(0)
        log = output.read().decode("utf-8")
    assert "GET /interrupts/" in log  # the access log was on
    for token in (inspect, resolve):
        assert fingerprint(token) in log
        *_, payload, mac = token.split(".")
        for part in (token, payload, mac, payload[:16], mac[:16]):
            assert part not in log, f"{part!r} reached the log"

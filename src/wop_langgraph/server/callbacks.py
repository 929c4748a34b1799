"""Callback delivery: when a run with a ``callbackUrl`` suspends, POST the interrupt and a token to it.

Delivery runs on a background thread, never on the request path. Each pending interrupt is
claimed once in the store's ``wop_server_callbacks`` table (insert-or-nothing,
:mod:`wop_langgraph.store.callbacks`), so with
several replicas over one database exactly one of them delivers it. The request is

    POST <callbackUrl>
    Content-Type: application/json
    OpenWOP-Timestamp: <unix seconds>
    OpenWOP-Signature: sha256=<hex HMAC-SHA256 over "{timestamp}.{rawBody}">
    {"runId", "nodeId", "interrupt": <InterruptPayload>, "token", "intent", "url"?}

signed with the secret of the first (signing) kid. ``token`` resolves the interrupt
(``intent: resolve``), except for a gate that counts votes, where it only inspects it (``intent:
inspect``): a vote needs a link minted for its approver. ``url`` is present only when
``WOP_PUBLIC_URL`` is configured.

The host name is resolved once, every address is re-checked by the egress guard, the connection
goes to the checked address without resolving again (TLS still verifies the certificate against
the host name), redirects are never followed, and failures are retried a bounded number of times
with exponential backoff.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import queue
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from wop_langgraph.host import WopHost
from wop_langgraph.host.eligibility import bearer_only, counts_votes
from wop_langgraph.protocol.egress import AllowList, IPAddress, check_resolved_addresses
from wop_langgraph.protocol.errors import WopError
from wop_langgraph.server.interrupt_lookup import mint_for
from wop_langgraph.store.callbacks import (
    callback_url_of,
    claim_callback,
    record_callback,
    runs_awaiting_callbacks,
)
from wop_langgraph.store.engine import reading
from wop_langgraph.store.interrupts import InterruptRecord
from wop_langgraph.tokens import Intent, SigningKeys

__all__ = ["CallbackDelivery", "DeliveryPolicy", "attach_callbacks", "sign"]

if TYPE_CHECKING:
    from wop_langgraph.server.settings import Settings

_log = logging.getLogger("wop_langgraph.server.callbacks")
_STOP = object()
_MAX_NOTED = 4096


def attach_callbacks(host: WopHost, settings: Settings) -> CallbackDelivery:
    """Callback delivery for the runs ``host`` drives, configured by ``settings``, not started.

    Whichever process drives a run sees it suspend, so it delivers the callback: ``serve`` (its
    workers) and ``wop-langgraph worker`` processes alike attach one (the delivery table's
    claim keeps it to one delivery across them).

    Raises:
        ConfigurationError: missing or malformed signing keys (they sign callbacks and tokens).
    """
    from wop_langgraph.server.settings import first_signing_secret

    policy = DeliveryPolicy(
        signing_secret=first_signing_secret(settings),
        public_base=(settings.public_url or "").rstrip("/"),
        attempts=settings.callback_attempts,
        backoff_seconds=settings.callback_backoff_seconds,
        timeout_seconds=settings.callback_timeout_seconds,
        allow=settings.callback_allow,
    )
    delivery = CallbackDelivery(
        host, settings.keyring(), policy, timedelta(seconds=settings.token_ttl_seconds)
    )
    host.on_interrupt_requested(delivery.raised)
    host.on_run_rested(delivery.rested)
    host.on_run_ended(delivery.ended)
    return delivery


def sign(secret: bytes, timestamp: int, raw_body: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256 over ``"{timestamp}.{rawBody}"``."""
    mac = hmac.new(secret, f"{timestamp}.".encode() + raw_body, hashlib.sha256).hexdigest()
    return f"sha256={mac}"


@dataclass(frozen=True)
class DeliveryPolicy:
    """How callbacks are sent."""

    signing_secret: bytes
    public_base: str = ""
    attempts: int = 5
    backoff_seconds: float = 0.5
    timeout_seconds: float = 10.0
    allow: AllowList | None = None


class CallbackDelivery:
    """A background worker that delivers suspended interrupts to their run's ``callbackUrl``."""

    def __init__(
        self, host: WopHost, keys: SigningKeys, policy: DeliveryPolicy, token_ttl: timedelta
    ) -> None:
        self._host = host
        self._keys = keys
        self._policy = policy
        self._ttl = token_ttl
        self._queue: queue.Queue[object] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        #: Runs that raised an interrupt in a drive not yet rested (noted in the recording
        #: transaction, queued once the drive ends: after the commit, so the read sees it).
        self._raised: set[str] = set()
        self._raised_lock = threading.Lock()
        #: Runs created in this process without a ``callbackUrl`` (which never changes once a
        #: run exists): their interrupts have nowhere to go, and nothing is read to learn it.
        self._urlless: set[str] = set()

    def start(self) -> None:
        """Start the worker thread."""
        self._stopping.clear()
        self._thread = threading.Thread(target=self._work, name="wop-callbacks", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current delivery (retries waiting on backoff are abandoned)."""
        self._stopping.set()
        self._queue.put(_STOP)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def notify(self, run_id: str) -> None:
        """A run may have suspended: look at it soon."""
        self._queue.put(run_id)

    def created_without_url(self, run_id: str) -> None:
        """``run_id`` is being created here without a ``callbackUrl``: its interrupts are not
        looked at (the periodic scan would still find one, reading the run's row as ever).
        Forgotten when the run ends (:meth:`ended`), or when too many are noted."""
        with self._raised_lock:
            if len(self._urlless) >= _MAX_NOTED:
                self._urlless.clear()  # a forgotten run is looked at as any other: a read
            self._urlless.add(run_id)

    def ended(self, run_id: str, _status: str) -> None:
        """A run ended (the host's ``on_run_ended``): it suspends no more."""
        with self._raised_lock:
            self._urlless.discard(run_id)

    def raised(self, _conn: object, record: InterruptRecord) -> None:
        """An interrupt is being recorded (the host's ``on_interrupt_requested``): look at its run
        when the drive rests, unless it was created here without a ``callbackUrl``. No
        statement here, none on drives that raise nothing."""
        with self._raised_lock:
            if record.run_id in self._urlless:
                return
            if len(self._raised) >= _MAX_NOTED:
                # Interrupts recorded outside a drive (a fork's gate) leave their run here: the
                # periodic scan delivers those, so forgetting them costs a delay at most.
                self._raised.clear()
            self._raised.add(record.run_id)

    def rested(self, run_id: str) -> None:
        """A drive of ``run_id`` ended (the host's ``on_run_rested``): queue it if it raised an interrupt."""
        with self._raised_lock:
            if run_id not in self._raised:
                return
            self._raised.discard(run_id)
        self.notify(run_id)

    def scan(self) -> None:
        """Queue every run with an undelivered pending interrupt and a callback (other replicas' too)."""
        with reading(self._host.engine) as conn:
            run_ids = runs_awaiting_callbacks(conn)
        for run_id in run_ids:
            self.notify(run_id)

    def deliver_run(self, run_id: str) -> int:
        """Deliver the run's pending interrupts not yet claimed by anyone; returns how many were sent."""
        with reading(self._host.engine) as conn:
            url = callback_url_of(conn, run_id)
        if not url:
            return 0
        sent = 0
        for record in self._host.pending_interrupts(run_id):
            if self._claim(record) and self._deliver(url, record):
                sent += 1
        return sent

    # -- internals ------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP or self._stopping.is_set():
                return
            try:
                self.deliver_run(str(item))
            except Exception:
                _log.exception("callback delivery for a run failed")

    def _claim(self, record: InterruptRecord) -> bool:
        with self._host.engine.begin() as conn:
            return claim_callback(conn, record.interrupt_id, record.run_id, now=self._host.clock())

    def _deliver(self, url: str, record: InterruptRecord) -> bool:
        policy = self._policy
        # A gate that counts votes gets no anonymous vote: its callback carries an inspect token,
        # and each approver's link is minted for them (POST .../tokens with "approver").
        # An auth-required gate is decided by a bearer only: its callback can merely show it.
        bearer = bearer_only(record.profiles)
        intent: Intent = (
            "inspect" if counts_votes(record.payload, self._host.ref_kinds) or bearer else "resolve"
        )
        try:
            minted = mint_for(self._keys, record, intent=intent, now=self._host.clock(), ttl=self._ttl)
        except WopError as exc:
            self._record(record, "failed", 0, None, exc.message)
            return False
        body = {
            "runId": record.run_id,
            "nodeId": record.node_id,
            "interrupt": record.payload,
            "token": minted.token,
            "intent": intent,
        }
        if policy.public_base:  # links only on the configured origin, never a guessed one
            body["url"] = f"{policy.public_base}/interrupts/{minted.token}"
        raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        for attempt in range(1, policy.attempts + 1):
            status, error = self._post_once(url, raw)
            if status is not None and 200 <= status < 300:
                self._record(record, "delivered", attempt, status, None)
                return True
            permanent = status is not None and 300 <= status < 500 and status not in (408, 425, 429)
            if permanent or error == "refused" or attempt == policy.attempts:
                self._record(record, "failed", attempt, status, error or f"HTTP {status}")
                return False
            if self._stopping.wait(policy.backoff_seconds * 2 ** (attempt - 1)):
                self._record(record, "failed", attempt, status, "server stopping")
                return False
        return False  # pragma: no cover - the loop always returns

    def _post_once(self, url: str, raw: bytes) -> tuple[int | None, str | None]:
        """One POST to a re-validated address; ``(status, None)`` or ``(None, reason)``."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            addresses = check_resolved_addresses(
                host, [str(info[4][0]) for info in infos], port=port, allow=self._policy.allow
            )
        except WopError as exc:
            _log.warning("callback address refused by the egress guard: %s", exc.details)
            return None, "refused"
        except OSError as exc:
            return None, f"dns: {exc}"
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "wop-langgraph-callbacks",
            "OpenWOP-Timestamp": str(timestamp),
            "OpenWOP-Signature": sign(self._policy.signing_secret, timestamp, raw),
            "OpenWOP-Signature-Algorithm": "v1",
        }
        connection = _pinned_connection(parts.scheme, host, port, addresses[0], self._policy.timeout_seconds)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            connection.request("POST", path, body=raw, headers=headers)
            response = connection.getresponse()
            response.read()
            return response.status, None
        except (OSError, http.client.HTTPException) as exc:
            return None, f"{type(exc).__name__}: {exc}"
        finally:
            connection.close()

    def _record(
        self, record: InterruptRecord, state: str, attempts: int, status: int | None, error: str | None
    ) -> None:
        with self._host.engine.begin() as conn:
            record_callback(
                conn,
                record.interrupt_id,
                state,
                attempts=attempts,
                status=status,
                error=error,
                now=self._host.clock(),
            )


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """HTTP to a fixed, already validated address; ``Host`` still names the URL's host."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((str(self._address), self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a fixed address; the certificate is verified against the URL's host name."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((str(self._address), self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


def _pinned_connection(
    scheme: str, host: str, port: int, address: IPAddress, timeout: float
) -> http.client.HTTPConnection:
    if scheme == "https":
        return _PinnedHTTPSConnection(host, port, address, timeout)
    return _PinnedHTTPConnection(host, port, address, timeout)

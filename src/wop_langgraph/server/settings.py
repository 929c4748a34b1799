"""Server settings, read from ``WOP_*`` environment variables (pydantic-settings).

Nothing is read at import time: :class:`Settings` is instantiated by the caller (the CLI, a test,
an ASGI factory). Signing keys and API keys are parsed on demand, so a bad value fails at start-up
with a message that names the entry but never a secret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from wop_langgraph.host import Principal
from wop_langgraph.proof.keys import ReceiptKeys
from wop_langgraph.protocol.egress import AllowList
from wop_langgraph.protocol.storable import STORABLE_MAX_DEPTH
from wop_langgraph.server.limits import RequestLimits
from wop_langgraph.tokens import SigningKeys

__all__ = ["ApiKeys", "ConfigurationError", "Settings"]

_SCOPE = re.compile(r"[a-z][a-z0-9_-]*:[a-z][a-z0-9_-]*")
_TENANT = re.compile(r"(anon:)?[A-Za-z0-9._~-]{1,128}")
_SUBJECT = re.compile(r"[^\s/:;=]{1,256}")


class ConfigurationError(ValueError):
    """A setting is missing or malformed; the message says which and how to fix it."""


class Settings(BaseSettings):
    """The server's configuration (environment prefix ``WOP_``).

    Attributes:
        database_url: the store (``sqlite:///wop.db`` or ``postgresql://...``).
        signing_keys: ``kid=secret,...``; the first signs interrupt tokens and callbacks.
        receipt_keys: ``kid=<Ed25519 seed>,kid2=pub:<public key>,...``; the first signs
            decision receipts and checkpoints, every one verifies (unset: none are signed;
            the event log is hash-chained all the same).
        receipt_keys_revoked: comma-separated kids whose receipts are reported as revoked.
        receipt_checkpoint_seconds: a run waiting for a person gets a fresh signed checkpoint
            of its log whenever its newest one is this old (with ``receipt_keys``).
        api_keys: ``key=tenant:subject:scope+scope`` entries separated by ``;``
            (``approvals:delegate``: the key may vote for the voter a resume value names).
        public_url: the origin links are built on (token URLs, callbacks), e.g.
            ``https://wop.example.com``; without it the server mints no links (a request's
            ``Host`` header is never trusted for that).
        token_ttl_seconds: default lifetime of a minted token (capped by the interrupt's deadline).
        sweep_interval_seconds: how often the timeout sweep runs (0 disables it).
        workers: in-process worker threads that drive runs (0: this process only serves the
            API; run ``wop-langgraph worker`` processes against the same database).
        worker_defer_seconds: how long an in-process worker about to take a run, or to go on
            to a sync graph's next step, waits at most for the requests that change something
            (resolves, creations, cancels) being answered to finish first (0: it does not wait).
        lease_seconds: how long a worker's lease on a run lasts without renewal.
        callback_attempts / callback_backoff_seconds / callback_timeout_seconds: callback delivery.
        notify_*: email/chat notifications of interrupts (see :mod:`wop_langgraph.server.notifying`).
        max_body_bytes: the largest request body accepted (``413 payload_too_large`` above).
        max_json_depth: the deepest nesting of a JSON request body (``400`` above).
        max_string_chars: the longest string or object key in a JSON request body.
        max_id_chars: the longest id in a path (``runId``, ``nodeId``).
        events_page_size: the most events one poll answers or one SSE read fetches.
        review_event_form: whether the reviewer page of an ``external-event`` gate offers a form
            to deliver the event by hand (off: the event comes from a system; the page only
            says what is awaited).
        langgraph_prefix / langgraph_cors_origins: the LangGraph Server API's mount point
            (empty: off) and the browser origins allowed to call it.
        langgraph_wait_drives: how many LangGraph ``runs/wait`` requests may drive their run to
            rest themselves at once, on threads of their own (not the request threads); beyond
            that, and when ``workers`` is 0, the run is left to the workers.
        request_threads: threads that run blocking request handlers (default: the size of
            the database connection pool, so that a burst queues for a thread instead of
            opening connections it closes again).
    """

    model_config = SettingsConfigDict(env_prefix="WOP_", extra="ignore")

    database_url: str = "sqlite:///wop.db"
    signing_keys: SecretStr | None = None
    receipt_keys: SecretStr | None = None
    receipt_keys_revoked: str = ""
    receipt_checkpoint_seconds: float = Field(default=3600.0, gt=0)
    api_keys: SecretStr | None = None
    public_url: str | None = None
    token_ttl_seconds: int = Field(default=1800, ge=1)
    sweep_interval_seconds: float = Field(default=5.0, ge=0)
    workers: int = Field(default=4, ge=0)
    worker_defer_seconds: float = Field(default=0.25, ge=0, le=60)
    max_streams_per_key: int = Field(default=100, ge=1)
    max_streams_total: int = Field(default=2000, ge=1)
    lease_seconds: float = Field(default=15.0, gt=0)
    callback_attempts: int = Field(default=5, ge=1)
    callback_backoff_seconds: float = Field(default=0.5, ge=0)
    callback_timeout_seconds: float = Field(default=10.0, gt=0)
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_json_depth: int = Field(default=64, ge=2, le=STORABLE_MAX_DEPTH)
    max_string_chars: int = Field(default=256 * 1024, ge=256)
    max_id_chars: int = Field(default=512, ge=64, le=4096)
    events_page_size: int = Field(default=1000, ge=1, le=100_000)
    request_threads: int | None = Field(default=None, ge=1)
    review_event_form: bool = False
    langgraph_prefix: str = "/langgraph"
    """Where the LangGraph Server API is mounted (empty or ``off``: not served)."""
    langgraph_cors_origins: str | None = None
    """Comma-separated browser origins allowed to call the LangGraph API (e.g. agent-chat-ui's)."""
    langgraph_wait_drives: int = Field(default=16, ge=0)
    callback_allow: AllowList | None = Field(default=None, exclude=True)
    """Test-only egress allowance for a loopback receiver; never set from the environment."""
    # Notifications (wop_langgraph.notify; off unless a directory is given). See docs/server.md.
    notify_directory: str | None = None
    """JSON file (or inline JSON object) of subject -> {"email": ..., "apprise": [...]}."""
    notify_smtp_host: str | None = None
    notify_smtp_port: int = Field(default=25, ge=1, le=65535)
    notify_smtp_sender: str = "wop-langgraph@localhost"
    notify_smtp_username: str | None = None
    notify_smtp_password: SecretStr | None = None
    notify_smtp_starttls: bool = False
    notify_smtp_ssl: bool = False
    notify_default_recipients: str | None = None
    """Comma-separated subjects told when a gate names nobody (every workflow)."""
    notify_escalation_to: str | None = None
    """Comma-separated subjects told when an ``onTimeout: escalate`` gate reaches its deadline."""
    notify_reminders: str | None = None
    """Comma-separated fractions of ``timeoutMs`` at which to remind, e.g. ``0.5,0.9``."""
    notify_attempts: int = Field(default=5, ge=1)
    notify_backoff_seconds: float = Field(default=30.0, ge=0)
    notify_poll_seconds: float = Field(default=1.0, gt=0)
    notify_templates: str | None = None
    """Folder with subject.txt, body.txt and/or body.html overriding the default templates."""
    notify_channels: str | None = None
    """Comma-separated ``MODULE:ATTR`` of channels of your own (an object, or a class or function
    making one), asked in order before email and Apprise."""

    def request_limits(self) -> RequestLimits:
        """The body limits :class:`~wop_langgraph.server.limits.RequestLimitsMiddleware` enforces."""
        return RequestLimits(
            max_body_bytes=self.max_body_bytes,
            max_json_depth=self.max_json_depth,
            max_string_chars=self.max_string_chars,
        )

    @field_validator("langgraph_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        """``/segment[/segment...]`` without a trailing slash; empty or ``off`` turns the API off."""
        text = value.strip()
        if text in ("", "off"):
            return ""
        if not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", text):
            raise ValueError("WOP_LANGGRAPH_PREFIX must look like /langgraph (or be empty or 'off')")
        return text

    @field_validator("public_url")
    @classmethod
    def _origin(cls, value: str | None) -> str | None:
        """An absolute ``http(s)`` URL without query or fragment (an empty value means unset)."""
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError("WOP_PUBLIC_URL must be an absolute http(s) URL such as https://wop.example.com")
        return value.strip().rstrip("/")

    def keyring(self) -> SigningKeys:
        """The parsed signing keys.

        Raises:
            ConfigurationError: unset or malformed ``WOP_SIGNING_KEYS``.
        """
        if self.signing_keys is None or not self.signing_keys.get_secret_value().strip():
            raise ConfigurationError(
                "WOP_SIGNING_KEYS is not set: give at least one kid=secret (secret >= 16 bytes), "
                "e.g. WOP_SIGNING_KEYS=k1=$(openssl rand -hex 32)"
            )
        try:
            return SigningKeys.parse(self.signing_keys.get_secret_value())
        except ValueError as exc:
            raise ConfigurationError(f"WOP_SIGNING_KEYS: {exc}") from None

    def receipt_keyring(self) -> ReceiptKeys | None:
        """The parsed receipt keys (``None`` when ``WOP_RECEIPT_KEYS`` is unset).

        Raises:
            ConfigurationError: malformed ``WOP_RECEIPT_KEYS``.
        """
        return _receipt_keyring(self)

    def api_keyring(self) -> ApiKeys:
        """The parsed API keys (empty when ``WOP_API_KEYS`` is unset: every call is then 401).

        Raises:
            ConfigurationError: a malformed entry.
        """
        text = self.api_keys.get_secret_value() if self.api_keys is not None else ""
        return ApiKeys.parse(text)


@dataclass(frozen=True)
class ApiKeys:
    """API key -> the principal it authenticates."""

    principals: dict[str, Principal]

    @classmethod
    def parse(cls, text: str) -> ApiKeys:
        """Read ``key=tenant:subject:scope+scope;key2=...`` (entries never echo the key).

        Raises:
            ConfigurationError: an entry without ``=``, a bad tenant, subject or scope, or a
                duplicate key.
        """
        principals: dict[str, Principal] = {}
        for position, entry in enumerate(text.split(";"), start=1):
            if not entry.strip():
                continue
            key, sep, grant = entry.strip().partition("=")
            key = key.strip()
            if not sep or not key:
                raise ConfigurationError(f"WOP_API_KEYS: entry {position} is not key=tenant:subject:scopes")
            # Scopes contain ':' themselves (runs:create): split tenant and subject off the front.
            tenant, subject, scopes = _split_grant(grant.strip(), position)
            if not _TENANT.fullmatch(tenant):
                raise ConfigurationError(f"WOP_API_KEYS: entry {position} has an invalid tenant {tenant!r}")
            if not _SUBJECT.fullmatch(subject):
                raise ConfigurationError(f"WOP_API_KEYS: entry {position} has an invalid subject {subject!r}")
            if key in principals:
                raise ConfigurationError(f"WOP_API_KEYS: entry {position} repeats an earlier key")
            principals[key] = Principal(tenant=tenant, subject_id=subject, scopes=scopes)
        return cls(principals)

    def lookup(self, key: str) -> Principal | None:
        """The principal of ``key``, or ``None``."""
        return self.principals.get(key)


def _split_grant(grant: str, position: int) -> tuple[str, str, frozenset[str]]:
    """Split ``tenant:subject:scope+scope`` where the scopes themselves contain ``:``."""
    tenant_prefix = ""
    if grant.startswith("anon:"):
        tenant_prefix, grant = "anon:", grant[len("anon:") :]
    tenant, _, rest = grant.partition(":")
    subject, _, scope_text = rest.partition(":")
    scopes = frozenset(s.strip() for s in scope_text.split("+") if s.strip())
    for scope in scopes:
        if not _SCOPE.fullmatch(scope):
            raise ConfigurationError(f"WOP_API_KEYS: entry {position} has an invalid scope {scope!r}")
    return tenant_prefix + tenant, subject, scopes


def _receipt_keyring(settings: Settings) -> ReceiptKeys | None:
    if settings.receipt_keys is None or not settings.receipt_keys.get_secret_value().strip():
        return None
    try:
        return ReceiptKeys.parse(
            settings.receipt_keys.get_secret_value(), revoked=settings.receipt_keys_revoked
        )
    except ValueError as exc:
        raise ConfigurationError(f"WOP_RECEIPT_KEYS: {exc}") from None


def first_signing_secret(settings: Settings) -> bytes:
    """The secret of the signing (first) kid, which also signs callbacks.

    Raises:
        ConfigurationError: unset or malformed ``WOP_SIGNING_KEYS``.
    """
    settings.keyring()  # validates the whole list first
    assert settings.signing_keys is not None
    first = settings.signing_keys.get_secret_value().split(",")[0]
    return first.partition("=")[2].strip().encode()

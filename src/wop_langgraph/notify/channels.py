"""The built-in channels: email over SMTP (stdlib) and chat/push through Apprise URLs.

Both follow the :class:`~wop_langgraph.notify.channel.Channel` protocol: a send either returns
or raises :class:`SendError`, whose ``permanent`` flag says whether a retry could help.
:class:`EmailChannel` takes ``mailto:`` addresses; :class:`AppriseChannel` takes any
``scheme://`` URL, so it comes last (:func:`builtin_channels`).

Generic webhook URLs (Apprise's ``json://``, ``xml://``, ``form://`` and their ``s`` variants)
go to an address the operator's directory names: their host is resolved and every address
passes the egress guard that callbacks pass (a loopback receiver only with a test-only
:class:`~wop_langgraph.protocol.egress.AllowList`). Named services (Slack, Teams, ntfy, ...)
are sent to the service's own endpoint by Apprise. Redirects are never followed. The guard
checks the addresses once; Apprise resolves the name again when it connects (unlike
callbacks, which connect to the checked address).
"""

from __future__ import annotations

import re
import smtplib
import socket
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import urlsplit

from wop_langgraph.notify.channel import Channel, SendError, port_of, redact
from wop_langgraph.notify.message import Message
from wop_langgraph.protocol.egress import AllowList, check_resolved_addresses
from wop_langgraph.protocol.errors import WopError

__all__ = ["AppriseChannel", "EmailChannel", "SendError", "SmtpSettings", "builtin_channels", "redact"]

#: Apprise schemes that post to an arbitrary host -> whether they use TLS.
_WEBHOOK_SCHEMES = {"json": False, "jsons": True, "xml": False, "xmls": True, "form": False, "forms": True}


#: ``scheme://``: the shape of every Apprise URL.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class SmtpSettings:
    """Where mail goes: an SMTP server (``starttls`` or implicit ``ssl``), sender and login."""

    host: str
    port: int = 25
    sender: str = "wop-langgraph@localhost"
    username: str | None = None
    password: str | None = None
    starttls: bool = False
    ssl: bool = False
    timeout: float = 30.0


class EmailChannel:
    """Sends HTML email with a plain-text part through one SMTP server (``mailto:`` addresses)."""

    name = "email"

    def __init__(self, settings: SmtpSettings) -> None:
        self.settings = settings

    def accepts(self, address: str) -> bool:
        """``mailto:`` addresses."""
        return address.startswith("mailto:")

    def send(self, address: str, message: Message) -> None:
        """Send ``message`` to ``address`` (``mailto:alice@example.com`` or the bare address).

        Raises:
            SendError: the server refused the recipient (permanent) or could not be reached.
        """
        to = address.removeprefix("mailto:")
        mail = EmailMessage()
        mail["Subject"] = message.subject
        mail["From"] = self.settings.sender
        mail["To"] = to
        mail["Message-ID"] = make_msgid(domain=self.settings.sender.rpartition("@")[2] or None)
        mail.set_content(message.text)
        mail.add_alternative(message.html, subtype="html")
        s = self.settings
        try:
            client: smtplib.SMTP
            if s.ssl:
                client = smtplib.SMTP_SSL(
                    s.host, s.port, timeout=s.timeout, context=ssl.create_default_context()
                )
            else:
                client = smtplib.SMTP(s.host, s.port, timeout=s.timeout)
            with client:
                if s.starttls and not s.ssl:
                    client.starttls(context=ssl.create_default_context())
                if s.username:
                    client.login(s.username, s.password or "")
                client.send_message(mail)
        except smtplib.SMTPRecipientsRefused as exc:
            raise SendError(f"SMTP refused the recipient: {_smtp_reason(exc)}", permanent=True) from None
        except smtplib.SMTPResponseException as exc:
            permanent = 500 <= exc.smtp_code < 600
            raise SendError(f"SMTP {exc.smtp_code}: {_text(exc.smtp_error)}", permanent=permanent) from None
        except (OSError, smtplib.SMTPException) as exc:
            raise SendError(f"SMTP {s.host}:{s.port}: {type(exc).__name__}: {exc}") from None


def _smtp_reason(exc: smtplib.SMTPRecipientsRefused) -> str:
    return "; ".join(f"{code} {_text(text)}" for code, text in exc.recipients.values())


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class AppriseChannel:
    """Sends through an Apprise URL (one URL per send), after the egress guard for webhooks."""

    name = "apprise"

    def __init__(self, *, allow: AllowList | None = None, timeout: float = 10.0) -> None:
        self.allow = allow
        self.timeout = timeout

    def accepts(self, address: str) -> bool:
        """Any ``scheme://`` URL (one Apprise does not know fails permanently at send)."""
        return _URL.match(address) is not None

    def check(self, url: str) -> None:
        """Refuse a webhook URL whose host resolves to an address callbacks may not reach.

        Raises:
            SendError: permanent when the guard refuses; transient when DNS fails.
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _WEBHOOK_SCHEMES:
            return
        host = parts.hostname or ""
        secure = _WEBHOOK_SCHEMES[scheme]
        port = port_of(parts) or (443 if secure else 80)
        if not secure and (self.allow is None or port not in self.allow.loopback_http_ports):
            # Callbacks must be https; so must webhooks (jsons://, xmls://, forms://).
            raise SendError("refused by the egress guard (not_https: use the TLS scheme)", permanent=True)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise SendError(f"dns: {exc}") from None
        try:
            check_resolved_addresses(host, [str(i[4][0]) for i in infos], port=port, allow=self.allow)
        except WopError as exc:
            reason = (exc.details or {}).get("reason", "refused")
            raise SendError(f"refused by the egress guard ({reason})", permanent=True) from None

    def send(self, url: str, message: Message) -> None:
        """Send ``message`` (subject as title, plain text as body) to ``url``.

        Raises:
            SendError: an unusable URL or a refused address (permanent), or a failed send.
        """
        try:
            import apprise
        except ImportError:
            raise SendError(
                "Apprise URLs need the 'notify' extra: pip install 'wop-langgraph[notify]'", permanent=True
            ) from None
        self.check(url)
        # Like callbacks, never follow a redirect: it could lead past the egress guard.
        sender = apprise.Apprise(asset=apprise.AppriseAsset(http_redirects=False))
        if not sender.add(url):
            raise SendError("Apprise does not understand this URL", permanent=True)
        for plugin in sender:
            if hasattr(plugin, "redirects"):
                plugin.redirects = False  # also when the URL itself asks for redirect=yes
        with apprise.LogCapture(level=apprise.logging.WARNING) as log:  # type: ignore[no-untyped-call]
            ok = sender.notify(body=message.text, title=message.subject)
            captured = log.getvalue() if hasattr(log, "getvalue") else ""
        if not ok:
            detail = " ".join(str(captured).split())[-300:] or "no detail"
            raise SendError(f"Apprise could not deliver: {detail}")


class _NoSmtp:
    """Takes ``mailto:`` addresses when no SMTP server is configured, to say so in the dead letter."""

    name = "email"

    def accepts(self, address: str) -> bool:
        return address.startswith("mailto:")

    def send(self, address: str, message: Message) -> None:
        raise SendError("no SMTP server is configured for email", permanent=True)


def builtin_channels(email: EmailChannel | None, apprise: AppriseChannel) -> list[Channel]:
    """Email (or, without SMTP, a channel that dead-letters ``mailto:`` with the reason), then Apprise."""
    return [email if email is not None else _NoSmtp(), apprise]

"""The server's notifier, built from ``WOP_NOTIFY_*`` settings, and the lifespan that runs it.

Notifications are on when ``WOP_NOTIFY_DIRECTORY`` is set. Email needs ``WOP_NOTIFY_SMTP_HOST``;
personal links need ``WOP_PUBLIC_URL`` (without it messages carry no link); channels of your own
are named by ``WOP_NOTIFY_CHANNELS`` (``MODULE:ATTR``, comma-separated).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from wop_langgraph.notify.channel import Channel
from wop_langgraph.notify.channels import EmailChannel, SmtpSettings
from wop_langgraph.notify.directory import Directory
from wop_langgraph.notify.links import LinkSigner
from wop_langgraph.notify.notifier import Notifier
from wop_langgraph.notify.policy import NotifyPolicy
from wop_langgraph.notify.templates import Templates
from wop_langgraph.startup import StartupError, import_target
from wop_langgraph.tokens import SigningKeys

if TYPE_CHECKING:
    from wop_langgraph.server.settings import Settings

__all__ = ["notifier_from_settings", "with_notifier"]


def _names(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def notifier_from_settings(settings: Settings, keys: SigningKeys | None = None) -> Notifier | None:
    """The configured notifier, or ``None`` when ``WOP_NOTIFY_DIRECTORY`` is unset.

    Links are signed with ``keys`` (default: ``WOP_SIGNING_KEYS``) on ``WOP_PUBLIC_URL``.

    Raises:
        ConfigurationError: an unreadable directory or templates folder, bad reminders, a
            channel that cannot be imported or is not a channel, or a public URL without
            signing keys.
    """
    from wop_langgraph.server.settings import ConfigurationError

    if not settings.notify_directory:
        return None
    try:
        directory = Directory.load(settings.notify_directory)
        templates = Templates.from_dir(settings.notify_templates) if settings.notify_templates else None
        policy = NotifyPolicy(
            default_recipients={"*": _names(settings.notify_default_recipients)},
            escalation_to={"*": _names(settings.notify_escalation_to)},
            reminders=tuple(float(f) for f in _names(settings.notify_reminders)),
            attempts=settings.notify_attempts,
            backoff=timedelta(seconds=settings.notify_backoff_seconds),
        )
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"WOP_NOTIFY_*: {exc}") from None
    channels = _channels(settings.notify_channels)
    email = None
    if settings.notify_smtp_host:
        password = settings.notify_smtp_password
        email = EmailChannel(
            SmtpSettings(
                host=settings.notify_smtp_host,
                port=settings.notify_smtp_port,
                sender=settings.notify_smtp_sender,
                username=settings.notify_smtp_username,
                password=password.get_secret_value() if password is not None else None,
                starttls=settings.notify_smtp_starttls,
                ssl=settings.notify_smtp_ssl,
            )
        )
    links = None
    if settings.public_url:
        links = LinkSigner(keys or settings.keyring(), settings.public_url)
    return Notifier(
        directory,
        policy=policy,
        email=email,
        links=links,
        templates=templates,
        allow=settings.callback_allow,
        channels=channels,
    )


def _channels(targets: str | None) -> list[Channel]:
    """The channels ``WOP_NOTIFY_CHANNELS`` names: each an object, or a class or function making one."""
    from wop_langgraph.server.settings import ConfigurationError

    made: list[Channel] = []
    for target in _names(targets):
        try:
            value = import_target(target, "WOP_NOTIFY_CHANNELS")
        except StartupError as exc:
            raise ConfigurationError(str(exc)) from None
        # A class passes the protocol's attribute check too: make the instance.
        if isinstance(value, type) or (callable(value) and not isinstance(value, Channel)):
            try:
                value = value()
            except Exception as exc:
                failed = f"{type(exc).__name__}: {exc}"
                raise ConfigurationError(f"WOP_NOTIFY_CHANNELS: {target}(): {failed}") from None
        if not isinstance(value, Channel):
            raise ConfigurationError(
                f"WOP_NOTIFY_CHANNELS: {target} is not a channel (name, accepts(address), send(address, msg))"
            )
        made.append(value)
    return made


def with_notifier(
    inner: Callable[[Any], AbstractAsyncContextManager[None]], notifier: Notifier | None, poll_seconds: float
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """``inner`` (the app's lifespan), with the notifier's delivery thread running inside it."""
    if notifier is None:
        return inner

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with inner(app):
            notifier.start(poll_seconds)
            try:
                yield
            finally:
                notifier.stop()

    return lifespan

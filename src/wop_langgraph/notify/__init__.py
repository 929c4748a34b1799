"""Reach the reviewers: email and chat notifications with personal links, through a durable outbox.

See :class:`Notifier` (and the section "Notifications" of docs/server.md). A new way to reach
people is one :class:`Channel` (``name``, ``accepts``, ``send``) passed as ``Notifier(channels=...)``.
"""

from wop_langgraph.notify.channel import Channel, Channels, SendError
from wop_langgraph.notify.channels import AppriseChannel, EmailChannel, SmtpSettings
from wop_langgraph.notify.directory import Contact, Directory
from wop_langgraph.notify.links import LinkSigner
from wop_langgraph.notify.message import Message
from wop_langgraph.notify.notifier import Notifier
from wop_langgraph.notify.policy import NotifyPolicy
from wop_langgraph.notify.templates import Templates
from wop_langgraph.store.outbox import Notification

__all__ = [
    "AppriseChannel",
    "Channel",
    "Channels",
    "Contact",
    "Directory",
    "EmailChannel",
    "LinkSigner",
    "Message",
    "Notification",
    "Notifier",
    "NotifyPolicy",
    "SendError",
    "SmtpSettings",
    "Templates",
]

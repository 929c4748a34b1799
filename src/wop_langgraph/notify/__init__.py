"""Reach the reviewers: email and chat notifications with personal links, through a durable outbox.

See :class:`Notifier` (and the section "Notifications" of docs/server.md).
"""

from wop_langgraph.notify.channels import AppriseChannel, EmailChannel, SendError, SmtpSettings
from wop_langgraph.notify.directory import Contact, Directory
from wop_langgraph.notify.links import LinkSigner
from wop_langgraph.notify.notifier import Notifier
from wop_langgraph.notify.policy import NotifyPolicy
from wop_langgraph.notify.templates import Templates
from wop_langgraph.store.outbox import Notification

__all__ = [
    "AppriseChannel",
    "Contact",
    "Directory",
    "EmailChannel",
    "LinkSigner",
    "Notification",
    "Notifier",
    "NotifyPolicy",
    "SendError",
    "SmtpSettings",
    "Templates",
]

"""Mail the site sends (confirmation links, academy/web/confirmation.py) through the operator's SMTP server.

Settings: DLA_SMTP_HOST, DLA_SMTP_PORT, DLA_SMTP_SECURITY (starttls | ssl | none), DLA_SMTP_USER,
DLA_SMTP_PASSWORD, DLA_MAIL_FROM (academy/settings.py). Without an SMTP host nothing is sent: the message is
written to the server's log instead, where the operator finds the link, and the caller says so on the page.
A server that cannot be reached, refuses the login or the recipient is logged (never shown: its reply may name
internal hosts) and reported to the caller as FAILED, so the page says the mail did not go.
"""
from __future__ import annotations

import logging
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import make_msgid
from enum import StrEnum

from flask import Flask

from academy.settings import settings

log = logging.getLogger("academy.mail")
TIMEOUT_S = 15  # a slow mail server holds one request thread at most this long


class Sent(StrEnum):
    SENT = "sent"  # the SMTP server accepted it
    LOGGED = "logged"  # no SMTP host: written to the server's log for the operator
    FAILED = "failed"  # the SMTP server could not be reached or refused it (logged)


def send(to: str, subject: str, body: str, app: Flask | None = None) -> Sent:
    """Mail `body` (plain text) to `to`; how it went (never raises for a mail server's trouble)."""
    config = settings(app)
    if not config.smtp_host:
        # One line per message, the body's line breaks escaped: what a log reader greps for, never a forged line.
        log.warning("no SMTP host (DLA_SMTP_HOST) is set: mail to %s not sent; it says: %s",
                    to, body.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n"))
        return Sent.LOGGED
    message = EmailMessage()
    message["From"] = config.mail_from
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain=config.smtp_host)
    message.set_content(body)
    try:
        if config.smtp_security == "ssl":
            server: smtplib.SMTP = smtplib.SMTP_SSL(config.smtp_host, config.smtp_port, timeout=TIMEOUT_S,
                                                    context=ssl.create_default_context())
        else:
            server = smtplib.SMTP(config.smtp_host, config.smtp_port, timeout=TIMEOUT_S)
        with server:
            if config.smtp_security == "starttls":
                server.starttls(context=ssl.create_default_context())
            if config.smtp_user:
                server.login(config.smtp_user, config.smtp_password)
            server.send_message(message)
    except (OSError, smtplib.SMTPException) as exc:
        log.error("mail to %s not sent: %s", to, repr(exc)[:300])
        return Sent.FAILED
    return Sent.SENT

"""Mail the app sends, as a real SMTP server on 127.0.0.1 (aiosmtpd) receives it: the sign-up's confirmation
links (tests/web/test_email_confirmation.py, tests/abuse/test_red_team_51.py; the fixtures `inbox` and
`mailing` in tests/conftest.py)."""
from __future__ import annotations

import contextlib
import email
import re
import threading
from email.message import Message
from typing import TYPE_CHECKING, Any, Iterator

from tests.support.processes import free_port

if TYPE_CHECKING:
    from tests.support.apps import WebSession

LINK = re.compile(r"https?://\S+/auth/confirm/[A-Za-z0-9._-]+")


class Inbox:
    """What a real SMTP server on 127.0.0.1 received (aiosmtpd), one parsed message per mail."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's name
        with self.arrived:
            self.messages.append((list(envelope.rcpt_tos), email.message_from_bytes(envelope.content)))
            self.arrived.notify_all()
        return "250 OK"

    def wait(self, count: int, timeout: float = 10) -> list[tuple[list[str], Message]]:
        """The first `count` mails, waiting for them at most `timeout` seconds."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.messages) >= count, timeout):
                raise AssertionError(f"{len(self.messages)} mails arrived, not {count}")
            return self.messages[:count]

    def link(self, number: int, to: str) -> str:
        """The confirmation link in mail `number` (1-based), which must be addressed to `to`."""
        recipients, message = self.wait(number)[number - 1]
        assert recipients == [to] and message["To"] == to
        found = LINK.findall(message.get_payload(decode=True).decode())
        assert len(found) == 1, message.as_string()
        return found[0]


@contextlib.contextmanager
def smtp_inbox() -> Iterator[tuple[Inbox, int]]:
    """An SMTP server on a free loopback port while the block runs: (its inbox, its port)."""
    from aiosmtpd.controller import Controller

    box, port = Inbox(), free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield box, port
    finally:
        controller.stop()


def link_path(link: str) -> str:
    """A mailed link's path, for Flask's test client."""
    return "/" + link.split("://", 1)[1].split("/", 1)[1]


def confirm_link(web: WebSession, link: str, password: str | None = "password123") -> Any:
    """Open a confirmation link (its page must answer 200), then post its form with `password` (None: none)."""
    page = web.client.get(link_path(link))
    assert page.status_code == 200, page.get_data(as_text=True)[-400:]
    return web.post(link_path(link), data={} if password is None else {"password": password})

"""The LTI tests (tests/lti): the browser's side of a launch from an LMS (tests/lti/platform.py is the LMS's):
the forms of a page, the link followed through the LMS's login and authorization, and the launch form posted."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import requests

    from tests.lti.platform import Lms


class Forms(HTMLParser):
    """The forms of a page: id -> (action, fields), and the page's CSRF token."""

    def __init__(self, page: str):
        super().__init__()
        self.forms: dict[str, tuple[str, dict[str, str]]] = {}
        self._current: str | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "form":
            self._current = values.get("id") or f"form-{len(self.forms)}"
            self.forms[self._current] = (values.get("action") or "", {})
        elif tag == "input" and self._current and values.get("type") == "hidden":
            self.forms[self._current][1][values["name"]] = values.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None


def csrf_of(page: str) -> str:
    """A page's CSRF token (its meta tag)."""
    return re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)


def follow_link(browser: requests.Session, lms: Lms, link: str, user: str) -> tuple[str, dict[str, str]]:
    """The browser opens an LMS link: the LMS's login initiation, the tool's login, the LMS's authorization,
    which answers with the launch form (action, fields) the browser is to post to the tool."""
    page = browser.get(lms.start(link, user), timeout=30)
    assert page.status_code == 200, page.text[-500:]
    return Forms(page.text).forms["launch"]


def launch(browser: requests.Session, form: tuple[str, dict[str, str]]) -> requests.Response:
    """The browser posts the launch form it was given to the tool."""
    action, fields = form
    return browser.post(action, data=fields, allow_redirects=False, timeout=30)

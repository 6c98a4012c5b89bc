"""The verdict the moment it exists (issue 30), in Chromium: the page asks for its verdict and its Run with a
long-poll (`?wait=20`, academy/jobs/waiting.py), one request per 20 s of grading; and against a server that answers
at once, still pending (no free waiting seat, or an older server), it falls back to polling, with a pause
between requests."""
from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, Route, expect

from tests.support.browser import GRADING, SLOW, guest_on, set_code

pytestmark = [pytest.mark.browser]

BROKEN = "def train_step(*args):\n    return (\n"  # a syntax error: a verdict without a training run


def _gets(page: Page, pattern: str) -> list[tuple[float, str]]:
    seen: list[tuple[float, str]] = []
    page.on("request", lambda request: seen.append((time.monotonic(), request.url))
            if request.method == "GET" and re.search(pattern, request.url) else None)
    return seen


def test_the_verdict_and_the_run_come_by_long_poll(page: Page, live_server: str) -> None:
    guest_on(page, live_server)
    set_code(page, BROKEN)
    submissions, runs = _gets(page, r"/api/submissions/\d+"), _gets(page, r"/api/runs/\d+")
    started = time.monotonic()
    page.locator("#submit-code").click()
    expect(page.locator("#result-summary")).to_have_text("Your code could not be checked.", timeout=GRADING)
    took = time.monotonic() - started
    # Each GET says what the page last showed, so a job that started before the first GET is not missed.
    shown = r"\?wait=20&seen=(queued|running)$"
    assert submissions and all(re.search(shown, url) for _, url in submissions), submissions
    # One answer when it started running (the page says so), one when it finished, one more per 20 s waited.
    assert len(submissions) <= took // 20 + 2, f"{len(submissions)} GETs in {took:.1f} s: not a long-poll"
    page.locator("#run-code").click()
    expect(page.locator("#run-output h2")).to_have_text("Run stopped", timeout=GRADING)
    assert runs and all(re.search(shown, url) for _, url in runs), runs


def test_a_server_that_does_not_wait_is_polled_with_pauses(page: Page, live_server: str) -> None:
    """A Run of about 3 s against answers that never wait: the page asks again and again, 0.6 s apart unless
    something changed, and shows the Run when it is done."""
    guest_on(page, live_server)
    set_code(page, SLOW)

    def without_wait(route: Route) -> None:  # what a server without a free seat (or without ?wait=) answers
        route.continue_(url=route.request.url.split("?")[0])
    page.route(re.compile(r".*/api/runs/\d+\?wait=.*"), without_wait)
    runs = _gets(page, r"/api/runs/\d+")
    page.locator("#run-code").click()
    expect(page.locator("#run-output h2")).to_have_text("Run finished", timeout=GRADING)
    times = [at for at, _ in runs]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    # At once only after news (the Run started running); else 0.6 s apart.
    assert len(runs) >= 3 and sum(gap < 0.5 for gap in gaps) <= 1, f"{len(runs)} GETs, {gaps} s apart"

"""Learner frictions (issue 30) in Chromium: signing up from the header comes back to the step; a 429 on Run or
Submit says, in the page's language, how long to wait; an account's sign-out asks first and can be cancelled."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import SLOW, STEP, serious_violations

pytestmark = [pytest.mark.browser]

START_RUN = """async (code) => {
    const csrf = document.querySelector('meta[name="csrf-token"]').content;
    const r = await fetch("/api/runs", {method: "POST", credentials: "same-origin", body: JSON.stringify(
        {exercise: "mixed-precision/amp-step", code}), headers: {"Content-Type": "application/json",
        "X-CSRF-Token": csrf}});
    return r.status;
}"""


def test_back_at_the_step_how_long_to_wait_and_a_sign_out_that_asks(page: Page, live_server: str) -> None:
    # A visitor on a step signs up from the header, and is back on that step.
    page.goto(live_server + STEP)
    page.locator("#account").get_by_role("link", name="Sign up").click()
    page.get_by_label("Your name").fill("Return Tester")
    page.get_by_label("Email").fill("return@example.org")
    page.get_by_label("Password").fill("password123")
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(live_server + STEP)
    expect(page.locator(".who")).to_have_text("Return Tester")

    # While a Run of theirs runs (3 s), Submit and Run are refused (429): the page says how long to wait, in Italian.
    page.goto(f"{live_server}/it{STEP}")
    expect(page.locator(".cm-editor")).to_be_visible()
    assert page.evaluate(START_RUN, SLOW) == 202
    page.locator("#submit-code").click()
    expect(page.locator("#result .flash.error")).to_contain_text("Riprova tra 5 s.")
    page.locator("#run-code").click()
    expect(page.locator("#run-output .flash.error")).to_contain_text("Riprova tra 5 s.")

    # Sign out asks first: Cancel goes back to the step, still signed in; confirming signs out.
    page.goto(live_server + STEP)
    page.locator("#account").get_by_role("link", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/auth/signout\?next="))
    expect(page.locator("#signout-question")).to_contain_text("This ends your session in every browser")
    assert serious_violations(page) == []
    page.get_by_role("link", name="Cancel").click()
    expect(page).to_have_url(live_server + STEP)
    expect(page.locator(".who")).to_have_text("Return Tester")
    page.locator("#account").get_by_role("link", name="Sign out").click()
    page.locator("#signout").get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(live_server + "/")
    expect(page.locator("#account").get_by_role("link", name="Sign in")).to_be_visible()

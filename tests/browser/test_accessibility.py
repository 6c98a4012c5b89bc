"""Accessibility in Chromium with axe-core (vendored: tests/browser/vendor/axe.min.js, from npm via
platform/frontend's `npm run vendor-axe`; never from a CDN): no serious or critical violation on the course,
card, exercise (before and after a verdict), quiz, lesson end, account, sign-out and instructor pages, in light
and dark mode and in Arabic. Also: the verdict and the quiz answer take focus, the editor has a name and says how
to leave it."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.support.browser import INSTRUCTOR, serious_violations

pytestmark = [pytest.mark.browser]

LESSON = "mixed-precision"
MODES = (("light", ""), ("dark", ""), ("light", "/ar"))


def check(page: Page, url: str, label: str) -> None:
    page.goto(url)
    page.wait_for_load_state()
    assert serious_violations(page) == [], (label, url)


def context_in(browser: Browser, mode: str) -> BrowserContext:
    return browser.new_context(color_scheme=mode, viewport={"width": 1200, "height": 900})


def test_no_serious_violations(browser: Browser, live_server: str) -> None:
    learner = context_in(browser, "light")
    page = learner.new_page()
    pages = {"course": "/", "card": f"/lessons/{LESSON}/meet-autocast", "exercise": f"/lessons/{LESSON}/amp-step",
             "quiz": f"/lessons/{LESSON}/quiz", "account": "/auth/account",
             # the guest's: the steps still open and the offer to save them; the sign-out that asks first
             "lesson end": f"/lessons/{LESSON}/end", "sign-out": f"/auth/signout?next=/lessons/{LESSON}/end"}
    # A visitor first (no account): course, card, exercise before any verdict.
    for name in ("course", "card", "exercise"):
        check(page, live_server + pages[name], name + " (visitor)")
    # Submit: a guest appears, the verdict arrives and takes focus.
    page.goto(live_server + pages["exercise"])
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#result-summary")).to_be_focused(timeout=90_000)
    editor = page.get_by_role("textbox", name=re.compile("Code editor"))
    assert editor.get_attribute("aria-describedby") == "editor-help"
    expect(page.locator("#editor-help")).to_contain_text("press Esc, then Tab")
    # A quiz answer: the page comes back at that question, the verdict focused.
    page.goto(live_server + pages["quiz"])
    page.locator("section.question").first.locator("button.option").first.click()
    expect(page.locator(".verdict").first).to_be_focused()
    state = learner.storage_state()
    learner.close()

    for mode, prefix in MODES:
        context = browser.new_context(color_scheme=mode, storage_state=state)
        page = context.new_page()
        for name, url in pages.items():  # the exercise now shows its verdict
            check(page, f"{live_server}{prefix}{url}", f"{name} ({mode}{prefix})")
        context.close()

    instructor = context_in(browser, "dark")
    page = instructor.new_page()
    page.goto(f"{live_server}/auth/signin")
    page.get_by_label("Email").fill(INSTRUCTOR[0])
    page.get_by_label("Password").fill(INSTRUCTOR[1])
    page.locator("form.stack").get_by_role("button", name="Sign in").click()
    for prefix in ("", "/ar"):
        check(page, f"{live_server}{prefix}/instructor/", "instructor" + prefix)
        check(page, f"{live_server}{prefix}/instructor/learners/", "learners and gradebook" + prefix)
        check(page, f"{live_server}{prefix}/lti/platforms", "LMS registrations" + prefix)
    page.emulate_media(color_scheme="light")
    check(page, f"{live_server}/instructor/", "instructor (light)")
    instructor.close()


def test_focus_is_visible_on_step_segments(page: Page, live_server: str) -> None:
    page.goto(f"{live_server}/lessons/{LESSON}/amp-step")
    segment = page.locator(".steps .seg.kind-exercise").first
    segment.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    expect(segment).to_be_focused()
    outline = segment.evaluate(
        "n => { const s = getComputedStyle(n); return [s.outlineStyle, parseFloat(s.outlineWidth)]; }")
    assert outline[0] == "solid" and outline[1] >= 2
    assert page.locator('link[rel="icon"]').get_attribute("href").endswith("favicon.svg")
    # axe does find what it should: a button without a name is a critical violation.
    page.evaluate("document.body.append(Object.assign(document.createElement('button'), {id: 'nameless'}))")
    assert any(v.startswith("button-name") for v in serious_violations(page))

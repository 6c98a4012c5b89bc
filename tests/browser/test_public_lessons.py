"""Public lessons in Chromium: a visitor reads lesson 1 start to end without an account, types in the
editor (the draft stays in the browser), then submits: a guest appears and the draft is kept."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from grader.core.course import load_course

pytestmark = [pytest.mark.browser]

LESSON = "mixed-precision"
STEPS = len(load_course().lesson(LESSON).steps)
TYPED = "def train_step(model, optimizer, scaler, loss_fn, x, y):\n    return None  # a visitor's draft\n"


def test_visitor_reads_types_then_submits_as_a_guest(page: Page, live_server: str, shoot) -> None:  # noqa: ANN001
    page.goto(f"{live_server}/lessons/{LESSON}")
    expect(page).to_have_url(re.compile(rf"/lessons/{LESSON}/what-mixed-precision-means$"))
    assert page.locator('meta[name="description"]').get_attribute("content").startswith("Lesson 1: ")
    for number in range(2, STEPS + 1):
        page.get_by_role("link", name="Next →").click()
        expect(page.locator(".step-count")).to_have_text(f"Step {number} of {STEPS}")
    page.get_by_role("link", name="Finish lesson").click()
    expect(page).to_have_url(re.compile(rf"/lessons/{LESSON}/end$"))
    expect(page.locator(".who")).to_have_count(0)  # still no account

    page.goto(f"{live_server}/lessons/{LESSON}/amp-step")
    page.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(TYPED)
    expect(page.locator("#draft-state")).to_have_text("Draft kept in this browser")
    page.reload()
    assert page.evaluate("window.academyEditor.getCode()") == TYPED
    expect(page.locator(".who")).to_have_count(0)

    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#result-summary")).to_have_text(re.compile(r"\d of \d+ checks passed"), timeout=90_000)
    expect(page.locator("#draft-state")).to_have_text("Draft saved")
    assert page.evaluate(f"localStorage.getItem('dla-draft:{LESSON}/amp-step')") is None
    page.reload()
    expect(page.locator(".who")).to_have_text(re.compile(r"^guest #\d+$"))
    assert page.evaluate("window.academyEditor.getCode()") == TYPED
    expect(page.locator("#result-summary")).to_have_text(re.compile(r"\d of \d+ checks passed"))
    shoot(page, "20-visitor-became-guest")

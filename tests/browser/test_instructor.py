"""An instructor watches an exercise dashboard change as a learner submits (real grading)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import INSTRUCTOR
from tests.support.paths import REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EXERCISE = "mixed-precision/amp-step"
SOLUTION = (REPO / "exercises" / "mixed-precision" / "amp-step" / "solution.py").read_text()


def stat(page: Page, name: str) -> int:
    return int(page.locator(f"#stat-{name}").inner_text().rstrip("%"))


def test_dashboard_counts_a_new_learner(browser: Browser, live_server: str, shoot) -> None:  # noqa: ANN001
    teacher = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    teacher.goto(f"{live_server}/instructor/")
    expect(teacher).to_have_url(re.compile(r"/auth/signin"))  # not signed in: sent to sign in first
    teacher.get_by_label("Email").fill(INSTRUCTOR[0])
    teacher.get_by_label("Password").fill(INSTRUCTOR[1])
    teacher.get_by_role("button", name="Sign in").click()
    expect(teacher).to_have_url(re.compile(r"/instructor/$"))
    expect(teacher.locator(f'td.validate[data-exercise="{EXERCISE}"]')).to_be_visible()
    teacher.get_by_role("link", name="Write one AMP training step").click()
    expect(teacher.get_by_role("heading", name="Write one AMP training step")).to_be_visible()
    before = {name: stat(teacher, name) for name in ("attempts", "learners", "passed")}

    # A new learner (a guest) arrives straight at the exercise and passes it.
    learner = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    # Lessons are public: no sign-in page; the first Submit makes this browser a guest.
    learner.goto(f"{live_server}/lessons/mixed-precision/11")
    expect(learner.locator(".cm-editor")).to_be_visible()
    learner.evaluate("code => window.academyEditor.setCode(code)", SOLUTION)
    learner.get_by_role("button", name=re.compile("^Submit")).click()
    expect(learner.locator("#result-summary")).to_have_text("All checks passed. Well done!", timeout=90_000)
    # Learners never reach instructor pages.
    assert learner.goto(f"{live_server}/instructor/exercises/{EXERCISE}").status == 403

    teacher.reload()
    assert stat(teacher, "attempts") == before["attempts"] + 1
    assert stat(teacher, "learners") == before["learners"] + 1
    assert stat(teacher, "passed") == before["passed"] + 1
    first = teacher.locator("#recent tbody tr").first
    expect(first).to_contain_text("guest #")
    expect(first.locator(".badge")).to_have_text("passed")
    first.locator("summary").click()
    expect(first.locator("pre.code")).to_contain_text("scaler.scale(loss).backward()")
    shoot(teacher, "07-instructor-dashboard")

"""The learner's second round (issue 30) in Chromium: what a visitor read counts once a Run makes them a guest,
the header says so at once, a Run that floods its output stays in a box of its own, a timeout names its line,
and the course page names the site once."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from grader.core.course import Card, load_course

pytestmark = [pytest.mark.browser]

LESSON = load_course().lesson("mixed-precision")
STEPS = len(LESSON.steps)
# The cards before lesson 1's first exercise: a visitor reads them all, then runs that exercise.
CARDS = next(i for i, step in enumerate(LESSON.steps) if not isinstance(step, Card))
EXERCISE = LESSON.steps[CARDS].id


def test_cards_read_as_a_visitor_count_once_a_run_makes_a_guest(page: Page, live_server: str) -> None:
    page.goto(f"{live_server}/lessons/{LESSON.id}")
    for number in range(2, CARDS + 2):
        page.get_by_role("link", name="Next →").click()
        expect(page.locator(".step-count")).to_have_text(f"Step {number} of {STEPS}")
    # Still a visitor: the step bar already shows what this browser read.
    expect(page.locator(".steps .seg.done")).to_have_count(CARDS)
    expect(page.get_by_role("link", name="Sign in")).to_be_visible()

    page.get_by_role("button", name="Run").click()
    expect(page.locator("#run-output h2")).to_have_text(re.compile("^Run (finished|stopped)$"), timeout=90_000)
    # The Run made this visitor a guest: the header says so without a reload.
    expect(page.locator("#account .who")).to_have_text(re.compile(r"^guest #\d+$"))
    expect(page.locator("#account").get_by_role("link", name="Save progress: sign up")).to_be_visible()
    expect(page.get_by_role("link", name="Sign in")).to_have_count(0)

    # The cards read as a visitor are the guest's now, on the server: the course page and a new step page count
    # them, and the lesson resumes at the exercise.
    page.goto(f"{live_server}/")
    expect(page.locator(f"#lesson-{LESSON.id} .progress-text")).to_have_text(f"{CARDS} of {STEPS} steps done")
    page.goto(f"{live_server}/lessons/{LESSON.id}")
    expect(page).to_have_url(re.compile(rf"/lessons/{LESSON.id}/{EXERCISE}$"))


def test_a_run_that_floods_its_output_stays_in_a_box(page: Page, live_server: str) -> None:
    page.goto(f"{live_server}/")
    page.get_by_role("button", name="Start as a guest").click()
    page.goto(f"{live_server}/lessons/{LESSON.id}/{EXERCISE}")
    expect(page.locator(".cm-editor")).to_be_visible()
    page.evaluate("code => window.academyEditor.setCode(code)",
                  "def train_step(*args):\n    for i in range(200_000):\n        print(i)\n")
    page.get_by_role("button", name="Run").click()
    expect(page.locator("#run-output h2")).to_have_text("Run stopped", timeout=90_000)
    expect(page.locator("#run-output .error-message")).to_contain_text("printed more than 64 KB")
    printed = page.locator("#run-output pre.run-printed").bounding_box()
    assert printed["height"] <= 20 * 16 + 1, printed  # 20rem, scrolled inside
    assert page.evaluate("document.documentElement.scrollHeight") < 4000
    expect(page.get_by_role("button", name="Submit")).to_be_visible()


def test_a_run_stopped_at_its_time_limit_names_its_line(page: Page, live_server: str) -> None:
    page.goto(f"{live_server}/")
    page.get_by_role("button", name="Start as a guest").click()
    page.goto(f"{live_server}/lessons/{LESSON.id}/{EXERCISE}")
    expect(page.locator(".cm-editor")).to_be_visible()
    page.evaluate("code => window.academyEditor.setCode(code)",
                  "def train_step(*args):\n    x = 0\n    while True:\n        x += 1\n")
    page.get_by_role("button", name="Run").click()
    message = page.locator("#run-output .error-message")
    expect(message).to_contain_text(re.compile(r"your code was stopped while it ran line [34]\."), timeout=90_000)
    expect(page.locator(".cm-failing-line")).to_have_count(1)


def test_the_course_page_names_the_site_once(page: Page, live_server: str) -> None:
    page.goto(f"{live_server}/")
    assert page.title() == "Deep Learning Academy"
    page.goto(f"{live_server}/lessons/{LESSON.id}")
    assert page.title().endswith(" · Deep Learning Academy") and page.title().count("Deep Learning Academy") == 1

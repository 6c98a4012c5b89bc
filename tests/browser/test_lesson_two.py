"""Lesson 2 can be completed in the browser too: page to the exercise, pass it, answer the quiz."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from grader.core.course import load_course
from tests.support.paths import REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LESSON = load_course().lesson("gradient-accumulation")
KINDS = [step.kind for step in LESSON.steps]
EXERCISE_STEP = KINDS.index("exercise") + 1
QUIZ_STEP = KINDS.index("quiz") + 1
STEPS = len(KINDS)
SOLUTION = (REPO / "exercises" / LESSON.id / "accumulate-amp" / "solution.py").read_text()


def _pass_with_solution(page: Page, exercise) -> None:  # noqa: ANN001 - a grader.core.course.Exercise
    for _ in range(300):
        if page.evaluate("window.academyEditor !== undefined"):
            break
        page.wait_for_timeout(100)
    page.evaluate("code => window.academyEditor.setCode(code)", exercise.solution_path.read_text())
    page.get_by_role("button", name=re.compile("^Submit")).click()
    expect(page.locator("#result-summary")).to_have_text("All checks passed. Well done!", timeout=120_000)


def test_lesson_two_can_be_completed(page: Page, live_server: str, shoot) -> None:  # noqa: ANN001
    page.goto(live_server)
    page.get_by_role("button", name="Start as a guest").click()
    card = page.locator(f"#lesson-{LESSON.id}")
    card.get_by_role("link", name="Start").click()
    for number in range(1, EXERCISE_STEP):
        expect(page.locator(".step-count")).to_have_text(f"Step {number} of {STEPS}")
        page.get_by_role("link", name="Next →").click()
    expect(page.locator(".step-count")).to_have_text(f"Step {EXERCISE_STEP} of {STEPS}")

    # Polled with evaluate (CDP, not subject to the page's CSP); wait_for_function's string predicate
    # can need eval(), which the page's CSP forbids (seen failing under load).
    for _ in range(300):
        if page.evaluate("window.academyEditor !== undefined"):
            break
        page.wait_for_timeout(100)
    page.evaluate("code => window.academyEditor.setCode(code)", SOLUTION)
    page.get_by_role("button", name=re.compile("^Submit")).click()
    expect(page.locator("#result-summary")).to_have_text("All checks passed. Well done!", timeout=120_000)
    checks = len(LESSON.exercises[0].checks)
    expect(page.locator("li.check.pass")).to_have_count(checks)
    shoot(page, "lesson2-exercise-passed")

    # The rest of the lesson: the cards and exercises after the first exercise (each passed with its
    # solution), the quiz (right answers), the recap.
    for number in range(EXERCISE_STEP + 1, STEPS + 1):
        page.goto(f"{live_server}/lessons/{LESSON.id}/{number}")
        expect(page.locator(".step-count")).to_have_text(f"Step {number} of {STEPS}")
        if KINDS[number - 1] == "exercise":
            _pass_with_solution(page, LESSON.steps[number - 1].exercise)
        if number != QUIZ_STEP:
            continue
        for question in LESSON.quiz.questions:
            section = page.locator(f"#q-{question.id}")
            # The option's code spans show as code, without their backticks, so the button's name has none.
            name = question.options[question.answer].text.replace("`", "")
            section.get_by_role("button", name=name, exact=True).click()
            expect(page.locator(f"#q-{question.id} .verdict.right")).to_be_visible()
        shoot(page, "lesson2-quiz")

    page.goto(live_server)
    expect(page.locator(f"#lesson-{LESSON.id} .progress-text")).to_have_text(
        f"{STEPS} of {STEPS} steps done · complete")

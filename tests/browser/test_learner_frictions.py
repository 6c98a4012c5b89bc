"""The lesson page's frictions (issue 30) in Chromium: the newest Run or verdict is the one shown, quiz code and the
worked solution are highlighted, Esc then Tab reaches Run, numbers, dates and the device read in the page's
language, a restored draft says it is the learner's, running code shows its time limit, and the phone's step menu
is axe-clean in dark mode and in Arabic."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from grader.core.course import load_course
from tests.support.browser import GRADING, PHONE, SLOW, STEP, guest_on, serious_violations, set_code

pytestmark = [pytest.mark.browser]

COURSE = load_course()
LESSON = "mixed-precision"
EXERCISE = COURSE.exercises[f"{LESSON}/amp-step"]
# SLOW and ENDLESS wait asleep: the page shows the same as for busy loops (the sandbox tests stop busy ones), and
# the suite's 2 cores are not spent for their 3 s, or the 10 s of the time limit.
ENDLESS = "def train_step(*args):\n    import time\n    while True:\n        time.sleep(0.05)\n"


def _top(page: Page, selector: str) -> float:
    return page.locator(selector).evaluate("n => n.getBoundingClientRect().top")


def test_the_newest_result_is_shown_and_the_older_one_folded_below_it(page: Page, live_server: str) -> None:
    """Run, then Submit: the Run's panel (its own "line N") folds under "Earlier Run" below the verdict; Submit, then
    Run: the verdict folds under "Earlier verdict" below the Run. The folded one still opens."""
    guest_on(page, live_server)
    page.locator("#run-code").click()
    expect(page.locator("#run-output h2")).to_have_text(re.compile("^Run (finished|stopped)$"), timeout=GRADING)

    page.locator("#submit-code").click()
    expect(page.locator("#result-summary")).to_be_visible(timeout=GRADING)
    expect(page.locator("#run-output h2")).to_be_hidden()
    folded = page.locator("#run-output details.earlier-result")
    expect(folded.locator("summary")).to_have_text("Earlier Run, before this submission")
    assert _top(page, "#run-output") > _top(page, "#result-summary")
    folded.locator("summary").click()
    expect(page.locator("#run-output h2")).to_be_visible()

    page.locator("#run-code").click()
    expect(page.locator("#run-output h2")).to_have_text(re.compile("^Run (finished|stopped)$"), timeout=GRADING)
    expect(page.locator("#result-summary")).to_be_hidden()
    expect(page.locator("#result details.earlier-result summary")).to_have_text("Earlier verdict, before this Run")
    expect(page.locator("#run-output details.earlier-result")).to_have_count(0)
    assert _top(page, "#result") > _top(page, "#run-output h2")


def test_quiz_code_and_the_worked_solution_are_highlighted(page: Page, live_server: str) -> None:
    """Code between backticks in a quiz is highlighted as the cards' code is (Pygments' token classes), and so is
    the worked solution once it opens."""
    page.goto(f"{live_server}/lessons/profiling/quiz")
    code = page.locator("section.question code.highlight")
    assert code.count() > 3
    expect(code.filter(has_text="torch.where").first.locator("span.n").first).to_be_visible()
    assert "`" not in page.locator("section.question").first.inner_text()
    assert serious_violations(page) == []  # the palettes' contrast holds inside the options too
    dark = page.context.browser.new_context(color_scheme="dark")
    dark_page = dark.new_page()
    dark_page.goto(f"{live_server}/ar/lessons/profiling/quiz")
    expect(dark_page.locator("section.question code.highlight").first).to_be_visible()
    assert serious_violations(dark_page) == []
    dark.close()

    guest_on(page, live_server)
    set_code(page, EXERCISE.solution_code())
    page.locator("#submit-code").click()
    expect(page.locator("#result-summary")).to_have_text("All checks passed. Well done!", timeout=GRADING)
    page.locator("#solution summary").click()
    solution = page.locator("#solution pre.solution-code.highlight")
    expect(solution).to_contain_text("scaler.scale(loss).backward()")
    expect(solution.locator("span.k").first).to_be_visible()  # a keyword, coloured


def test_esc_then_tab_leaves_the_editor_for_run(page: Page, live_server: str) -> None:
    """Tab indents in the editor; Esc then Tab moves on to Run, even with a verdict's line links below."""
    guest_on(page, live_server)
    page.locator("#submit-code").click()
    expect(page.locator("#result-summary")).to_be_focused(timeout=GRADING)
    page.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    before = page.evaluate("window.academyEditor.getCode()")
    page.keyboard.press("Tab")
    assert page.evaluate("window.academyEditor.getCode()") == before + "    "
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(page.locator("#run-code")).to_be_focused()


def test_an_italian_page_writes_numbers_dates_and_the_device_in_italian(browser: Browser, live_server: str) -> None:
    """On /it/ in an English browser: "Valutato in 0,8 s", the device in Italian, and the attempts' dates in
    Italian ("2 dic 2026, 19:03"), not in the browser's locale."""
    context = browser.new_context(locale="en-US", viewport={"width": 1200, "height": 900})
    page = context.new_page()
    guest_on(page, live_server, "/it")
    # The solution, which asks for CUDA autocast: the device is the emulated one where there is no GPU (the starter,
    # which asks for no CUDA, ran on the plain "cpu": issue 53).
    set_code(page, (EXERCISE.path / "solution.py").read_text())
    page.locator("#submit-code").click()
    expect(page.locator("#result-summary")).to_be_visible(timeout=GRADING)
    graded = page.locator("#result p.muted").last
    expect(graded).to_have_text(re.compile(r"^Valutato in \d+,\d s( su .+)?\.$"))
    if "cpu" in graded.inner_text().lower():  # no GPU here: the emulated device, in Italian words
        expect(graded).to_contain_text("su CPU (CUDA emulata).")
    page.locator("#history summary").click()
    when = page.locator("#history-list tr[data-submission] td").nth(1)
    months = "gen|feb|mar|apr|mag|giu|lug|ago|set|ott|nov|dic"
    expect(when).to_have_text(re.compile(rf"^\d{{1,2}} ({months}) \d{{4}}, \d{{2}}:\d{{2}}$"))
    context.close()


def test_a_restored_draft_is_labelled_as_the_learners(page: Page, live_server: str) -> None:
    """A visitor's draft restored after a reload, and the same draft once a Run made them a guest, say whose it is
    and since when, beside "Reset to starter"."""
    page.goto(f"{live_server}{STEP}")
    expect(page.locator(".cm-editor")).to_be_visible()
    expect(page.locator("#draft-state")).to_have_text("")  # the starter: nothing to say
    page.locator(".cm-content").click()
    page.keyboard.type("# mine\n")
    expect(page.locator("#draft-state")).to_have_text("Draft kept in this browser")
    page.reload()
    label = page.locator("#draft-state")
    expect(label).to_have_text(re.compile(r"^Your draft, saved \d{1,2}:\d{2}\s?(AM|PM)$"))
    expect(page.get_by_role("button", name="Reset to starter")).to_be_visible()

    page.locator("#run-code").click()  # now a guest: the draft moves to the server
    expect(page.locator("#run-output h2")).to_be_visible(timeout=GRADING)
    expect(label).to_have_text("Draft saved")
    page.reload()
    expect(label).to_have_text(re.compile(r"^Your draft, saved \d{1,2}:\d{2}\s?(AM|PM)$"))
    assert "# mine\n" in page.evaluate("window.academyEditor.getCode()")


def test_running_code_shows_its_time_limit(page: Page, live_server: str) -> None:
    """While a Run or a submission runs, the page names the exercise's time limit (limits.time_s), and an endless
    loop still ends in the timeout verdict."""
    limit = f"stops after {EXERCISE.time_limit_s:g} s"
    guest_on(page, live_server)
    set_code(page, SLOW)
    page.locator("#run-code").click()
    expect(page.locator("#run-output .time-limit")).to_have_text(f"· {limit}")
    expect(page.locator("#run-output h2")).to_have_text("Run finished", timeout=GRADING)

    set_code(page, ENDLESS)
    page.locator("#submit-code").click()
    expect(page.locator("#result .time-limit")).to_have_text(f"· {limit}")
    expect(page.locator("#result .progress-line")).to_contain_text("Running your code", timeout=GRADING)
    expect(page.locator("#result-summary")).to_have_text("Your code ran out of time.", timeout=GRADING)


def test_the_phone_step_menu_open_is_axe_clean_in_dark_mode_and_arabic(browser: Browser, live_server: str) -> None:
    context = browser.new_context(**PHONE, color_scheme="dark")
    page = context.new_page()
    page.goto(f"{live_server}/ar{STEP}")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    page.locator("#step-menu summary").click()
    expect(page.locator("#step-menu li a").first).to_be_visible()
    assert serious_violations(page) == []
    context.close()

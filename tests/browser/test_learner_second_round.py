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
    # Asleep in its loop, not busy (tests/grader/test_local_isolation.py stops busy ones and names their line):
    # the page is the same, and the suite's 2 cores are not spent for the 10 s of the time limit.
    page.evaluate("code => window.academyEditor.setCode(code)",
                  "def train_step(*args):\n    import time\n    while True:\n        time.sleep(0.05)\n")
    page.get_by_role("button", name="Run").click()
    message = page.locator("#run-output .error-message")
    expect(message).to_contain_text(re.compile(r"your code was stopped while it ran line [34]\."), timeout=90_000)
    expect(page.locator(".cm-failing-line")).to_have_count(1)


def test_the_course_page_names_the_site_once(page: Page, live_server: str) -> None:
    page.goto(f"{live_server}/")
    assert page.title() == "Deep Learning Academy"
    page.goto(f"{live_server}/lessons/{LESSON.id}")
    assert page.title().endswith(" · Deep Learning Academy") and page.title().count("Deep Learning Academy") == 1


def _wrong_amp_step_verdict(page: Page, live_server: str, prefix: str = "") -> None:
    from tests.support.browser import VERDICT_TIMEOUT, source

    page.goto(f"{live_server}{prefix}/")
    page.locator("form[action$='/auth/guest'] button").click()
    page.goto(f"{live_server}{prefix}/lessons/{LESSON.id}/amp-step")
    expect(page.locator(".cm-editor")).to_be_visible()
    page.evaluate("code => window.academyEditor.setCode(code)", source("mixed-precision/amp-step",
                                                                       "mistakes/raw_backward.py"))
    page.locator("#submit-code").click()  # by id: its name is the page's language
    expect(page.locator("#result-summary")).to_be_visible(timeout=VERDICT_TIMEOUT)
    expect(page.locator("#figure-trace tr.marked")).to_have_count(1)


def _inside(page: Page, selector: str, right: float) -> None:
    for box in page.locator(selector).evaluate_all(
            "ns => ns.filter(n => n.offsetParent).map(n => n.getBoundingClientRect().toJSON())"):
        assert box["x"] >= 0 and box["x"] + box["width"] <= right + 1, (selector, box)


def test_the_timeline_fits_the_page_on_a_desktop_and_a_phone(browser, live_server: str) -> None:  # noqa: ANN001
    """At 1280 px every column of the timeline is in view (no column hidden past a scrolling edge); on a phone the
    failing row's cells read in full within the screen, without scrolling sideways."""
    desktop = browser.new_context(viewport={"width": 1280, "height": 900})
    page = desktop.new_page()
    _wrong_amp_step_verdict(page, live_server)
    box = page.locator("#figure-trace .table-scroll")
    assert box.evaluate("n => n.scrollWidth <= n.clientWidth + 1"), box.evaluate("n => [n.scrollWidth, n.clientWidth]")
    right = box.evaluate("n => n.getBoundingClientRect().right")
    _inside(page, "#figure-trace th", right)
    desktop.close()

    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = phone.new_page()
    _wrong_amp_step_verdict(page, live_server)
    _inside(page, "#figure-trace tr.marked td", 390)
    expect(page.locator("#figure-trace tr.marked td.call")).to_contain_text("backward()")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    phone.close()


def test_arabic_keeps_the_graders_english_isolated(page: Page, live_server: str) -> None:
    """The figures' titles, captions and the timeline's values are the grader's English: on an Arabic page they
    are marked lang="en" and laid out left to right, so the bidi algorithm does not reorder them."""
    _wrong_amp_step_verdict(page, live_server, "/ar")
    trace = page.locator("#figure-trace")
    expect(trace.locator("figcaption")).to_have_attribute("lang", "en")
    expect(trace.locator("figcaption")).to_have_attribute("dir", "ltr")
    for bdi in trace.locator(".figure-title bdi").all():
        assert (bdi.get_attribute("lang"), bdi.get_attribute("dir")) == ("en", "ltr")
    assert trace.locator(".figure-title bdi").count() >= 1
    cells = trace.locator("td.grader-words")
    assert cells.count() > 0
    assert set(cells.evaluate_all("ns => ns.map(n => n.lang + '/' + n.dir)")) == {"en/ltr"}
    expect(trace.locator("td.call code").first).to_have_attribute("lang", "en")


def test_the_lesson_end_page_says_what_it_shows_in_english(page: Page, live_server: str) -> None:
    """Lesson 2's cards are English on the Italian pages: its end page, which lists them by title, says so in
    words (the notice) and in markup (each English title lang="en")."""
    page.goto(f"{live_server}/it/lessons/gradient-accumulation/end")
    expect(page.locator("#not-translated")).to_be_visible()
    titles = page.locator("#lesson-end details li a")
    assert titles.count() > 0
    english = titles.evaluate_all("ns => ns.map(n => n.querySelector('[lang=en]') !== null)")
    assert any(english), english


def test_the_editor_types_a_docstring_and_dedents_after_return(page: Page, live_server: str) -> None:
    """Typed key by key: a docstring comes out as typed (auto-closed quotes used to leave `\"\"\"doc\"\"\"\"\"`), and
    Enter after `return` starts the next line one level out."""
    page.goto(f"{live_server}/lessons/{LESSON.id}/{EXERCISE}")
    expect(page.locator(".cm-editor")).to_be_visible()
    page.evaluate("window.academyEditor.setCode('')")
    page.locator(".cm-content").click()
    page.keyboard.type('def f(x):\n"""doc"""\nif x:\nreturn 1\n')
    page.keyboard.type("return 2")
    assert page.evaluate("window.academyEditor.getCode()") == (
        'def f(x):\n    """doc"""\n    if x:\n        return 1\n    return 2')

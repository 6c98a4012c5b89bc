"""The learner's third round (issue 53) in Chromium: a print flood's headline says what happened (bug 6a), the
grader's English stays isolated left to right on an Arabic page (6b), the language select names the language on a
phone (6d), a refused Submit leaves the verdict the learner was reading (friction 4), and Run is visibly disabled,
with its reason, while a submission is graded."""
from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import PHONE, SLOW, STEP, VERDICT_TIMEOUT, guest_on, set_code, source

pytestmark = [pytest.mark.browser]

FLOOD = "def train_step(*args):\n    for i in range(200_000):\n        print(i)\n"
# Loads for 3 s (asleep, not busy), then fails every check at once: a submission in grading long enough to look at.
LOADS_SLOWLY = ("import time\ntime.sleep(3)\n\n\n"
                "def train_step(model, optimizer, scaler, loss_fn, x, y):\n    return None\n")
START_RUN = """async (code) => {
    const csrf = document.querySelector('meta[name="csrf-token"]').content;
    const r = await fetch("/api/runs", {method: "POST", credentials: "same-origin", body: JSON.stringify(
        {exercise: "mixed-precision/amp-step", code}), headers: {"Content-Type": "application/json",
        "X-CSRF-Token": csrf}});
    return r.status;
}"""


def _submit_and_wait(page: Page, code: str) -> None:
    set_code(page, code)
    page.locator("#submit-code").click()  # by id: its name is the page's language
    expect(page.locator("#result-summary")).to_be_visible(timeout=VERDICT_TIMEOUT)


def test_a_print_flood_is_headed_as_a_print_flood(page: Page, live_server: str) -> None:
    guest_on(page, live_server)
    _submit_and_wait(page, FLOOD)
    expect(page.locator("#result .error-message")).to_contain_text("printed more than 64 KB")
    # It said "Your code was stopped (it used too much memory or too many resources)." above that detail.
    expect(page.locator("#result-summary")).to_have_text("Your code printed too much output and was stopped.")


def test_arabic_isolates_the_graders_english_left_to_right(page: Page, live_server: str) -> None:
    """Check messages, hints, notes and the checks named in "Not judged: ..." are the grader's English: on an Arabic
    page each is its own left-to-right isolate (its punctuation jumped to the line's start)."""
    guest_on(page, live_server, "/ar")
    _submit_and_wait(page, source("mixed-precision/amp-step", "mistakes/raw_backward.py"))
    failed = page.locator("#result li.check.fail").first
    page.locator("#result .reveal-hint").first.click()
    expect(failed.locator(".hint")).to_have_count(1)
    isolated = [("failed check's message", failed.locator(".message > span.grader-text")),
                ("hint", failed.locator(".hint > span.grader-text")),
                ("note", page.locator("#result .note > span.grader-text"))]
    for what, node in isolated:
        assert node.count() >= 1, what
        for found in node.evaluate_all(
                "ns => ns.map(n => [n.lang, n.dir, getComputedStyle(n).unicodeBidi, n.textContent.length])"):
            assert found[:3] == ["en", "ltr", "isolate"] and found[3] > 10, (what, found)
    # The message is the grader's text, whole, inside its isolate (a line link may follow it, in Arabic).
    message = failed.locator(".message > span.grader-text").text_content()
    assert message.endswith(".") and "scale" in message
    skipped = page.locator("#result li.check.skip .message").first
    expect(skipped.locator("bdi")).to_have_count(1)  # the check that explains it, by its title, isolated
    for title in page.locator("#result li.check strong").all():
        expect(title.locator("bdi")).to_have_count(1)


def test_the_language_select_names_the_language_on_a_phone(browser: Browser, live_server: str) -> None:
    """It showed "EN ·" (its "EN · English" cut to 3.3rem): the language's own name now shows, whole."""
    context = browser.new_context(**PHONE)
    page = context.new_page()
    shown = (("", "EN · English"), ("/it", "IT · Italiano"), ("/ar", "AR · العربية"), ("/ja", "JA · 日本語"))
    for prefix, name in shown:
        page.goto(f"{live_server}{prefix}{STEP}")
        select = page.locator("#language")
        expect(select.locator("option:checked")).to_have_text(name)
        room, needed = select.evaluate("""s => {
            const style = getComputedStyle(s);
            const ctx = document.createElement("canvas").getContext("2d");
            ctx.font = style.font;
            const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight)
                + parseFloat(style.borderLeftWidth) + parseFloat(style.borderRightWidth);
            return [s.getBoundingClientRect().width - padding, ctx.measureText(s.selectedOptions[0].text).width];
        }""")
        assert room >= needed + 12, (prefix, room, needed)  # the text and the select's arrow
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, prefix
        tops = page.locator(".topbar > *, .topbar nav > *").evaluate_all(
            "ns => ns.filter(n => n.offsetParent).map(n => n.getBoundingClientRect()).map(r => r.top + r.height / 2)")
        assert max(tops) - min(tops) <= 6, (prefix, tops)  # the header still one line
    context.close()


def test_a_refused_submit_keeps_the_verdict_and_says_why_beside_it(page: Page, live_server: str) -> None:
    guest_on(page, live_server)
    _submit_and_wait(page, source("mixed-precision/amp-step", "mistakes/raw_backward.py"))
    verdict = page.locator("#result-summary").text_content()
    checks = page.locator("#result li.check").count()
    marked = page.locator(".cm-failing-line").count()
    # A Run of this learner's (not of this page's) is waiting: the next Submit is refused (429, one at a time).
    assert page.evaluate(START_RUN, SLOW) == 202
    page.locator("#submit-code").click()
    expect(page.locator("#result .flash.error")).to_contain_text("Try again in")
    expect(page.locator("#result-summary")).to_have_text(verdict)  # it replaced the verdict with the refusal
    refusal = page.locator("#result > .refusal")
    expect(page.locator("#result li.check")).to_have_count(checks)
    expect(page.locator(".cm-failing-line")).to_have_count(marked)
    expect(refusal).to_have_attribute("role", "alert")
    expect(page.locator("#submit-code")).to_be_enabled()


def test_run_is_disabled_with_its_reason_while_a_submission_is_graded(page: Page, live_server: str) -> None:
    """Run looked enabled while a submission was graded, and a click did nothing. Disabled, not queued: the code
    queued could change before its turn, and the submission ahead can take its whole time limit."""
    guest_on(page, live_server)
    set_code(page, LOADS_SLOWLY)
    page.locator("#submit-code").click()
    run = page.locator("#run-code")
    reason = page.locator("#busy-reason")
    expect(run).to_be_disabled()
    expect(reason).to_be_visible()
    expect(reason).to_have_text("Run and Submit wait until this submission's verdict arrives.")
    expect(run).to_have_attribute("aria-describedby", "busy-reason")
    expect(page.locator("#result-summary")).to_be_visible(timeout=VERDICT_TIMEOUT)
    expect(run).to_be_enabled()
    expect(reason).to_be_hidden()
    assert run.get_attribute("aria-describedby") is None

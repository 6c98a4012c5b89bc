"""The verdict's pictures in the browser (static/figures.js): after a wrong and a right submission of
amp-step and fix-underflow, the timeline and the curves are there and labelled, and the marked row is the
failing check's event. Screenshots of each kind go to artifacts/browser/ (the README shows them)."""
from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.support.browser import VERDICT_TIMEOUT, source


def submit(page: Page, code: str) -> None:
    for _ in range(300):
        if page.evaluate("window.academyEditor !== undefined"):
            break
        page.wait_for_timeout(100)
    page.evaluate("code => window.academyEditor.setCode(code)", code)
    page.evaluate("() => document.getElementById('result-summary')?.remove()")  # wait for this verdict, not the last
    page.get_by_role("button", name=re.compile("^Submit")).click()
    expect(page.locator("#result-summary")).to_be_visible(timeout=VERDICT_TIMEOUT)


def test_timeline_and_curves_after_wrong_and_right_submissions(page: Page, live_server: str, shoot) -> None:
    page.goto(live_server)
    page.get_by_role("button", name="Start as a guest").click()

    # amp-step, wrong: backward on the raw loss. The marked row is that backward, linked to its check.
    page.goto(f"{live_server}/lessons/mixed-precision/amp-step")
    submit(page, source("mixed-precision/amp-step", "mistakes/raw_backward.py"))
    trace = page.locator("#figure-trace")
    expect(trace.locator(".figure-title")).to_contain_text("What your step did (call of train_step 1 of 5)")
    expect(trace.locator("th")).to_have_text(["Line", "Call", "Autocast", "Output dtype", "Backward on",
                                              "Gradients", "Step", "Scale after"])
    marked = trace.locator("tr.marked")
    expect(marked).to_have_count(1)
    expect(marked.locator("td.call code")).to_have_text("backward()")
    link = marked.locator("a.trace-check")
    expect(link).to_have_attribute("href", "#check-scaled-backward")
    expect(page.locator("li#check-scaled-backward")).to_have_class(re.compile(r"\bfail\b"))
    expect(link).to_contain_text(page.locator("li#check-scaled-backward strong").inner_text())
    expect(trace.locator("figcaption")).not_to_be_empty()
    shoot(page, "verdict-trace-wrong")

    # amp-step, right: the same timeline, nothing marked.
    submit(page, source("mixed-precision/amp-step", "solution.py"))
    expect(page.locator("#result-summary")).to_have_text("All checks passed. Well done!")
    expect(page.locator("#figure-trace tbody tr")).not_to_have_count(0)
    expect(page.locator("#figure-trace tr.marked")).to_have_count(0)

    # fix-underflow, wrong (no GradScaler) and right: both curves, labelled, with a text alternative.
    page.goto(f"{live_server}/lessons/mixed-precision/fix-underflow")
    for name in ("mistakes/no_scaler.py", "solution.py"):
        submit(page, source("mixed-precision/fix-underflow", name))
        for figure_id, title, y_label in (("loss", "Loss per step, against float32", "loss (MSE, log scale)"),
                                          ("zero-gradients", "Gradient values that are exactly zero",
                                           "share of gradient values (0-1)")):
            figure = page.locator(f"#figure-{figure_id}")
            expect(figure.locator(".figure-title")).to_have_text(title)
            chart = figure.locator("svg.chart")
            expect(chart).to_have_attribute("aria-label", re.compile("Line chart"))
            expect(chart.locator("text.label")).to_have_text(
                ["training step" if figure_id == "loss" else "optimizer step", y_label])
            expect(chart.locator("polyline.series")).to_have_count(2)
            expect(figure.locator(".legend li")).to_have_count(2)
            expect(figure.locator("figcaption")).not_to_be_empty()
        if name.startswith("mistakes"):
            expect(page.locator("#figure-trace tr.marked")).to_have_count(0)  # "no GradScaler" names no event
            shoot(page, "verdict-curves-wrong")
        else:
            expect(page.locator("#result-summary")).to_have_text("All checks passed. Well done!")
    drawn = page.evaluate("""() => performance.measure('verdict', 'academy-verdict-arrived',
                                                        'academy-verdict-drawn').duration""")
    assert 0 <= drawn < 2000, drawn  # benchmarks/verdict_pictures.py measures it side by side

"""The pages' third round (issue 53, bugs 1-5) in Chromium: the numbers a lesson is about shown exactly (65536, not
65540; a loss-scale chart's ticks at powers of two, 2^k), the lesson-end pages within a 390-px phone, the new
exercises' verdict tables stacked on a phone (nothing behind a sideways swipe, no serious axe finding), chart text
inside its chart at 1280 px with distinct integer ticks, and the deep-linking picker's radios beside their labels."""
from __future__ import annotations

import re
import tempfile

import pytest
from playwright.sync_api import Browser, Page, expect

from grader.core.course import load_course
from tests.support.browser import PHONE, VERDICT_TIMEOUT, serious_violations, set_code, source

pytestmark = [pytest.mark.browser]

COURSE = load_course()
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
TOKEN_WEIGHTED = ("gradient-accumulation", "token-weighted", "mistakes/micro-batch-count.py")
SKIPPED_STEPS = ("mixed-precision", "skipped-steps", "mistakes/advances_every_batch.py")
DDP_CLIP = ("gradient-accumulation", "ddp-clip", "mistakes/no-clipping.py")


def as_guest(browser: Browser, live_server: str, device: dict) -> Page:
    page = browser.new_context(**device).new_page()
    page.goto(f"{live_server}/")
    page.locator("form[action$='/auth/guest'] button").click()
    expect(page.locator("#account .who")).to_have_count(1)
    return page


def submitted(page: Page, live_server: str, exercise: tuple[str, str, str]) -> None:
    """`page` on the exercise's page with the verdict of the mistake's file shown."""
    lesson, step, mistake = exercise
    page.goto(f"{live_server}/lessons/{lesson}/{step}")
    page.wait_for_function("window.academyEditor !== undefined")
    set_code(page, source(f"{lesson}/{step}", mistake))
    page.get_by_role("button", name=re.compile("^Submit")).click()
    expect(page.locator("#result-summary")).to_be_visible(timeout=VERDICT_TIMEOUT)
    expect(page.locator("#result .pictures")).to_have_count(1)


def test_numbers_a_lesson_is_about_are_shown_exactly(browser: Browser, live_server: str) -> None:
    """Bug 1: integers whole, a loss scale's power of two as the cards write it; non-integers as before."""
    page = as_guest(browser, live_server, DESKTOP)
    page.goto(f"{live_server}/lessons/mixed-precision/amp-step")
    cells = page.evaluate("""() => {
        const result = {trace: {title: "t", caption: "c", group_label: "call", group: 1, groups: 1,
                                rows: [{event: 1, line: 3, call: "scaler.update()", scale: 65536},
                                       {event: 2, line: 3, call: "scaler.update()", scale: 32768.0},
                                       {event: 3, line: 3, call: "scaler.update()", scale: 1.5}]},
                        figures: [{kind: "table", id: "n", title: "t", caption: "c", alt: "a", marked_rows: [],
                                   columns: ["a", "b", "c", "d"], rows: [[65536, 123456789, 0.123456, 1e-7]]}]};
        const [section] = window.academyFigures.render(result, () => {});
        return {scale: [...section.querySelectorAll("table.trace td:last-child")].map((n) => n.textContent),
                table: [...section.querySelectorAll("#figure-n td")].map((n) => n.textContent)};
    }""")
    assert cells == {"scale": ["65536 (2^16)", "32768 (2^15)", "1.5"],
                     "table": ["65536", "123456789", "0.1235", "1.00e-7"]}, cells

    # amp-step's timeline, for real: the scale after the first update is GradScaler's 65536 (or half of it).
    page.goto(f"{live_server}/lessons/mixed-precision/amp-step")
    page.wait_for_function("window.academyEditor !== undefined")
    set_code(page, source("mixed-precision/amp-step", "solution.py"))
    page.get_by_role("button", name=re.compile("^Submit")).click()
    expect(page.locator("#result-summary")).to_be_visible(timeout=VERDICT_TIMEOUT)
    scales = [s for s in page.locator("#figure-trace td[data-label='Scale after']").all_inner_texts() if s]
    assert scales and all((m := re.fullmatch(r"(\d+) \(2\^(\d+)\)", s)) and int(m[1]) == 2 ** int(m[2])
                          for s in scales), scales

    # skipped-steps: the scale chart's ticks are powers of two, as its table writes them.
    submitted(page, live_server, SKIPPED_STEPS)
    table = " ".join(page.locator("#figure-batches td").all_inner_texts())
    ticks = page.locator("#figure-scale svg text.tick[text-anchor=end]").evaluate_all(
        "ns => ns.map((n) => n.textContent)")
    assert ticks and all(re.fullmatch(r"2\^\d+", tick) for tick in ticks), ticks
    after = [int(k) for k in re.findall(r"→ 2\^(\d+)", table)]  # the scales after each update, as the table says
    assert after and {f"2^{min(after)}", f"2^{max(after)}"} <= set(ticks), (ticks, table)
    assert len(set(ticks)) == len(ticks), ticks
    page.context.close()


@pytest.mark.parametrize("lesson", [lesson.id for lesson in COURSE.lessons[:-1]])
def test_lesson_end_pages_fit_a_phone(browser: Browser, live_server: str, lesson: str) -> None:
    """Bug 2: the "Next lesson: ..." button wraps instead of widening the page past 390 px."""
    page = browser.new_context(**PHONE).new_page()
    page.goto(f"{live_server}/lessons/{lesson}/end")
    following = COURSE.lessons[[lesson_.id for lesson_ in COURSE.lessons].index(lesson) + 1]
    expect(page.locator("#next")).to_contain_text(following.title)
    width = page.evaluate("document.documentElement.scrollWidth")
    box = page.locator("#next").bounding_box()
    assert width <= 390 and box["x"] >= 0 and box["x"] + box["width"] <= 390, (width, box)
    page.context.close()


@pytest.mark.parametrize("exercise", [TOKEN_WEIGHTED, SKIPPED_STEPS], ids=lambda e: e[1])
def test_verdict_tables_stack_on_a_phone(browser: Browser, live_server: str, exercise: tuple[str, str, str],
                                         shoot) -> None:  # noqa: ANN001
    """Bug 3: every cell of a verdict table in view without a sideways swipe, no blank band under hidden headers,
    and no serious axe finding (scrollable-region-focusable was one, on the table and on the prompt's code)."""
    page = as_guest(browser, live_server, PHONE)
    submitted(page, live_server, exercise)
    for figure in page.locator("#result .figure-table").all():
        sizes = figure.evaluate("""f => {
            const box = f.querySelector('.table-scroll'), table = f.querySelector('table');
            const r = box.getBoundingClientRect();
            const out = [...table.querySelectorAll('td')].filter((c) => c.offsetParent).map((c) => {
                const q = c.getBoundingClientRect(); return [q.left - r.left, r.right - q.right]; })
                .filter(([left, right]) => left < -1 || right < -1);
            const first = table.tBodies[0].rows[0].getBoundingClientRect().top - table.getBoundingClientRect().top;
            return {table: table.scrollWidth, box: box.clientWidth, boxScroll: box.scrollWidth, out: out.length,
                    first: first};
        }""")
        assert sizes["table"] <= sizes["box"] and sizes["boxScroll"] <= sizes["box"], sizes
        assert sizes["out"] == 0 and sizes["first"] < 20, sizes
        labels = figure.locator("td[data-label]").count()
        assert labels == figure.locator("td").count() > 0  # each value stacked under its column's name
    verdict = page.locator("#result").evaluate("n => [n.scrollWidth, n.clientWidth]")
    assert verdict[0] <= verdict[1], verdict
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shoot(page, f"53-phone-verdict-{exercise[1]}")
    assert serious_violations(page) == []
    page.context.close()


def test_code_blocks_fit_a_phone(browser: Browser, live_server: str) -> None:
    """Bug 3's code block: a card's code wraps on a phone instead of scrolling sideways in a box the keyboard could
    not scroll (axe's scrollable-region-focusable, serious)."""
    page = browser.new_context(**PHONE).new_page()
    page.goto(f"{live_server}/lessons/gradient-accumulation/the-full-accumulation-loop")
    sizes = page.locator(".prose pre").evaluate_all("ns => ns.map((n) => [n.scrollWidth, n.clientWidth])")
    assert sizes and all(scrolled <= width for scrolled, width in sizes), sizes
    assert serious_violations(page) == []
    page.context.close()


def chart_text(page: Page, figure: str) -> dict:
    """Each text of the figure's chart, and those drawn outside the chart's box."""
    return page.locator(f"#figure-{figure} svg.chart").evaluate("""svg => {
        const r = svg.getBoundingClientRect();
        const texts = [...svg.querySelectorAll('text')];
        return {cut: texts.filter((t) => { const q = t.getBoundingClientRect();
                                          return q.left < r.left - 1 || q.right > r.right + 1
                                              || q.top < r.top - 1 || q.bottom > r.bottom + 1; })
                          .map((t) => t.textContent),
                x: [...svg.querySelectorAll('text.tick[text-anchor=middle]')].map((t) => t.textContent)};
    }""")


def test_chart_text_inside_its_chart_at_1280_px(browser: Browser, live_server: str, shoot) -> None:  # noqa: ANN001
    """Bug 4: token-weighted's y-axis title whole, its 3 updates ticked 1, 2, 3; ddp-clip's bar labels whole."""
    page = as_guest(browser, live_server, DESKTOP)
    submitted(page, live_server, TOKEN_WEIGHTED)
    drawn = chart_text(page, "gradient-error")
    assert drawn == {"cut": [], "x": ["1", "2", "3"]}, drawn
    shoot(page, "53-token-weighted-chart")
    submitted(page, live_server, DDP_CLIP)
    drawn = chart_text(page, "norms")
    assert drawn["cut"] == [], drawn
    labels = page.locator("#figure-norms svg text").evaluate_all("ns => ns.map((n) => n.textContent)")
    assert any(re.fullmatch(r"window \d+: all-reduced, before clipping", label) for label in labels), labels
    shoot(page, "53-ddp-clip-chart")
    page.context.close()


def test_deep_linking_radios_sit_beside_their_labels(browser: Browser, live_server: str) -> None:
    """Bug 5: the picker (lti/pick.html, rendered as a deep-linking launch renders it), each radio on its label's
    first line, just before its text."""
    from flask import render_template

    from academy.data.models import LtiPlatform
    from academy.lti.blueprint import current_course
    from tests.support.apps import ready_app

    app = ready_app({"INSTANCE_PATH": tempfile.mkdtemp(prefix="dla-pick-"), "SECRET_KEY": "test",
                     "REQUEUE_ON_START": False})
    with app.test_request_context("/lti/launch", method="POST"):
        app.preprocess_request()
        html = render_template("lti/pick.html", launch_id="lti1p3-launch-x", course=current_course(),
                               platform=LtiPlatform(name="Test LMS"))
    for device in (DESKTOP, PHONE):
        page = browser.new_context(**device).new_page()
        page.goto(f"{live_server}/")  # the page's origin, so its stylesheet loads as the live one does
        page.set_content(html)
        expect(page.locator("#lti-pick input[type=radio]")).not_to_have_count(0)
        boxes = page.locator("#lti-pick label").evaluate_all("""labels => labels.map((label) => {
            const radio = label.querySelector('input[type=radio]').getBoundingClientRect();
            const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT,
                                                     (n) => n.data.trim() ? NodeFilter.FILTER_ACCEPT
                                                                          : NodeFilter.FILTER_SKIP);
            const range = document.createRange();
            range.selectNodeContents(walker.nextNode());  // the label's first words: their first line
            const text = range.getClientRects()[0];
            return {gap: text.left - radio.right, middle: Math.abs((radio.top + radio.bottom) / 2
                                                                    - (text.top + text.bottom) / 2)};
        })""")
        for box in boxes:
            assert 0 <= box["gap"] <= 16 and box["middle"] <= 6, boxes
        page.context.close()

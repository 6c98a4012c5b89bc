"""The phone layout (390x844, touch) in Chromium: a one-line header, Back/Next on one line, the editor right
after the prompt with Submit reachable, 24x24 px step targets, no keyboard hints, a bounded output panel."""
from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import PHONE

pytestmark = [pytest.mark.browser]

LESSON = "mixed-precision"


def no_horizontal_overflow(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def one_line(page: Page, selector: str) -> None:
    tops = page.eval_on_selector_all(f"{selector} > *, {selector} nav > *",
                                     "nodes => nodes.filter(n => n.offsetParent).map(n => n.getBoundingClientRect())"
                                     ".map(r => Math.round(r.top + r.height / 2))")
    assert max(tops) - min(tops) <= 6, (selector, tops)


def assert_step_bar_fits(page: Page) -> None:
    """On a phone the step bar is one row (it wrapped into what looked like a second bar), and the steps are
    a list of links behind its summary, each at least 24 px high and as wide as the list; every header control
    is at least 24x24 px."""
    expect(page.locator("nav.steps")).to_be_hidden()
    tops = page.locator(".steps-meter span").evaluate_all("ns => ns.map(n => n.getBoundingClientRect().top)")
    assert len(tops) == page.locator(".steps-meter span").count() > 0 and max(tops) - min(tops) < 1, tops
    menu = page.locator("#step-menu")
    menu.locator("summary").click()
    links = menu.locator("li a")
    for box in links.evaluate_all("ns => ns.map(n => n.getBoundingClientRect().toJSON())"):
        assert box["height"] >= 24 and box["width"] >= 300, box
    expect(menu.locator("li a[aria-current=step]")).to_have_count(1)
    menu.locator("summary").click()
    for box in page.locator(".topbar nav a, .topbar nav button, .topbar nav select").evaluate_all(
            "ns => ns.filter(n => n.offsetParent).map(n => n.getBoundingClientRect().toJSON())"):
        assert box["width"] >= 24 and box["height"] >= 24, box


def test_phone_layout(browser: Browser, live_server: str, shoot) -> None:  # noqa: ANN001
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.goto(f"{live_server}/lessons/{LESSON}/meet-autocast")
    one_line(page, ".topbar")
    no_horizontal_overflow(page)
    assert_step_bar_fits(page)
    expect(page.locator(".pager .hint")).to_be_hidden()  # keyboard hints: not on touch screens
    back, forward = page.locator("#prev").bounding_box(), page.locator("#next").bounding_box()
    assert abs(back["y"] - forward["y"]) < 2 and back["height"] < 50 and forward["height"] < 50
    shoot(page, "22-phone-card")

    page.goto(f"{live_server}/lessons/{LESSON}/amp-step")
    expect(page.locator(".cm-editor")).to_be_visible()
    no_horizontal_overflow(page)
    # The prompt names the function (issue 53 dropped the "Write ..." line that said it again).
    prompt, editor = page.locator(".exercise-body > .prose").bounding_box(), page.locator("#editor").bounding_box()
    assert 0 <= editor["y"] - (prompt["y"] + prompt["height"]) < 40  # the editor right after the prompt
    expect(page.locator(".editor-tools .keys")).to_be_hidden()
    page.locator("#editor").scroll_into_view_if_needed()
    page.mouse.wheel(0, 300)
    submit = page.get_by_role("button", name="Submit")
    box = submit.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= 844  # reachable where the editor is
    submit.tap()
    expect(page.locator("#result-summary")).to_be_visible(timeout=90_000)
    height = page.locator("#result").evaluate("n => getComputedStyle(n).maxHeight")
    assert height.endswith("px") and float(height[:-2]) <= 844 * 0.5 + 1
    shoot(page, "23-phone-exercise")

    for prefix in ("", "/ja", "/ar"):  # a guest now: the header still fits one line, in every script
        page.goto(f"{live_server}{prefix}/")
        expect(page.locator("#signout-link")).to_be_visible()  # a guest's name is left out on a phone
        one_line(page, ".topbar")
        no_horizontal_overflow(page)
        page.goto(f"{live_server}{prefix}/lessons/{LESSON}/amp-step")
        one_line(page, ".topbar")
        no_horizontal_overflow(page)
    context.close()

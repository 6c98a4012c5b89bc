"""Dark mode in Chromium: it follows prefers-color-scheme, the header's switch overrides it (kept across
pages), and the editor and the code blocks follow too. Reduced motion follows the system as well."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser]

LESSON = "mixed-precision"


def background(page: Page, selector: str) -> tuple[int, ...]:
    colour = page.eval_on_selector(selector, "n => getComputedStyle(n).backgroundColor")
    return tuple(int(float(part)) for part in colour[colour.index("(") + 1:-1].split(",")[:3])


def is_dark(rgb: tuple[int, ...]) -> bool:
    return sum(rgb) < 3 * 80


def test_dark_mode_follows_the_system_and_the_switch(page: Page, live_server: str, shoot) -> None:  # noqa: ANN001
    page.emulate_media(color_scheme="dark")
    page.goto(f"{live_server}/lessons/{LESSON}/meet-autocast")
    assert is_dark(background(page, "body")) and is_dark(background(page, ".step-card"))
    assert is_dark(background(page, ".prose pre.highlight"))
    keyword = page.eval_on_selector(".prose pre.highlight .k", "n => getComputedStyle(n).color")
    assert keyword == "rgb(255, 123, 114)"  # github-dark's keyword colour
    expect(page.locator("#theme-switch")).to_have_attribute("aria-pressed", "true")

    page.goto(f"{live_server}/lessons/{LESSON}/amp-step")
    expect(page.locator(".cm-editor")).to_be_visible()
    assert is_dark(background(page, ".cm-editor")) and is_dark(background(page, ".cm-gutters"))
    keyword = page.locator(".cm-content .tok-keyword").first
    expect(keyword).to_have_css("color", "rgb(255, 123, 114)")
    shoot(page, "21-dark-exercise")

    # The switch picks light over the system's dark, and the choice stays on the next page.
    page.get_by_role("button", name="Dark mode").click()
    expect(page.locator("#theme-switch")).to_have_attribute("aria-pressed", "false")
    assert not is_dark(background(page, "body")) and not is_dark(background(page, ".cm-editor"))
    page.goto(f"{live_server}/")
    assert not is_dark(background(page, "body"))
    page.get_by_role("button", name="Dark mode").click()
    assert is_dark(background(page, "body"))
    page.emulate_media(color_scheme="light")
    page.reload()
    assert is_dark(background(page, "body"))  # the switch's choice wins over the system


def test_the_spinner_stands_still_for_whoever_asks_for_reduced_motion(page: Page, live_server: str) -> None:
    page.goto(f"{live_server}/lessons/{LESSON}/amp-step")
    page.evaluate("document.body.append(Object.assign(document.createElement('div'), {className: 'spinner'}))")
    animation = "n => getComputedStyle(n).animationName"
    page.emulate_media(reduced_motion="no-preference")
    assert page.eval_on_selector("div.spinner", animation) == "spin"
    page.emulate_media(reduced_motion="reduce")
    assert page.eval_on_selector("div.spinner", animation) == "none"

"""Languages in Chromium: lesson 1 in Italian, Japanese and Arabic shows the seeds' title and summary, its cards
translated, and the seeds' notice where English remains (an exercise's prompt);
Arabic is right-to-left with left-to-right code and editor, and its arrow keys follow the reading direction;
Japanese fits a 390 px phone. With DLA_UPDATE_SCREENSHOTS=1 it also writes the README's screenshots
(docs/web-lesson-ja-phone.png, docs/web-lesson-ar.png); they are always under artifacts/browser/."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.languages import EXPECTED, translated_cards
from tests.support.paths import REPO

pytestmark = [pytest.mark.browser]

LESSON = "mixed-precision"


def for_readme(shot: Path, name: str) -> None:
    if os.environ.get("DLA_UPDATE_SCREENSHOTS") == "1":
        shutil.copy(shot, REPO / "docs" / name)
FIRST = f"/lessons/{LESSON}/what-mixed-precision-means"
# '語' and '精' drawn on a canvas in the font of the element `selector`: the alpha of each's pixels compared.
GLYPHS = """async (selector) => {
  await document.fonts.ready;
  const font = "32px " + getComputedStyle(document.querySelector(selector)).fontFamily;
  const alpha = (text) => {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 40;
    const context = canvas.getContext("2d");
    context.font = font;
    context.textBaseline = "top";
    context.fillText(text, 4, 4);
    return context.getImageData(0, 0, 40, 40).data.filter((value, i) => i % 4 === 3);
  };
  const [first, second] = [alpha("語"), alpha("精")];
  return {font, inked: first.some((v) => v > 0) && second.some((v) => v > 0),
          differ: first.some((v, i) => v !== second[i])};
}"""


def test_lesson_one_in_three_languages(page: Page, live_server: str, shoot) -> None:  # noqa: ANN001
    for code, (title, summary, notice) in EXPECTED.items():
        page.goto(f"{live_server}/{code}{FIRST}")
        expect(page.locator(".lesson-head")).to_contain_text(title)
        expect(page.locator(".lesson-summary")).to_have_text(summary)
        expect(page.locator("#not-translated")).to_have_count(0)  # the card is translated
        assert page.title().startswith(translated_cards(code)["01-what-mixed-precision-means.md"][0] + " · " + title)
        page.goto(f"{live_server}/{code}/lessons/{LESSON}/amp-step")
        expect(page.locator("#not-translated")).to_have_text(notice)  # its prompt is still English
        expect(page.locator(".exercise-body .prose")).to_have_attribute("lang", "en")
        page.goto(f"{live_server}/{code}{FIRST}")
    # Arabic: right to left, mirrored (Next on the left), code left to right, arrows follow the reading.
    assert page.evaluate("document.documentElement.dir") == "rtl"
    assert page.locator("#next").bounding_box()["x"] < page.locator(".pager .hint").bounding_box()["x"]
    page.get_by_role("link", name=re.compile("التالي")).click()
    page.wait_for_load_state()
    page.keyboard.press("ArrowRight")  # back, in a right-to-left page
    expect(page).to_have_url(re.compile(rf"/ar{FIRST}$"))
    page.wait_for_load_state()
    page.keyboard.press("ArrowLeft")
    expect(page).to_have_url(re.compile(r"/ar/lessons/mixed-precision/why-half-precision-is-faster$"))
    page.goto(f"{live_server}/ar/lessons/{LESSON}/meet-autocast")
    assert page.eval_on_selector(".prose pre", "n => getComputedStyle(n).direction") == "ltr"
    page.goto(f"{live_server}/ar/lessons/{LESSON}/amp-step")
    expect(page.locator(".cm-editor")).to_be_visible()
    assert page.eval_on_selector(".cm-content", "n => getComputedStyle(n).direction") == "ltr"
    expect(page.get_by_role("textbox", name="محرر الشيفرة: حلّك لـ amp-step")).to_be_visible()  # lesson.js's text
    assert page.eval_on_selector("body", "n => getComputedStyle(n).direction") == "rtl"
    for_readme(shoot(page, "24-lesson-ar"), "web-lesson-ar.png")
    # CodeMirror's own phrases come in the page's language too (i18n.EDITOR_PHRASES): its search panel.
    page.locator(".cm-content").click()
    page.keyboard.press("Control+f")
    expect(page.get_by_role("textbox", name="بحث", exact=True)).to_be_focused()
    expect(page.locator(".cm-search button[name=close]")).to_have_attribute("aria-label", "إغلاق")


def test_japanese_on_a_phone(browser: Browser, live_server: str, shoot) -> None:  # noqa: ANN001
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  locale="ja-JP", extra_http_headers={"Accept-Language": "ja"})
    page = context.new_page()
    page.goto(f"{live_server}{FIRST}")  # no language in the URL: Accept-Language picks Japanese
    expect(page).to_have_url(re.compile(rf"/ja{FIRST}$"))
    expect(page.locator(".lesson-summary")).to_have_text(EXPECTED["ja"][1])
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # A CJK font is installed (scripts/setup-system: fonts-noto-cjk), so the glyphs are real, not boxes: two
    # different kanji drawn in the page's font differ, where missing glyphs would be the same box (or nothing).
    glyphs = page.evaluate(GLYPHS, ".lesson-summary")
    assert glyphs["inked"] and glyphs["differ"], glyphs
    page.locator("#language").select_option("it")
    expect(page).to_have_url(re.compile(rf"/it{FIRST}$"))
    page.goto(f"{live_server}/ja{FIRST}")
    for_readme(shoot(page, "25-lesson-ja-phone"), "web-lesson-ja-phone.png")
    context.close()

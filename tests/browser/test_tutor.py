"""The tutor in the browser: a learner submits a failing amp-step, asks about the failed check and reads an
answer that streams in and cites the card and the learner's line; the same in Arabic on a phone. A live server of
its own, pointed at the real embedded model (tests/conftest.py: tutor_model)."""
from __future__ import annotations

import re
from typing import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import PHONE, running_server
from tests.support.paths import EXERCISES

pytestmark = pytest.mark.browser
LESSON, STEP = "mixed-precision", "amp-step"
RAW_BACKWARD = (EXERCISES / LESSON / STEP / "mistakes" / "raw_backward.py").read_text()
MAX_TOKENS = 32  # enough to stream in several pieces and show the sources; each token costs ~0.1 s
# Counts how often the answer's text grew while it streamed (each `token` event appends to it).
COUNT_GROWTH = """() => {
  window.tutorGrowth = 0;
  new MutationObserver(() => { window.tutorGrowth += 1; })
    .observe(document.getElementById("tutor-log"), {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture(scope="module")
def tutor_server(tmp_path_factory: pytest.TempPathFactory, tutor_model) -> Iterator[str]:  # noqa: ANN001
    with running_server(tmp_path_factory.mktemp("tutor-instance"), DLA_GRADING_WORKERS="1", DLA_WARM_POOL="0",
                        DLA_TUTOR_URL=tutor_model.url, DLA_TUTOR_MAX_TOKENS=str(MAX_TOKENS)) as url:
        yield url


def _fail_then_ask(page: Page, url: str, submit: str, question: str, line: str) -> str:
    page.goto(url)
    page.wait_for_function("() => window.academyEditor !== undefined")
    page.evaluate("code => window.academyEditor.setCode(code)", RAW_BACKWARD)
    page.get_by_role("button", name=re.compile("^" + submit)).click()
    expect(page.locator("li.check.fail").first).to_be_visible(timeout=120_000)
    page.evaluate(COUNT_GROWTH)
    page.locator("#tutor-question").fill(question)
    page.locator("#tutor-ask").click()
    expect(page.locator("#tutor-stop")).to_be_visible()  # while the answer streams, Stop is offered
    answer = page.locator("#tutor-log .from-tutor").last
    sources = answer.locator(".tutor-sources")
    expect(sources).to_be_visible(timeout=120_000)
    assert answer.locator(".tutor-text").inner_text().strip()
    assert page.evaluate("window.tutorGrowth") >= 3  # the text grew piece by piece, not in one go
    expect(sources.locator("a[data-kind=card]").first).to_have_attribute("href", re.compile(f"/lessons/{LESSON}/"))
    expect(sources.locator("a[data-kind=line]")).to_have_text(line)
    expect(sources.locator("a[data-kind=check]").first).to_have_attribute("href", re.compile("#result$"))
    expect(page.locator("#tutor-stop")).to_be_hidden()
    return answer.locator(".tutor-text").inner_text()


def test_a_learner_asks_about_a_failed_check(page: Page, tutor_server: str, shoot) -> None:  # noqa: ANN001
    _fail_then_ask(page, f"{tutor_server}/lessons/{LESSON}/{STEP}", "Submit",
                   "Why does the check 'Backward runs on the scaled loss' fail?", "your line 11")
    shoot(page, "tutor-answer")


def test_the_same_in_arabic_on_a_phone(browser: Browser, tutor_server: str, shoot) -> None:  # noqa: ANN001
    context = browser.new_context(**PHONE)
    page = context.new_page()
    try:
        text = _fail_then_ask(page, f"{tutor_server}/ar/lessons/{LESSON}/{STEP}", "إرسال",
                              "لماذا يفشل فحص الانتشار الخلفي؟", "سطرك 11")
        # The embedded model is asked for English (in Arabic it writes only repetition): the panel says so, in Arabic
        # once the catalogs have it; and an answer not in Arabic carries a note saying so, under it.
        expect(page.locator("#tutor-english")).to_be_visible()
        letters = [c for c in re.sub(r"`[^`]*`", "", text) if c.isalpha()]
        arabic = [c for c in letters if "\u0600" <= c <= "\u06ff"]
        note = page.locator("#tutor-log .from-tutor").last.locator(".tutor-language")
        if len(letters) >= 12 and len(arabic) < len(letters) / 2:
            expect(note).to_be_visible()
        else:
            expect(note).to_have_count(0)
        assert page.evaluate("document.documentElement.dir") == "rtl"
        panel = page.locator("#tutor").bounding_box()
        assert panel["x"] >= 0 and panel["x"] + panel["width"] <= 390  # fits the phone's width
        expect(page.locator("#tutor-title")).to_have_text("اسأل المعلّم المساعد")
        shoot(page, "tutor-answer-ar-phone")
    finally:
        context.close()

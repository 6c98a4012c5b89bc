"""Issue 53's verdict and Run panels attacked in Chromium (red team): the learner's own text (what the code prints,
its exception's message, which the checks' messages quote) now reaches the page through new paths: the grader's
English isolated in <bdi> and <span dir=ltr> (`english`, `englishLine`, `nodesT`), code between backticks made
<code>, refusal notices above the verdict. On an Arabic page, where every one of those paths is taken, markup in
that text stays text: no element is made from it and no handler runs."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from tests.support.browser import VERDICT_TIMEOUT, guest_on, set_code

pytestmark = [pytest.mark.browser]

HOSTILE = '''
print('<img id="rt53-printed" src="x" onerror="window.rt53 = 1"> `<b id="rt53-printed-code">b</b>`')


def train_step(model, optimizer, scaler, loss_fn, x, y):
    raise ValueError('`<img id="rt53-code" src="x" onerror="window.rt53 = 2">` and '
                     '<svg id="rt53-svg" onload="window.rt53 = 3"></svg> `x`')
'''
INJECTED = "#rt53-printed, #rt53-printed-code, #rt53-code, #rt53-svg, img[src='x']"


def test_the_learners_text_stays_text_in_the_verdict_and_the_run(browser: Browser, live_server: str) -> None:
    page = browser.new_context().new_page()
    guest_on(page, live_server, "/ar")
    set_code(page, HOSTILE)
    page.locator("#submit-code").click()
    expect(page.locator("#result-summary")).to_be_visible(timeout=VERDICT_TIMEOUT)
    expect(page.locator("#result")).to_contain_text('<svg id="rt53-svg"', timeout=VERDICT_TIMEOUT)
    page.locator("#run-code").click()
    expect(page.locator("#run-output")).to_contain_text('<img id="rt53-code"', timeout=VERDICT_TIMEOUT)
    page.wait_for_timeout(300)  # an image's error handler would have run by now
    assert page.locator(INJECTED).count() == 0
    assert page.evaluate("window.rt53") is None
    # The message's backticks made <code> of the learner's text, as text.
    codes = page.locator("#result code, #run-output code").all_inner_texts()
    assert any(re.search(r'<img id="rt53-code"', text) for text in codes), codes

"""The tutor in the browser: a learner submits a failing amp-step, asks about the failed check and reads an
answer that streams in and cites the card and the learner's line; the same in Arabic on a phone. A live server of
its own, pointed at the real embedded model (tests/conftest.py: tutor_model)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from typing import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.test_phone import PHONE
from tests.helpers import EXERCISES, REPO, free_port

pytestmark = pytest.mark.browser
LESSON, STEP = "mixed-precision", "amp-step"
RAW_BACKWARD = (EXERCISES / LESSON / STEP / "mistakes" / "raw_backward.py").read_text()
# Counts how often the answer's text grew while it streamed (each `token` event appends to it).
COUNT_GROWTH = """() => {
  window.tutorGrowth = 0;
  new MutationObserver(() => { window.tutorGrowth += 1; })
    .observe(document.getElementById("tutor-log"), {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture(scope="module")
def tutor_server(tmp_path_factory: pytest.TempPathFactory, tutor_model) -> Iterator[str]:  # noqa: ANN001
    instance = tmp_path_factory.mktemp("tutor-instance")
    env = {**os.environ, "DLA_INSTANCE": str(instance), "DLA_SANDBOX": "local", "DLA_GRADING_WORKERS": "1",
           "DLA_WARM_POOL": "0", "DLA_TUTOR_URL": tutor_model.url, "DLA_TUTOR_MAX_TOKENS": "40",
           "PYTHONUNBUFFERED": "1"}
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES", "SECRET_KEY"):
        env.pop(name, None)
    subprocess.run([sys.executable, "-m", "flask", "--app", "academy", "init-db"], env=env, cwd=REPO, check=True,
                   capture_output=True, timeout=120)
    port = free_port()
    log = open(instance / "server.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "flask", "--app", "academy", "run", "--port", str(port),
                               "--no-reload", "--no-debugger"], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=2)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"the server did not start: {(instance / 'server.log').read_text()[-3000:]}")
            time.sleep(0.2)
    yield url
    server.terminate()
    server.wait(timeout=10)
    log.close()


def _fail_then_ask(page: Page, url: str, submit: str, question: str, line: str) -> None:
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


def test_a_learner_asks_about_a_failed_check(page: Page, tutor_server: str, shoot) -> None:  # noqa: ANN001
    _fail_then_ask(page, f"{tutor_server}/lessons/{LESSON}/{STEP}", "Submit",
                   "Why does the check 'Backward runs on the scaled loss' fail?", "your line 11")
    shoot(page, "tutor-answer")


def test_the_same_in_arabic_on_a_phone(browser: Browser, tutor_server: str, shoot) -> None:  # noqa: ANN001
    context = browser.new_context(**PHONE)
    page = context.new_page()
    try:
        _fail_then_ask(page, f"{tutor_server}/ar/lessons/{LESSON}/{STEP}", "إرسال",
                       "لماذا يفشل فحص الانتشار الخلفي؟", "سطرك 11")
        assert page.evaluate("document.documentElement.dir") == "rtl"
        panel = page.locator("#tutor").bounding_box()
        assert panel["x"] >= 0 and panel["x"] + panel["width"] <= 390  # fits the phone's width
        expect(page.locator("#tutor-title")).to_have_text("اسأل المعلّم المساعد")
        shoot(page, "tutor-answer-ar-phone")
    finally:
        context.close()

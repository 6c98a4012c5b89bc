"""Learner pages: course, one step at a time with a resume point, quiz graded on the server, drafts."""
from __future__ import annotations

import json
import re

from academy.content import render_markdown
from tests.web.conftest import EXERCISE, LESSON, new_browser


def test_course_page_lists_lessons_for_anyone(browser) -> None:  # noqa: ANN001
    page = browser.client.get("/").get_data(as_text=True)
    assert "Mixed precision with autocast and GradScaler" in page
    assert "Start as a guest" in page


def test_lesson_pages_need_a_user(browser) -> None:  # noqa: ANN001
    response = browser.client.get(f"/lessons/{LESSON}/3")
    assert response.status_code == 302 and "/auth/signin?next=" in response.location


def test_one_step_at_a_time_with_back_next_and_progress(browser) -> None:  # noqa: ANN001
    browser.guest()
    page = browser.client.get(f"/lessons/{LESSON}/4").get_data(as_text=True)
    assert "<h1>Meet autocast</h1>" in page and "Step 4 of 15" in page
    assert f'href="/lessons/{LESSON}/3"' in page and f'href="/lessons/{LESSON}/5"' in page
    assert page.count('class="seg ') == 15 and page.count(" current") == 1
    assert '<pre class="highlight"><code><span class="k">with</span>' in page  # Pygments, not escaped twice
    assert browser.client.get(f"/lessons/{LESSON}/16").status_code == 404
    assert browser.client.get(f"/lessons/{LESSON}/0").status_code == 404
    assert browser.client.get("/lessons/no-such-lesson/1").status_code == 404


def test_resume_point_and_course_progress(browser) -> None:  # noqa: ANN001
    browser.guest()
    assert browser.client.get(f"/lessons/{LESSON}").location.endswith(f"/lessons/{LESSON}/1")
    for number in (1, 2, 3, 7):
        browser.client.get(f"/lessons/{LESSON}/{number}")
    browser.client.get(f"/lessons/{LESSON}/6")  # going back moves the resume point, not the furthest read
    assert browser.client.get(f"/lessons/{LESSON}").location.endswith(f"/lessons/{LESSON}/6")
    course = browser.client.get("/").get_data(as_text=True)
    assert "7 of 15 steps done" in course
    progress = browser.api("GET", "/api/progress").json
    lesson = next(item for item in progress["lessons"] if item["lesson"] == LESSON)
    assert lesson["steps_done"] == 7 and lesson["resume_step"] == 6


def test_quiz_answer_is_graded_on_the_server(browser) -> None:  # noqa: ANN001
    browser.guest()
    url = f"/lessons/{LESSON}/14"
    page = browser.client.get(url).get_data(as_text=True)
    assert "A GradScaler" in page and "Right. GradScaler" not in page and "correct" not in page.lower()
    wrong = browser.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"choice": "3"})
    assert wrong.location.endswith(f"{url}#q-vanishing-gradients")
    page = browser.client.get(url).get_data(as_text=True)
    assert "Not quite." in page and "already underflowed to zero" in page
    browser.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"choice": "0"})
    page = browser.client.get(url).get_data(as_text=True)
    assert "Correct." in page and "Right. GradScaler multiplies" in page
    assert "15 steps done" in browser.client.get("/").get_data(as_text=True)


def test_quiz_rejects_bad_choices(browser) -> None:  # noqa: ANN001
    browser.guest()
    for choice in ("9", "-1", "x", ""):
        assert browser.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"choice": choice}).status_code == 400
    assert browser.post(f"/lessons/{LESSON}/quiz/no-such-question", data={"choice": "0"}).status_code == 404


def test_exercise_step_holds_starter_then_draft(browser) -> None:  # noqa: ANN001
    browser.guest()

    def editor_state() -> dict:
        page = browser.client.get(f"/lessons/{LESSON}/11").get_data(as_text=True)
        return json.loads(re.search(r'<script type="application/json" id="exercise-data">(.*?)</script>',
                                    page, re.S).group(1))
    state = editor_state()
    assert state["exercise"] == EXERCISE and state["code"] == state["starter"] and state["latest"] is None
    hostile = 'x = "</script><script>alert(1)</script>"\n'
    assert browser.api("PUT", f"/api/drafts/{EXERCISE}", {"code": hostile}).status_code == 204
    page = browser.client.get(f"/lessons/{LESSON}/11").get_data(as_text=True)
    assert "<script>alert(1)" not in page  # tojson escapes < and > inside the data block
    assert editor_state()["code"] == hostile
    other = new_browser(browser.client.application).guest()  # drafts are private
    assert editor_state()["code"] == hostile
    page = other.client.get(f"/lessons/{LESSON}/11").get_data(as_text=True)
    assert "alert(1)" not in page


def test_drafts_need_a_known_exercise_and_a_csrf_token(browser) -> None:  # noqa: ANN001
    browser.guest()
    assert browser.api("PUT", "/api/drafts/nope/nothing", {"code": "x"}).status_code == 404
    no_token = browser.client.put(f"/api/drafts/{EXERCISE}", json={"code": "x"})
    assert no_token.status_code == 400 and "CSRF" in no_token.json["error"]


def test_markdown_is_highlighted_and_sanitised() -> None:
    html = render_markdown("```python\nx = 1\n```\n\n<script>alert(1)</script>\n\n[a](javascript:alert(1)) "
                           "<img src=x onerror=alert(1)>")
    assert html.startswith('<pre class="highlight"><code><span class="n">x</span>')
    assert "<script" not in html and "<img" not in html and "href=\"javascript" not in html

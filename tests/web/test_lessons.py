"""Learner pages: course, one step at a time with a resume point, quiz graded on the server, drafts."""
from __future__ import annotations

import json
import re

from academy.content import render_markdown
from tests.helpers import EXERCISE, LESSON, new_session


def test_course_page_lists_lessons_for_anyone(web) -> None:  # noqa: ANN001
    page = web.client.get("/").get_data(as_text=True)
    assert "Mixed precision with autocast and GradScaler" in page
    assert "Start as a guest" in page


def test_lesson_pages_need_a_user(web) -> None:  # noqa: ANN001
    response = web.client.get(f"/lessons/{LESSON}/3")
    assert response.status_code == 302 and "/auth/signin?next=" in response.location


def test_one_step_at_a_time_with_back_next_and_progress(web) -> None:  # noqa: ANN001
    web.guest()
    page = web.client.get(f"/lessons/{LESSON}/4").get_data(as_text=True)
    assert "<h1>Meet autocast</h1>" in page and "Step 4 of 15" in page
    assert f'href="/lessons/{LESSON}/3"' in page and f'href="/lessons/{LESSON}/5"' in page
    assert page.count('class="seg ') == 15 and page.count(" current") == 1
    assert '<pre class="highlight"><code><span class="k">with</span>' in page  # Pygments, not escaped twice
    assert web.client.get(f"/lessons/{LESSON}/16").status_code == 404
    assert web.client.get(f"/lessons/{LESSON}/0").status_code == 404
    assert web.client.get("/lessons/no-such-lesson/1").status_code == 404


def test_resume_point_and_course_progress(web) -> None:  # noqa: ANN001
    web.guest()
    assert web.client.get(f"/lessons/{LESSON}").location.endswith(f"/lessons/{LESSON}/1")
    for number in (1, 2, 3, 7):
        web.client.get(f"/lessons/{LESSON}/{number}")
    web.client.get(f"/lessons/{LESSON}/6")  # going back moves the resume point, not the furthest read
    assert web.client.get(f"/lessons/{LESSON}").location.endswith(f"/lessons/{LESSON}/6")
    course = web.client.get("/").get_data(as_text=True)
    assert "7 of 15 steps done" in course
    progress = web.api("GET", "/api/progress").json
    lesson = next(item for item in progress["lessons"] if item["lesson"] == LESSON)
    assert lesson["steps_done"] == 7 and lesson["resume_step"] == 6


def test_quiz_answer_is_graded_on_the_server(web) -> None:  # noqa: ANN001
    web.guest()
    url = f"/lessons/{LESSON}/14"
    page = web.client.get(url).get_data(as_text=True)
    assert "A GradScaler" in page and "Right. GradScaler" not in page and "correct" not in page.lower()
    wrong = web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"choice": "3"})
    assert wrong.location.endswith(f"{url}#q-vanishing-gradients")
    page = web.client.get(url).get_data(as_text=True)
    assert "Not quite." in page and "already underflowed to zero" in page
    web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"choice": "0"})
    page = web.client.get(url).get_data(as_text=True)
    assert "Correct." in page and "Right. GradScaler multiplies" in page
    assert "15 steps done" in web.client.get("/").get_data(as_text=True)


def test_quiz_rejects_bad_choices(web) -> None:  # noqa: ANN001
    web.guest()
    for choice in ("9", "-1", "x", ""):
        assert web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"choice": choice}).status_code == 400
    assert web.post(f"/lessons/{LESSON}/quiz/no-such-question", data={"choice": "0"}).status_code == 404


def test_exercise_step_holds_starter_then_draft(web) -> None:  # noqa: ANN001
    web.guest()

    def editor_state() -> dict:
        page = web.client.get(f"/lessons/{LESSON}/11").get_data(as_text=True)
        return json.loads(re.search(r'<script type="application/json" id="exercise-data">(.*?)</script>',
                                    page, re.S).group(1))
    state = editor_state()
    assert state["exercise"] == EXERCISE and state["code"] == state["starter"] and state["latest"] is None
    hostile = 'x = "</script><script>alert(1)</script>"\n'
    assert web.api("PUT", f"/api/drafts/{EXERCISE}", {"code": hostile}).status_code == 204
    page = web.client.get(f"/lessons/{LESSON}/11").get_data(as_text=True)
    assert "<script>alert(1)" not in page  # tojson escapes < and > inside the data block
    assert editor_state()["code"] == hostile
    other = new_session(web.client.application).guest()  # drafts are private
    assert editor_state()["code"] == hostile
    page = other.client.get(f"/lessons/{LESSON}/11").get_data(as_text=True)
    assert "alert(1)" not in page


def test_drafts_need_a_known_exercise_and_a_csrf_token(web) -> None:  # noqa: ANN001
    web.guest()
    assert web.api("PUT", "/api/drafts/nope/nothing", {"code": "x"}).status_code == 404
    no_token = web.client.put(f"/api/drafts/{EXERCISE}", json={"code": "x"})
    assert no_token.status_code == 400 and "CSRF" in no_token.json["error"]


def test_markdown_is_highlighted_and_sanitised() -> None:
    html = render_markdown("```python\nx = 1\n```\n\n<script>alert(1)</script>\n\n[a](javascript:alert(1)) "
                           "<img src=x onerror=alert(1)>")
    assert html.startswith('<pre class="highlight"><code><span class="n">x</span>')
    assert "<script" not in html and "<img" not in html and "href=\"javascript" not in html

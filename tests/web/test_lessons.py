"""Learner pages: course, one step at a time with a resume point, quiz graded on the server, drafts."""
from __future__ import annotations

import json
import re

import pytest

from academy.rendering import render_markdown
from tests.support.apps import WebSession, new_session
from tests.support.paths import EXERCISE, LESSON, REPO


def test_course_page_lists_lessons_for_anyone(web) -> None:  # noqa: ANN001
    page = web.client.get("/").get_data(as_text=True)
    assert "Mixed precision with autocast and GradScaler" in page
    assert "Start as a guest" in page


def test_one_step_at_a_time_with_back_next_and_progress(web) -> None:  # noqa: ANN001
    web.guest()
    page = web.client.get(f"/lessons/{LESSON}/meet-autocast").get_data(as_text=True)
    assert "<h1>Meet autocast</h1>" in page and "Step 4 of 21" in page
    assert f'href="/lessons/{LESSON}/the-catch-with-16-bit"' in page
    assert f'href="/lessons/{LESSON}/what-autocast-wraps"' in page
    assert page.count('class="seg ') == 21 and page.count(" current") == 1
    assert '<pre class="highlight"><code><span class="k">with</span>' in page  # Pygments, not escaped twice
    assert web.client.get(f"/lessons/{LESSON}/22").status_code == 404
    assert web.client.get(f"/lessons/{LESSON}/0").status_code == 404
    assert web.client.get("/lessons/no-such-lesson/1").status_code == 404
    assert web.client.get(f"/lessons/{LESSON}/no-such-step").status_code == 404


def test_numbered_step_urls_redirect_to_step_ids(web) -> None:  # noqa: ANN001
    web.guest()
    old = web.client.get(f"/lessons/{LESSON}/4?from=bookmark")
    assert old.status_code == 301 and old.location == f"/lessons/{LESSON}/meet-autocast?from=bookmark"


def test_resume_point_and_course_progress(web) -> None:  # noqa: ANN001
    web.guest()
    assert web.client.get(f"/lessons/{LESSON}").location.endswith(f"/lessons/{LESSON}/what-mixed-precision-means")
    for number in (1, 2, 3, 7):
        web.client.get(f"/lessons/{LESSON}/{number}", follow_redirects=True)
    web.client.get(f"/lessons/{LESSON}/6", follow_redirects=True)  # going back moves the resume point
    assert web.client.get(f"/lessons/{LESSON}").location.endswith(f"/lessons/{LESSON}/meet-gradscaler")
    course = web.client.get("/").get_data(as_text=True)
    assert "5 of 21 steps done" in course  # the five cards opened; 4 and 5 were skipped, so not read
    progress = web.api("GET", "/api/progress").json
    lesson = next(item for item in progress["lessons"] if item["lesson"] == LESSON)
    assert lesson["steps_done"] == 5 and lesson["resume_step"] == 6
    assert lesson["resume_step_id"] == "meet-gradscaler"


def test_quiz_answer_is_graded_on_the_server(web) -> None:  # noqa: ANN001
    web.guest()
    url = f"/lessons/{LESSON}/quiz"
    page = web.client.get(url).get_data(as_text=True)
    assert "A GradScaler" in page and "Right. GradScaler" not in page and "correct" not in page.lower()
    wrong = web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "4"})
    assert wrong.location.endswith(f"{url}#q-vanishing-gradients")
    page = web.client.get(url).get_data(as_text=True)
    # One feedback sentence: the option's explanation, which says itself whether it is right.
    assert "already underflowed to zero" in page and "Not quite" not in page
    assert "First try: 0 of 6 right (5 not answered yet)" in page
    web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})
    page = web.client.get(url).get_data(as_text=True)
    assert "Right. GradScaler multiplies" in page and "Correct." not in page
    assert "First try: 0 of 6 right (5 not answered yet)" in page  # the first answer stays the first try
    assert "21 steps done" in web.client.get("/").get_data(as_text=True)


def test_quiz_rejects_bad_choices(web) -> None:  # noqa: ANN001
    web.guest()
    for option in ("9", "0", "-1", "x", ""):
        assert web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": option}).status_code == 400
    assert web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"choice": "0"}).status_code == 400
    assert web.post(f"/lessons/{LESSON}/quiz/no-such-question", data={"option": "1"}).status_code == 404


def _option_order(web, url: str) -> list[str]:  # noqa: ANN001
    return re.findall(r'name="option" value="([^"]+)"', web.client.get(url).get_data(as_text=True))


def test_quiz_options_are_shuffled_per_learner_and_stable(make_app) -> None:  # noqa: ANN001
    """Each learner sees one order, the same on every visit; learners differ."""
    app = make_app()
    url = "/lessons/gradient-accumulation/quiz"
    orders = []
    for _ in range(6):
        learner = WebSession(app.test_client())
        learner.guest()
        order = _option_order(learner, url)
        assert order == _option_order(learner, url)
        orders.append(tuple(order))
    assert len(set(orders)) > 1


def test_pinned_option_keeps_its_place() -> None:
    from grader.core.course import QuizOption, QuizQuestion

    options = tuple(QuizOption(f"o{i}", i == 0, "", str(i), pinned=i == 3) for i in range(4))
    question = QuizQuestion("q", "?", options)
    orders = {question.shuffled(str(salt)) for salt in range(20)}
    assert len(orders) > 1 and all(order[3].id == "3" for order in orders)
    assert all(sorted(o.id for o in order) == ["0", "1", "2", "3"] for order in orders)


def test_correct_answers_spread_over_positions() -> None:
    """In every quiz file of the course, the correct option is not always the first."""
    from grader.core.course import load_course

    course = load_course(REPO / "exercises")
    for lesson_id in ("mixed-precision", "gradient-accumulation", "profiling", "gpu-memory"):
        positions = {q.answer for q in course.lesson(lesson_id).quiz.questions}
        assert len(positions) > 1, lesson_id


def test_lesson_end_page(web) -> None:  # noqa: ANN001
    web.guest()
    web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})
    page = web.client.get(f"/lessons/{LESSON}/recap").get_data(as_text=True)
    assert f'href="/lessons/{LESSON}/end"' in page
    end = web.client.get(f"/lessons/{LESSON}/end").get_data(as_text=True)
    assert "First try: 1 of 6 right (5 not answered yet)" in end and "What you practised" in end
    assert "Write one AMP training step" in end and "not passed yet" in end
    assert 'href="/lessons/gradient-accumulation"' in end and "Next lesson" in end
    last = web.client.get("/lessons/gpu-memory/end").get_data(as_text=True)
    assert "Back to the course" in last


def test_exercise_step_holds_starter_then_draft(web) -> None:  # noqa: ANN001
    web.guest()

    def editor_state() -> dict:
        page = web.client.get(f"/lessons/{LESSON}/amp-step").get_data(as_text=True)
        return json.loads(re.search(r'<script type="application/json" id="exercise-data">(.*?)</script>',
                                    page, re.S).group(1))
    state = editor_state()
    assert state["exercise"] == EXERCISE and state["code"] == state["starter"] and state["latest"] is None
    hostile = 'x = "</script><script>alert(1)</script>"\n'
    assert web.api("PUT", f"/api/drafts/{EXERCISE}", {"code": hostile}).status_code == 204
    page = web.client.get(f"/lessons/{LESSON}/amp-step").get_data(as_text=True)
    assert "<script>alert(1)" not in page  # tojson escapes < and > inside the data block
    assert editor_state()["code"] == hostile
    other = new_session(web.client.application).guest()  # drafts are private
    assert editor_state()["code"] == hostile
    page = other.client.get(f"/lessons/{LESSON}/amp-step").get_data(as_text=True)
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


def test_inserting_removing_and_reordering_steps_keeps_progress_by_step_id(make_app, exercises_copy) -> None:  # noqa: ANN001
    """An instructor inserts a card at step 2, removes one, swaps two, and reloads: a learner who had read the
    whole lesson finds the new card unread, every card they read still read, and their resume point kept."""
    from academy.content import reload_content

    app = make_app(EXERCISES_DIR=str(exercises_copy))
    web = WebSession(app.test_client())
    web.guest()
    lesson_yaml = exercises_copy / LESSON / "lesson.yaml"
    cards = [line.split(": ", 1)[1] for line in lesson_yaml.read_text().splitlines() if "- card:" in line]
    for card in cards:
        stem = card.removesuffix(".md").split("-", 1)[1]
        assert web.client.get(f"/lessons/{LESSON}/{stem}").status_code == 200
    web.client.get(f"/lessons/{LESSON}/meet-gradscaler")  # the resume point
    before = web.api("GET", "/api/progress").json["lessons"][0]
    assert before["steps_done"] == len(cards) and before["resume_step_id"] == "meet-gradscaler"

    (exercises_copy / LESSON / "cards" / "01b-a-new-card.md").write_text("# A new card\n\nNew.\n")
    text = lesson_yaml.read_text()
    text = text.replace("  - card: 02-why-half-precision-is-faster.md\n",
                        "  - card: 01b-a-new-card.md\n  - card: 02-why-half-precision-is-faster.md\n")
    text = text.replace("  - card: 03-the-catch-with-16-bit.md\n", "")  # removed
    text = text.replace("  - card: 04-meet-autocast.md\n  - card: 05-what-autocast-wraps.md\n",
                        "  - card: 05-what-autocast-wraps.md\n  - card: 04-meet-autocast.md\n")  # swapped
    lesson_yaml.write_text(text)
    reload_content(app)

    after = web.api("GET", "/api/progress").json["lessons"][0]
    done = dict(zip(after["step_ids"], after["done"]))
    assert done["a-new-card"] is False  # inserted: not read
    assert "the-catch-with-16-bit" not in done
    assert done["meet-autocast"] and done["what-autocast-wraps"] and done["recap"]  # moved or not: still read
    assert after["steps_done"] == len(cards) - 1  # every read card but the removed one
    assert after["resume_step_id"] == "meet-gradscaler" and after["step_ids"][after["resume_step"] - 1] == \
        "meet-gradscaler"
    page = web.client.get(f"/lessons/{LESSON}/a-new-card").get_data(as_text=True)
    assert "Step 2 of" in page
    assert web.client.get(f"/lessons/{LESSON}/the-catch-with-16-bit").status_code == 404


def test_step_ids_come_from_file_names_or_an_explicit_id(exercises_copy) -> None:  # noqa: ANN001
    from grader.core.course import CourseError, load_course

    lesson_yaml = exercises_copy / LESSON / "lesson.yaml"
    original = lesson_yaml.read_text()
    lesson_yaml.write_text(original.replace("  - card: 04-meet-autocast.md\n",
                                            "  - card: 04-meet-autocast.md\n    id: autocast-intro\n"))
    steps = load_course(exercises_copy).lesson(LESSON).step_ids
    assert steps[:4] == ("what-mixed-precision-means", "why-half-precision-is-faster", "the-catch-with-16-bit",
                         "autocast-intro")
    assert "amp-step" in steps and "quiz" in steps
    lesson_yaml.write_text(original.replace("  - card: 12-recap.md\n", "  - card: 12-recap.md\n    id: quiz\n"))
    with pytest.raises(CourseError, match="two steps have the id 'quiz'"):
        load_course(exercises_copy)
    lesson_yaml.write_text(original.replace("  - card: 12-recap.md\n", "  - card: 12-recap.md\n    id: '12'\n"))
    with pytest.raises(CourseError, match="not only digits"):
        load_course(exercises_copy)


def test_every_kind_of_step_has_its_page_and_its_translation_coverage() -> None:
    """The web app's step-kind registry holds exactly the grader's kinds of step (grader.core.course.STEP_KINDS),
    and each kind reads its own translation file (the coverage counts a step whose file gives its text)."""
    from academy.web.lessons import STEP_PAGES
    from grader.core.course import STEP_KINDS

    assert set(STEP_PAGES) == set(STEP_KINDS.values())
    assert all(callable(getattr(kind, "load_text", None)) for kind in STEP_KINDS.values())
    assert [STEP_PAGES[kind].editor for kind in STEP_KINDS.values()] == [False, True, False]  # card, exercise, quiz


def test_the_editor_buttons_come_disabled_until_the_script_attaches_them(web) -> None:  # noqa: ANN001
    # A click on Run during a slow load once did nothing (a browser test beside the other worker); the buttons
    # are now dead-looking until lesson.js has its handlers on them, and it enables them itself.
    page = web.client.get("/lessons/mixed-precision/amp-step").get_data(as_text=True)
    for button in ("submit-code", "run-code", "reset-code"):
        assert re.search(rf'<button type="button" disabled id="{button}"', page), button
    script = (REPO / "platform" / "academy" / "static" / "lesson.js").read_text()
    assert 'runButton.addEventListener("click"' in script.split("button.disabled = false")[0]

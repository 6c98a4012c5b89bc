"""The learner's and instructor's pages, third round (issue 53), as the server renders them: the quizzes show their
code as code (bug 6c), the overview validates what changed by itself
and says when the last validation ran (6e), and an exercise names its function once (6f)."""
from __future__ import annotations

import html
import re
import time
from datetime import datetime

import pytest
from sqlalchemy import select

from academy import jobs
from academy.data.db import get_session
from academy.data.models import ValidationRun
from academy.jobs import JobKind
from grader.core.course import ExerciseStep, load_course
from tests.support.apps import make_instructor

COURSE = load_course()
# Code in quiz prose, outside backticks: a call (`scaler.step(optimizer)`, `.half()`), a dotted name with a call or
# three parts (`torch.autograd.grad`), a keyword argument (`use_reentrant=True`), a snake_case name (`ru_maxrss`).
CODE = re.compile(r"(?<![A-Za-z0-9_])(?:[A-Za-z_][\w.]*\([\w=.,\s]*\)|\.[a-z_]+\(\)|[a-z_]+(?:\.[a-z_]+){2,}"
                  r"|[a-z_]+=[A-Za-z0-9_.]+|[a-z]+_[a-z_]+)(?![A-Za-z0-9_])", re.ASCII)


def _outside_code(text: str) -> str:
    return " ".join(str(text).split("`")[::2])


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_every_quiz_writes_its_code_between_backticks(lesson) -> None:  # noqa: ANN001
    """Lessons 1 and 4 wrote `scaler.step(optimizer)` or `use_reentrant=True` as prose, shown as plain text."""
    texts = [text for question in lesson.quiz.questions
             for text in (question.question, *(t for o in question.options for t in (o.text, o.explanation)))]
    assert [found for text in texts for found in CODE.findall(_outside_code(text))] == []


@pytest.mark.parametrize(("lesson", "prefix", "code"), [
    ("mixed-precision", "", "scaler.step(optimizer)"), ("mixed-precision", "/ar", "scaler.update()"),
    ("mixed-precision", "/ja", "optimizer.step()"), ("gpu-memory", "", "use_reentrant=True")])
def test_the_quiz_page_shows_code_as_the_cards_do(web, lesson: str, prefix: str, code: str) -> None:  # noqa: ANN001
    quiz = COURSE.lesson(lesson).quiz
    page = web.client.get(f"{prefix}/lessons/{lesson}/{quiz.id}").get_data(as_text=True)
    spans = [html.unescape(re.sub(r"<[^>]+>", "", span))
             for span in re.findall(r'<code class="highlight">(.*?)</code>', page)]
    assert code in spans, spans[:10]


@pytest.mark.parametrize("step", [s for lesson in COURSE.lessons for s in lesson.steps if isinstance(s, ExerciseStep)],
                         ids=lambda step: step.exercise.id)
def test_an_exercise_names_its_function_once(web, step: ExerciseStep) -> None:  # noqa: ANN001
    """The prompt says "Write `train_step(...)`" (every prompt names it); a "Write train_step(...)" line below said it
    again on every exercise."""
    lesson = step.exercise.id.split("/")[0]
    page = web.client.get(f"/lessons/{lesson}/{step.id}").get_data(as_text=True)
    body = page.split('class="exercise-body"')[1].split('id="editor"')[0]
    signature = f"{step.exercise.entry}({', '.join(step.exercise.params)})"
    assert body.count(f">{signature}</code>") == 1, signature


def _rows(app) -> list[ValidationRun]:  # noqa: ANN001
    with app.app_context():
        rows = get_session().scalars(select(ValidationRun).order_by(ValidationRun.id)).all()
        get_session().expunge_all()
        return list(rows)


def test_the_overview_validates_what_changed_by_itself_and_says_when_it_last_ran(make_app, exercises_copy) -> None:  # noqa: ANN001
    """Every exercise said "not run" until someone pressed Validate. Now the overview starts a validation of every
    exercise never validated or changed since its last one, once per change, and says when the last one ran.
    The validation job itself (grader validate, minutes for the course) is tested in test_instructor.py: here the
    runner only records what it was given."""
    app = make_app(EXERCISES_DIR=str(exercises_copy), VALIDATE_ON_CHANGE=True)
    given: list[int] = []
    app.extensions["academy.jobs"].handlers[JobKind.VALIDATE_EXERCISE] = given.append
    teacher = make_instructor(app)
    exercises = COURSE.exercises

    page = teacher.client.get("/instructor/").get_data(as_text=True)
    rows = _rows(app)
    assert sorted(row.exercise_id for row in rows) == sorted(exercises)
    assert {row.status for row in rows} == {"queued"}
    with app.app_context():
        for row in rows:
            assert row.content_hash == jobs.exercise_fingerprint(exercises_copy / row.exercise_id)
    assert 'class="badge">not run</span>' not in page
    assert f"Validating {len(exercises)} exercises whose files are new or changed" in page
    assert "No validation has run yet." in page and 'http-equiv="refresh"' in page
    deadline = time.monotonic() + 10
    while len(given) < len(rows) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(given) == [row.id for row in rows]  # each one given to the job runner

    teacher.client.get("/instructor/")
    assert len(_rows(app)) == len(exercises)  # queued ones are left to themselves

    with app.app_context():
        for row in get_session().scalars(select(ValidationRun)):
            row.status, row.report = "ok", "ok   solution.py: passes every check"
            row.finished_at = datetime(2026, 12, 1, 9, 5)
        get_session().commit()
    page = teacher.client.get("/instructor/").get_data(as_text=True)
    assert len(_rows(app)) == len(exercises)  # nothing changed since
    assert "The last validation ran 2026-12-01 09:05 UTC." in page and "Validating" not in page

    changed = "mixed-precision/amp-step"
    checks = exercises_copy / changed / "checks" / "test_amp_step.py"
    checks.write_text(checks.read_text() + "\n# an instructor's edit\n")
    page = teacher.client.get("/instructor/").get_data(as_text=True)
    new = _rows(app)[len(exercises):]
    assert [(row.exercise_id, row.status) for row in new] == [(changed, "queued")]
    assert "Validating 1 exercise whose files are new or changed since its last validation" in page


def test_the_overview_starts_nothing_where_switched_off(make_app) -> None:  # noqa: ANN001
    app = make_app(VALIDATE_ON_CHANGE=False)
    page = make_instructor(app).client.get("/instructor/").get_data(as_text=True)
    assert _rows(app) == [] and 'class="badge">not run</span>' in page

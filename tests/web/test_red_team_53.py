"""Issue 53's page and overview changes attacked (red team of 6d60935..): the overview's background validation
(DLA_VALIDATE_ON_CHANGE) by a learner and by many views at once, its turns against learners' gradings, and the
quiz's code spans, which now build HTML from text."""
from __future__ import annotations

import threading
import time
from collections import Counter

from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import ValidationRun
from academy.jobs import JobKind
from academy.rendering import code_spans
from grader.core.course import load_course
from tests.support.apps import make_instructor, new_session

COURSE = load_course()


def _rows(app) -> list[ValidationRun]:  # noqa: ANN001
    with app.app_context():
        rows = get_session().scalars(select(ValidationRun).order_by(ValidationRun.id)).all()
        get_session().expunge_all()
        return list(rows)


def test_no_learner_starts_a_validation(make_app) -> None:  # noqa: ANN001
    """The overview starts validations as it is shown; only an instructor is shown it. A visitor, a guest and a
    signed-in learner ask for it, and for Validate all, and start nothing."""
    app = make_app(VALIDATE_ON_CHANGE=True)
    given: list[int] = []
    app.extensions["academy.jobs"].handlers[JobKind.VALIDATE_EXERCISE] = given.append
    visitor = new_session(app)
    guest = new_session(app).guest()
    learner = new_session(app)
    learner.signup("learner@example.org")
    for who in (visitor, guest, learner):
        for _ in range(3):
            assert who.client.get("/instructor/").status_code in (302, 401, 403)
            assert who.post("/instructor/validate/all").status_code in (302, 400, 401, 403)
            assert who.post("/instructor/validate/mixed-precision/amp-step").status_code in (302, 400, 401, 403)
    time.sleep(0.3)
    assert _rows(app) == [] and given == []


def test_overviews_shown_at_once_start_one_validation_per_exercise(make_app) -> None:  # noqa: ANN001
    """Every exercise of a fresh course is "never validated": eight overviews shown at the same moment (an
    instructor's tabs, a refresh loop) each read that before any wrote, and each started the whole course again
    (eight validations of every exercise, each a `grader validate` of minutes, in the staff's one turn)."""
    app = make_app(VALIDATE_ON_CHANGE=True)
    app.extensions["academy.jobs"].handlers[JobKind.VALIDATE_EXERCISE] = lambda run_id: None
    teachers = [make_instructor(app, f"teacher{i}@example.org") for i in range(8)]
    start = threading.Barrier(len(teachers))
    codes: list[int] = []

    def view(teacher) -> None:  # noqa: ANN001
        start.wait()
        codes.append(teacher.client.get("/instructor/").status_code)

    threads = [threading.Thread(target=view, args=(t,)) for t in teachers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert codes == [200] * len(teachers)
    started = Counter(row.exercise_id for row in _rows(app))
    assert set(started) == set(COURSE.exercises)
    assert max(started.values()) == 1, started.most_common(3)


def test_validations_take_the_staffs_one_turn_among_learners_gradings(make_app) -> None:  # noqa: ANN001
    """The overview queues the whole course's validations at once; a learner who submits just after waits for at
    most one of them (the staff's jobs are one key, taking turns with each learner's), not for all."""
    app = make_app(VALIDATE_ON_CHANGE=True, GRADING_WORKERS=1)
    runner = app.extensions["academy.jobs"]
    order: list[str] = []

    def validation(run_id: int) -> None:
        order.append("validation")
        time.sleep(0.2)

    runner.handlers[JobKind.VALIDATE_EXERCISE] = validation
    runner.handlers[JobKind.GRADE_SUBMISSION] = lambda submission_id: order.append("grading")
    assert make_instructor(app).client.get("/instructor/").status_code == 200
    submitted_at = len(order)  # validations already run as the overview queued the rest
    runner.submit(JobKind.GRADE_SUBMISSION, 10**6, "account:learner")
    deadline = time.monotonic() + 30
    while len(order) < len(COURSE.exercises) + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert order.count("validation") == len(COURSE.exercises) and "grading" in order
    assert order.index("grading") - submitted_at <= 2, order  # the one running, at most one more (a race)
    assert submitted_at < len(COURSE.exercises) - 2, "the course's validations ran before the learner submitted"


def test_a_quizs_code_spans_are_built_from_escaped_text() -> None:
    """The quiz's prose and its code spans become HTML on the server now (`code_spans`): markup in either is text."""
    html = str(code_spans('<img src=x onerror="alert(1)"> and `<script>alert(2)</script> "x" & y` <b>z</b> `a`'))
    assert "<img" not in html and "<script" not in html and "<b>" not in html
    assert "&lt;img" in html and "&lt;b&gt;" in html
    unpaired = str(code_spans('one ` tick <i onmouseover="x">'))
    assert "<i " not in unpaired and "&lt;i" in unpaired


def test_a_change_to_the_courses_shared_code_is_a_change_to_its_exercises(make_app, exercises_copy) -> None:  # noqa: ANN001
    """The overview says what changed since the last validation by each exercise's files; the checks of four
    exercises now import the course's shared code (exercises/_library, courselib), outside every exercise's folder.
    An edit there changed no exercise's fingerprint: the overview said nothing changed and validated nothing, though
    amp-step's checks had changed."""
    from datetime import datetime

    from academy import jobs

    app = make_app(EXERCISES_DIR=str(exercises_copy), VALIDATE_ON_CHANGE=True)
    app.extensions["academy.jobs"].handlers[JobKind.VALIDATE_EXERCISE] = lambda run_id: None
    teacher = make_instructor(app)
    assert teacher.client.get("/instructor/").status_code == 200
    with app.app_context():
        for row in get_session().scalars(select(ValidationRun)):
            row.status, row.report, row.finished_at = "ok", "ok   solution.py: passed", datetime(2026, 12, 1)
        get_session().commit()
    assert teacher.client.get("/instructor/").status_code == 200
    validated = len(_rows(app))
    library = exercises_copy / "_library" / "tasks.py"
    library.write_text(library.read_text() + "\n# an instructor's edit of the shared task\n")
    with app.app_context():
        changed = jobs.exercise_fingerprint(exercises_copy / "mixed-precision" / "amp-step")
    page = teacher.client.get("/instructor/").get_data(as_text=True)
    new = {row.exercise_id: row.content_hash for row in _rows(app)[validated:]}
    assert new.get("mixed-precision/amp-step") == changed, sorted(new)
    assert "whose files are new or changed" in page

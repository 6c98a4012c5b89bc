"""Instructor pages: access control, dashboard numbers, content reload, background validation."""
from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import select

from academy import jobs
from academy.data.db import get_session
from academy.data.models import Submission, User, ValidationRun
from tests.support.apps import make_instructor, new_session
from tests.support.paths import EXERCISE, LESSON


def verdict(passed_ids: set[str], failed_ids: list[str]) -> str:
    checks = [{"id": cid, "title": cid.title(), "passed": cid in passed_ids, "message": "", "hint": "",
               "line": None} for cid in [*sorted(passed_ids), *failed_ids]]
    return json.dumps({"status": "failed" if failed_ids else "passed", "passed": not failed_ids,
                       "score": len(passed_ids) / len(checks), "checks": checks, "error": None})


def finished_validation(app, timeout: float) -> ValidationRun:  # noqa: ANN001
    """The first validation run, once it is no longer queued or running (or the timeout passed)."""
    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            run = get_session().get(ValidationRun, 1)
            if run.status not in ("queued", "running") or time.monotonic() > deadline:
                return run
        time.sleep(0.2)


def test_learners_and_strangers_are_kept_out(web, app) -> None:  # noqa: ANN001
    anonymous = app.test_client()
    assert anonymous.get("/instructor/").status_code == 302
    web.guest()
    assert web.client.get("/instructor/").status_code == 403
    assert web.client.get(f"/instructor/exercises/{EXERCISE}").status_code == 403
    assert web.post(f"/instructor/validate/{EXERCISE}").status_code == 403
    assert web.post("/instructor/reload").status_code == 403


def test_dashboard_numbers(app) -> None:  # noqa: ANN001
    with app.app_context():
        db = get_session()
        a, b, c = User(email="a@example.org"), User(email="b@example.org"), User(is_guest=True)
        db.add_all([a, b, c])
        db.flush()
        rows = [(a, verdict({"runs"}, ["scaled-backward", "grads-cleared"]), False),
                (a, verdict({"runs", "scaled-backward", "grads-cleared"}, []), True),
                (b, verdict({"runs"}, ["scaled-backward"]), False),
                (c, verdict(set(), ["runs", "scaled-backward"]), False)]
        for user, result, passed in rows:
            db.add(Submission(user_id=user.id, exercise_id=EXERCISE, code="<script>alert('x')</script>",
                              status="done", result_json=result, passed=passed))
        db.add(Submission(user_id=c.id, exercise_id="mixed-precision/fix-underflow", code="y", status="queued"))
        db.commit()
    page = make_instructor(app).client.get(f"/instructor/exercises/{EXERCISE}").get_data(as_text=True)
    assert '<dd id="stat-attempts">4</dd>' in page
    assert '<dd id="stat-learners">3</dd>' in page
    assert '<dd id="stat-passed">1</dd>' in page
    assert '<dd id="stat-rate">33%</dd>' in page
    failing = page.split('id="failing-checks"')[1].split("</table>")[0]
    assert failing.index("scaled-backward") < failing.index("grads-cleared")
    assert "<td>3</td>" in failing
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "guest #3" in page and "a@example.org" in page


def test_overview_lists_every_step_and_exercise(app) -> None:  # noqa: ANN001
    page = make_instructor(app).client.get("/instructor/").get_data(as_text=True)
    assert "Write one AMP training step" in page and "Quick Check" in page and "Meet autocast" in page
    assert page.count('class="badge">not run</span>') >= 2
    assert 'http-equiv="refresh"' not in page


def test_content_reload_picks_up_edits_and_survives_broken_files(make_app, exercises_copy) -> None:  # noqa: ANN001
    app = make_app(EXERCISES_DIR=str(exercises_copy))
    teacher = make_instructor(app)
    card = exercises_copy / LESSON / "cards" / "04-meet-autocast.md"
    card.write_text(card.read_text().replace("# Meet autocast", "# Meet autocast, revised"))
    assert "revised" not in teacher.client.get(f"/lessons/{LESSON}/meet-autocast").get_data(as_text=True)
    done = teacher.post("/instructor/reload", follow_redirects=True).get_data(as_text=True)
    assert "Reloaded" in done
    page = teacher.client.get(f"/lessons/{LESSON}/meet-autocast").get_data(as_text=True)
    assert "<h1>Meet autocast, revised</h1>" in page
    (exercises_copy / LESSON / "lesson.yaml").write_text("steps: [")
    broken = teacher.post("/instructor/reload", follow_redirects=True).get_data(as_text=True)
    assert "The course files have a problem" in broken and "lesson.yaml" in broken
    assert "revised" in teacher.client.get(f"/lessons/{LESSON}/meet-autocast").get_data(as_text=True)


def test_content_reload_can_be_switched_off(make_app) -> None:  # noqa: ANN001
    teacher = make_instructor(make_app(CONTENT_RELOAD=False))
    assert teacher.post("/instructor/reload").status_code == 403


@pytest.mark.slow
def test_validate_runs_in_the_background(make_app, exercises_copy) -> None:  # noqa: ANN001
    mistakes = exercises_copy / LESSON / "amp-step" / "mistakes"
    for path in mistakes.glob("*.py"):  # keep one known mistake: two real gradings in all
        if path.name != "raw_backward.py":
            path.unlink()
    app = make_app(EXERCISES_DIR=str(exercises_copy))
    teacher = make_instructor(app)
    started = time.monotonic()
    response = teacher.post(f"/instructor/validate/{EXERCISE}")
    assert response.status_code == 302 and time.monotonic() - started < 2  # returns at once
    assert 'http-equiv="refresh"' in teacher.client.get("/instructor/").get_data(as_text=True)
    run = finished_validation(app, timeout=120)
    assert run.status == "ok", run.report
    assert run.report.splitlines() == [
        "ok   solution.py: passes every check",
        "ok   raw_backward.py: failed scaled-backward (declared: scaled-backward); skipped matches-reference, runs, "
        "step-update-order (declared: matches-reference, runs, step-update-order)"]
    page = teacher.client.get("/instructor/").get_data(as_text=True)
    assert '<span class="badge ok">ok</span>' in page
    assert f"validated {run.finished_at:%Y-%m-%d %H:%M} UTC" in page
    assert run.content_hash == jobs.exercise_fingerprint(exercises_copy / EXERCISE)  # the files it validated
    assert "changed since this validation" not in page
    assert teacher.post("/instructor/validate/nope/none").status_code == 404


def test_the_overview_keeps_the_last_validation_and_says_when_the_files_changed_since(make_app,
                                                                                  exercises_copy) -> None:  # noqa: ANN001
    """A validation done before a restart is still shown with its date, a newer one still queued does not hide
    it, and an edit of the exercise's files since is said plainly, per exercise."""
    from datetime import datetime

    folder = exercises_copy / EXERCISE
    app = make_app(EXERCISES_DIR=str(exercises_copy))
    with app.app_context():
        db = get_session()
        db.add(ValidationRun(exercise_id=EXERCISE, status="ok", report="ok   solution.py: passes every check",
                             created_at=datetime(2026, 12, 1, 9, 0), finished_at=datetime(2026, 12, 1, 9, 5),
                             content_hash=jobs.exercise_fingerprint(folder)))
        db.commit()
    teacher = make_instructor(make_app(EXERCISES_DIR=str(exercises_copy)))  # another process: nothing in memory
    def cell() -> str:
        page = teacher.client.get("/instructor/").get_data(as_text=True)
        return page.split(f'data-exercise="{EXERCISE}"')[1].split("</td>")[0]
    first = cell()
    assert '<span class="badge ok">ok</span>' in first and "validated 2026-12-01 09:05 UTC" in first
    assert "changed since" not in first and "passes every check" in first
    other = teacher.client.get("/instructor/").get_data(as_text=True)
    assert other.split('data-exercise="mixed-precision/fix-underflow"')[1].split("</td>")[0].count("not run") == 1
    checks = folder / "checks" / "test_amp_step.py"
    checks.write_text(checks.read_text() + "\n# an instructor's edit\n")
    assert "files changed since this validation: validate again." in cell()
    with app.app_context():
        get_session().add(ValidationRun(exercise_id=EXERCISE, status="queued"))
        get_session().commit()
    waiting = cell()
    assert '<span class="badge queued pending">queued</span>' in waiting and "validated 2026-12-01 09:05 UTC" in waiting


def result_with(statuses: dict[str, tuple[str, str | None]]) -> str:
    """A stored result whose checks have these (status, because)."""
    checks = [{"id": cid, "title": cid.title(), "status": status, "because": because,
               "passed": {"passed": True, "failed": False}.get(status), "message": "", "hint": "", "line": None}
              for cid, (status, because) in statuses.items()]
    passed = all(status == "passed" for status, _ in statuses.values())
    return json.dumps({"schema_version": 2, "status": "passed" if passed else "failed", "passed": passed,
                       "score": sum(s == "passed" for s, _ in statuses.values()) / len(statuses),
                       "checks": checks, "error": None, "notes": [], "grader_notes": []})


def test_dashboard_counts_judged_failures_and_shows_skipped_and_not_loaded_apart(app) -> None:  # noqa: ANN001
    """A syntax error (every check skipped because the code did not load) is no failure of "grads-cleared";
    a check skipped because an earlier failure explains it is counted in its own column."""
    not_loaded = result_with({"runs": ("skipped", "load"), "grads-cleared": ("skipped", "load")})
    explained = result_with({"runs": ("failed", None), "grads-cleared": ("skipped", "runs")})
    with app.app_context():
        db = get_session()
        db.add(User(email="a@example.org"))
        db.flush()
        for result in (not_loaded, not_loaded, not_loaded, explained):
            db.add(Submission(user_id=1, exercise_id=EXERCISE, code="x", status="done", result_json=result))
        db.add(Submission(user_id=1, exercise_id=EXERCISE, code="x", status="error", error_message="grader died"))
        db.commit()
    page = make_instructor(app).client.get(f"/instructor/exercises/{EXERCISE}").get_data(as_text=True)
    failing = page.split('id="failing-checks"')[1].split("</table>")[0]
    runs = failing.split('data-check="runs"')[1].split("</tr>")[0]
    cleared = failing.split('data-check="grads-cleared"')[1].split("</tr>")[0]
    assert "<td>1</td>" in runs and '<td class="explained">0</td>' in runs
    assert "<td>0</td>" in cleared and '<td class="explained">1</td>' in cleared
    assert '<span id="stat-not-loaded">3</span>' in page and '<span id="stat-platform-errors">1</span>' in page


def test_dashboard_pages_through_submissions(app) -> None:  # noqa: ANN001
    with app.app_context():
        db = get_session()
        db.add(User(email="a@example.org"))
        db.flush()
        for n in range(45):
            db.add(Submission(user_id=1, exercise_id=EXERCISE, code=f"attempt_{n} = 1", status="done",
                              result_json=result_with({"runs": ("passed", None)})))
        db.commit()
    teacher = make_instructor(app)
    first = teacher.client.get(f"/instructor/exercises/{EXERCISE}").get_data(as_text=True)
    assert "attempt_44 = 1" in first and "attempt_25 = 1" in first and "attempt_24 = 1" not in first
    assert "Page 1 of 3 (45 in all)" in first and "?page=2" in first
    last = teacher.client.get(f"/instructor/exercises/{EXERCISE}?page=3").get_data(as_text=True)
    assert "attempt_0 = 1" in last and "attempt_4 = 1" in last and "attempt_5 = 1" not in last
    assert teacher.client.get(f"/instructor/exercises/{EXERCISE}?page=x").status_code == 400


def _class_with_answers(app) -> None:  # noqa: ANN001
    """Two accounts and a guest: scores on amp-step, first tries on lesson 1's quiz, cards opened."""
    from academy.data.models import QuizAnswer, StepVisit, utcnow

    with app.app_context():
        db = get_session()
        confirmed = utcnow()  # both proved their address (an unconfirmed one is no LMS key: test_email_confirmation)
        ada = User(email="ada@example.org", name="Lovelace, Ada", sis_id="S-1815", email_confirmed_at=confirmed)
        bob = User(email="=HYPERLINK(1)@example.org", name="@SUM(1) Bob", email_confirmed_at=confirmed)
        guest = User(is_guest=True)
        db.add_all([ada, bob, guest])
        db.flush()
        db.add_all([
            Submission(user_id=ada.id, exercise_id=EXERCISE, code="a", status="done", passed=False,
                       result_json=result_with({"runs": ("passed", None), "grads": ("failed", None)})),
            Submission(user_id=ada.id, exercise_id=EXERCISE, code="b", status="done", passed=True,
                       result_json=result_with({"runs": ("passed", None), "grads": ("passed", None)})),
            Submission(user_id=bob.id, exercise_id=EXERCISE, code="c", status="done", passed=False,
                       result_json=result_with({"runs": ("passed", None), "grads": ("failed", None)})),
            Submission(user_id=guest.id, exercise_id=EXERCISE, code="d", status="queued"),
            # Ada: wrong first, then right (counts as wrong); Bob: right at once.
            QuizAnswer(user_id=ada.id, lesson_id=LESSON, question_id="vanishing-gradients",
                       option_id="2", correct=False),
            QuizAnswer(user_id=ada.id, lesson_id=LESSON, question_id="vanishing-gradients",
                       option_id="1", correct=True),
            QuizAnswer(user_id=bob.id, lesson_id=LESSON, question_id="vanishing-gradients",
                       option_id="1", correct=True),
            StepVisit(user_id=ada.id, lesson_id=LESSON, step_id="meet-autocast"),
            StepVisit(user_id=ada.id, lesson_id=LESSON, step_id="a-step-since-removed"),
        ])
        db.commit()


def test_gradebook_csv_in_three_shapes(app) -> None:  # noqa: ANN001
    """Blank for work never tried (0 only when asked), guests left out unless asked (plain shape only), Canvas's
    columns filled as its import matches them (SIS User ID, SIS Login ID; the name in Student)."""
    import csv
    import io

    from academy.content import get_content

    _class_with_answers(app)
    teacher = make_instructor(app)
    with app.app_context():
        course = get_content().course
        questions = len(course.lesson(LESSON).quiz.questions)
        exercises = [ex.id for lesson in course.lessons for ex in lesson.exercises]
        quizzes = [lesson.id for lesson in course.lessons if lesson.quiz]

    def table(query: str) -> list[list[str]]:
        response = teacher.client.get(f"/instructor/gradebook.csv?{query}")
        assert response.status_code == 200 and response.mimetype == "text/csv"
        shape = query.split("format=")[1].split("&")[0]
        assert f'filename="gradebook-{shape}.csv"' in response.headers["Content-Disposition"]
        return list(csv.reader(io.StringIO(response.get_data(as_text=True))))

    plain = table("format=plain")
    header = plain[0]
    assert header[:6] == ["learner_id", "name", "email", "sis_id", "guest", "email_confirmed"]
    assert len(header) == 6 + len(exercises) + len(quizzes)
    amp = header.index(f"Write one AMP training step [{EXERCISE}]")
    underflow = header.index("Fix a training run that underflows [mixed-precision/fix-underflow]")
    quiz = header.index(f"Quiz: {course.lesson(LESSON).title} [{LESSON}/quiz]")
    later_quiz = header.index(f"Quiz: {course.lessons[1].title} [{course.lessons[1].id}/quiz]")
    rows = {row[2]: row for row in plain[1:]}
    assert set(rows) == {"ada@example.org", "'=HYPERLINK(1)@example.org"}  # no guest; no formula reaches a sheet
    assert rows["ada@example.org"][1:4] == ["Lovelace, Ada", "ada@example.org", "S-1815"]
    assert rows["'=HYPERLINK(1)@example.org"][1] == "'@SUM(1) Bob"
    assert rows["ada@example.org"][amp] == "100" and rows["'=HYPERLINK(1)@example.org"][amp] == "50"
    assert rows["ada@example.org"][quiz] == "0"  # answered, wrong at the first try: a real 0
    assert float(rows["'=HYPERLINK(1)@example.org"][quiz]) == round(100 / questions, 1)  # right at once
    # Never tried: blank, for every exercise and quiz a learner did not open (11 cells for Ada: 13 minus 2 tried).
    assert rows["ada@example.org"][5] == "yes"
    untouched = [cell for i, cell in enumerate(rows["ada@example.org"]) if i >= 6 and i not in (amp, quiz)]
    assert untouched == [""] * (len(exercises) + len(quizzes) - 2)
    assert rows["ada@example.org"][underflow] == "" and rows["ada@example.org"][later_quiz] == ""

    with_guests = table("format=plain&guests=1")
    guest_rows = [row for row in with_guests[1:] if row[4] == "yes"]
    assert len(guest_rows) == 1 and guest_rows[0][amp] == ""  # its submission is still queued: nothing graded
    zeros = {row[2]: row for row in table("format=plain&untried=zero")[1:]}
    assert zeros["ada@example.org"][underflow] == "0" and zeros["ada@example.org"][later_quiz] == "0"
    assert zeros["ada@example.org"][amp] == "100"

    canvas = table("format=canvas")
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[1][0] == "Points Possible" and set(canvas[1][5:]) == {"100"}
    assert len(canvas) == 4  # header, points, the two accounts (a guest has nothing Canvas can match)
    ada_row = next(row for row in canvas[2:] if row[3] == "ada@example.org")
    assert ada_row[:5] == ["Lovelace, Ada", "", "S-1815", "ada@example.org", ""]
    assert ada_row[5 + exercises.index("mixed-precision/fix-underflow")] == ""
    assert len(table("format=canvas&guests=1")) == 4  # guests=1 is for the plain shape only
    moodle = table("format=moodle")
    assert moodle[0][:3] == ["Email address", "ID number", "Full name"] and len(moodle) == 3
    assert moodle[1][3 + exercises.index("mixed-precision/fix-underflow")] == ""
    assert teacher.client.get("/instructor/gradebook.csv?format=excel").status_code == 400
    assert teacher.client.get("/instructor/gradebook.csv?format=plain&untried=maybe").status_code == 400
    assert teacher.client.get("/instructor/gradebook.csv?format=plain&guests=yes").status_code == 400


def test_the_untried_setting_chooses_zeros_for_a_course_past_its_deadline(make_app) -> None:  # noqa: ANN001
    import csv
    import io

    app = make_app(GRADEBOOK_UNTRIED="zero")
    _class_with_answers(app)
    teacher = make_instructor(app)
    assert 'value="zero" selected' in teacher.client.get("/instructor/learners/").get_data(as_text=True)
    rows = list(csv.reader(io.StringIO(teacher.client.get("/instructor/gradebook.csv?format=moodle")
                                       .get_data(as_text=True))))
    assert "" not in rows[1][3:]  # every grade cell holds a number
    blank = list(csv.reader(io.StringIO(teacher.client.get("/instructor/gradebook.csv?format=moodle&untried=blank")
                                        .get_data(as_text=True))))
    assert "" in blank[1][3:]


def test_an_instructor_sees_and_edits_a_learners_name_and_sis_id(app) -> None:  # noqa: ANN001
    _class_with_answers(app)
    teacher = make_instructor(app)
    with app.app_context():
        bob = get_session().scalar(select(User).where(User.email == "=HYPERLINK(1)@example.org"))
    page = teacher.client.get(f"/instructor/learners/{bob.id}").get_data(as_text=True)
    assert 'name="name" value="@SUM(1) Bob"' in page
    saved = teacher.post(f"/instructor/learners/{bob.id}/profile", data={"name": "  Bob   Builder ", "sis_id": "S-2"})
    assert saved.status_code == 303
    taken = teacher.post(f"/instructor/learners/{bob.id}/profile", data={"name": "Bob", "sis_id": "S-1815"})
    assert "Another account already has the SIS id S-1815" in teacher.client.get(taken.location).get_data(as_text=True)
    broken = teacher.post(f"/instructor/learners/{bob.id}/profile", data={"name": "Bob\u2028=1", "sis_id": ""})
    assert "line breaks" in teacher.client.get(broken.location).get_data(as_text=True)
    with app.app_context():
        bob = get_session().get(User, bob.id)
        assert (bob.name, bob.sis_id) == ("Bob Builder", "S-2")  # refused values changed nothing
    listing = teacher.client.get("/instructor/learners/").get_data(as_text=True)
    assert "Bob Builder" in listing and "Lovelace, Ada" in listing
    learner = new_session(app)
    learner.signup("carol@example.org", name="Carol")
    assert learner.post(f"/instructor/learners/{bob.id}/profile", data={"name": "x"}).status_code == 403
    assert teacher.post("/instructor/learners/999/profile", data={"name": "x"}).status_code == 404


def test_learner_view_and_list(app) -> None:  # noqa: ANN001
    _class_with_answers(app)
    teacher = make_instructor(app)
    listing = teacher.client.get("/instructor/learners/").get_data(as_text=True).split('id="learners"')[1]
    assert "ada@example.org" in listing and "guest #3" in listing and "teacher@example.org" not in listing
    assert "1 of 21" in listing  # ada opened one step that still exists (the removed one does not count)
    page = teacher.client.get("/instructor/learners/1").get_data(as_text=True)
    row = page.split(f'data-exercise="{EXERCISE}"')[1].split("</tr>")[0]
    assert '<td class="attempts">2</td>' in row and '<td class="best">100%</td>' in row and "passed" in row
    assert "wrong at the first try" in page.split('data-question="vanishing-gradients"')[1].split("</li>")[0]
    assert teacher.client.get("/instructor/learners/999").status_code == 404


def test_overview_says_when_the_course_no_longer_matches_the_grader_image(make_app, exercises_copy,
                                                                         monkeypatch) -> None:  # noqa: ANN001
    """The instructor edited the course after the image was built: the page says Docker is not used and
    names the command that fixes it (a real image and the real fingerprint of the edited files)."""
    from grader.host.image import content_fingerprint
    from grader.host.sandboxes import grader_image
    from sandbox.docker import image_labels

    if image_labels(grader_image()) is None:
        pytest.skip("no Docker Engine with the grader image here (sandbox/build-images)")
    checks = exercises_copy / EXERCISE / "checks" / "test_amp_step.py"  # the image holds checks, not cards
    checks.write_text(checks.read_text() + "\n# an instructor's edit\n")
    # The app's own course folder decides (one source), whatever DLA_EXERCISES says.
    teacher = make_instructor(make_app(EXERCISES_DIR=str(exercises_copy), SANDBOX="auto"))
    page = teacher.client.get("/instructor/").get_data(as_text=True)
    note = page.split('id="stale-image"')[1].split("</p>")[0]
    assert "so Docker is not used" in note and "run sandbox/build-images, then restart" in note
    from sandbox.docker import stale_image

    # The files the image was built from (scripts/test builds it first): nothing to say.
    if not stale_image(grader_image(), content_fingerprint()):
        other = make_instructor(make_app(SANDBOX="auto"), "other@example.org")  # the repository's course
        assert 'id="stale-image"' not in other.client.get("/instructor/").get_data(as_text=True)


def test_validate_report_names_failed_and_declared_checks(make_app, monkeypatch) -> None:  # noqa: ANN001
    """Per file: the checks it failed next to those it declares, and what is wrong when they differ."""
    from pathlib import Path

    import grader.host.validate
    from grader.host.validate import Case

    def result(failed: list[str]) -> dict:
        return {"status": "failed" if failed else "passed", "error": None, "seed": 7,
                "checks": [{"id": c, "status": "failed", "because": None, "message": f"{c} message"} for c in failed]}

    cases = [Case(EXERCISE, Path("solution.py"), frozenset(), result([]), (), frozenset()),
             Case(EXERCISE, Path("mistakes/forgot-scaler.py"), frozenset({"scaled-backward"}),
                  result(["scaled-backward"])),
             Case(EXERCISE, Path("mistakes/not-caught.py"), frozenset({"grads-cleared"}), result([]))]
    monkeypatch.setattr(grader.host.validate, "validate_exercise", lambda *args, **kwargs: cases)
    app = make_app()
    assert make_instructor(app).post(f"/instructor/validate/{EXERCISE}").status_code == 302
    run = finished_validation(app, timeout=30)
    assert run.status == "failed"
    assert run.report.splitlines() == [
        "ok   solution.py: passes every check",
        "ok   forgot-scaler.py: failed scaled-backward (declared: scaled-backward)",
        "FAIL not-caught.py: failed nothing (declared: grads-cleared); expected to fail but passed: grads-cleared "
        "(seed 7)"]

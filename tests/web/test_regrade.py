"""Regrade: the finished submissions of one exercise graded again after its checks changed."""
from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from academy.data.db import get_session
from academy.data.models import RegradeRun, Submission, User, utcnow
from tests.support.apps import make_instructor, new_session
from tests.support.paths import EXERCISE, LESSON, REPO

SOLUTION = (REPO / "exercises" / LESSON / "amp-step" / "solution.py").read_text()
OTHER = "mixed-precision/fix-underflow"
# The real grading test uses the three-check memory exercise: a few seconds per cold grading.
MEMORY = "gpu-memory/fit-the-budget"
MEMORY_SOLUTION = (REPO / "exercises" / MEMORY / "solution.py").read_text()


def passing_verdict(exercise: str = EXERCISE) -> str:
    """A stored verdict that passed every check of the exercise."""
    checks = [{"id": "runs", "title": "Runs", "passed": True, "message": "", "hint": "", "line": None}]
    return json.dumps({"exercise": exercise, "status": "passed", "passed": True, "score": 1.0, "checks": checks,
                       "error": None})


def store_submission(app, exercise: str = EXERCISE, code: str = SOLUTION, status: str = "done",  # noqa: ANN001
                     email: str = "ada@example.org") -> int:
    with app.app_context():
        db = get_session()
        user = db.scalar(select(User).where(User.email == email)) or User(email=email)
        db.add(user)
        db.flush()
        submission = Submission(user_id=user.id, exercise_id=exercise, code=code, status=status,
                                result_json=passing_verdict(exercise) if status == "done" else None,
                                passed=status == "done")
        db.add(submission)
        db.commit()
        return submission.id


def wait_for_run(app, run_id: int, timeout: float = 120) -> RegradeRun:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            run = get_session().get(RegradeRun, run_id)
            if not run.busy:
                return run
        if time.monotonic() > deadline:
            raise AssertionError(f"regrade run {run_id} still {run.status}")
        time.sleep(0.2)


def runs(app) -> list[RegradeRun]:  # noqa: ANN001
    with app.app_context():
        return get_session().scalars(select(RegradeRun).order_by(RegradeRun.id)).all()


def test_regrade_with_no_finished_submissions(make_app) -> None:  # noqa: ANN001
    app = make_app(SANDBOX="no-such-sandbox")  # anything it tried to grade would count as failed
    store_submission(app, status="error")  # not finished: not regraded
    store_submission(app, exercise=OTHER)  # another exercise
    teacher = make_instructor(app)
    response = teacher.post(f"/instructor/regrade/{EXERCISE}")
    assert response.status_code == 302 and response.headers["Location"].endswith(f"/instructor/exercises/{EXERCISE}")
    run = wait_for_run(app, 1)
    assert (run.status, run.total, run.regraded, run.changed, run.failed, run.entries) == ("done", 0, 0, 0, 0, [])
    assert run.finished_at is not None
    page = teacher.client.get(f"/instructor/exercises/{EXERCISE}").get_data(as_text=True)
    assert "0 of 0 regraded: 0 changed, 0 unchanged, 0 failed to grade" in page
    assert "No verdict changed." in page and 'http-equiv="refresh"' not in page


@pytest.mark.slow
def test_a_changed_check_changes_a_stored_verdict(make_app, exercises_copy) -> None:  # noqa: ANN001
    # The copy is graded by cold processes (a warm pool serves the repository's exercises only).
    app = make_app(EXERCISES_DIR=str(exercises_copy), WARM_POOL=0)
    submission_id = store_submission(app, exercise=MEMORY, code=MEMORY_SOLUTION)
    teacher = make_instructor(app)
    teacher.post(f"/instructor/regrade/{MEMORY}")
    first = wait_for_run(app, 1)
    assert (first.status, first.regraded, first.changed, first.failed) == ("done", 1, 0, 0), first.entries
    with app.app_context():
        graded = get_session().get(Submission, submission_id).result
    assert graded["sandbox"] == "local" and graded["passed"]  # a real verdict replaced the stored one

    # The instructor tightens a check: the reference solution no longer passes it.
    checks = exercises_copy / MEMORY / "checks" / "test_fit_the_budget.py"
    source = checks.read_text()
    line = '    result = observed["eval"]\n'
    assert source.count(line) == 1
    checks.write_text(source.replace(line, line + '    fail("Return the outputs on the CPU.")\n'))

    done = app.test_cli_runner().invoke(args=["regrade", MEMORY, "--wait"])
    assert done.exit_code == 0, done.output
    assert "Regrading 1 finished submission(s)" in done.output
    row = next(line for line in done.output.splitlines() if line.startswith(f"{submission_id}  "))
    assert row.split() == [str(submission_id), "ada@example.org", "passed", "100%", "failed", "67%", "yes"]
    assert "1 regraded: 1 changed, 0 unchanged, 0 failed to grade" in done.output
    second = runs(app)[-1]
    [entry] = second.entries
    assert entry["old"] == {"status": "passed", "passed": True, "score": 1.0}
    assert entry["new"] == {"status": "failed", "passed": False, "score": 0.6667}
    assert entry["old_result"] == graded  # the replaced result is kept
    with app.app_context():
        submission = get_session().get(Submission, submission_id)
        assert submission.passed is False and submission.status == "done"
        result = submission.result
    assert [c["id"] for c in result["checks"] if c["status"] == "failed"] == ["eval-without-graph"]
    assert result["seed"] == graded["seed"]  # the same scenario: only the checks changed
    page = teacher.client.get(f"/instructor/exercises/{MEMORY}").get_data(as_text=True)
    changes = page.split('id="regrade-changes"')[1].split("</table>")[0]
    assert f'<a href="/api/submissions/{submission_id}">{submission_id}</a>' in changes
    assert changes.index('badge passed">passed</span> 100%') < changes.index('badge failed">failed</span> 67%')


def test_cli_without_wait_and_a_grader_that_fails(make_app) -> None:  # noqa: ANN001
    app = make_app(SANDBOX="no-such-sandbox")
    ids = [store_submission(app), store_submission(app, email="bob@example.org")]
    cli = app.test_cli_runner()
    started = cli.invoke(args=["regrade", EXERCISE])
    assert started.exit_code == 0, started.output
    assert "Regrading 2 finished submission(s) of mixed-precision/amp-step in the background (run 1)" in started.output
    assert f"regrade {EXERCISE} --wait" in started.output and f"/instructor/exercises/{EXERCISE}" in started.output
    wait_for_run(app, 1)
    waited = cli.invoke(args=["regrade", EXERCISE, "--wait"])
    assert waited.exit_code == 1  # not every submission could be graded
    lines = waited.output.splitlines()
    assert lines[1].split() == ["submission", "learner", "old", "new", "changed"]
    assert lines[2].split() == [str(ids[0]), "ada@example.org", "passed", "100%", "not", "graded", "no"]
    assert lines[3].split() == [str(ids[1]), "bob@example.org", "passed", "100%", "not", "graded", "no"]
    assert f"submission {ids[0]} not graded: The grader failed: unknown sandbox 'no-such-sandbox'" in waited.output
    assert "2 regraded: 0 changed, 0 unchanged, 2 failed to grade (run 2, done)" in waited.output
    with app.app_context():
        for submission_id in ids:  # they keep their verdicts
            submission = get_session().get(Submission, submission_id)
            assert submission.passed and submission.result_json == passing_verdict()
    assert cli.invoke(args=["regrade", "nope/none"]).exit_code == 1


def test_a_second_regrade_while_one_is_busy_returns_it(make_app) -> None:  # noqa: ANN001
    app = make_app(SANDBOX="no-such-sandbox")
    with app.app_context():
        db = get_session()
        db.add(RegradeRun(exercise_id=EXERCISE, status="running", total=5))
        db.commit()
    teacher = make_instructor(app)
    page = teacher.post(f"/instructor/regrade/{EXERCISE}", follow_redirects=True).get_data(as_text=True)
    assert "already running (run 1)" in page and 'http-equiv="refresh"' in page
    again = app.test_cli_runner().invoke(args=["regrade", EXERCISE])
    assert "already running (run 1, 5 submission(s)); not starting another" in again.output
    assert [r.id for r in runs(app)] == [1]
    with app.app_context():  # the database refuses a second busy run even when asked directly
        db = get_session()
        db.add(RegradeRun(exercise_id=EXERCISE, status="queued"))
        with pytest.raises(IntegrityError):
            db.commit()
        db.rollback()
        # A run that stopped moving (its process went away) is ended, and the next request starts afresh.
        stuck = db.get(RegradeRun, 1)
        stuck.updated_at = utcnow() - timedelta(minutes=16)
        db.commit()
    teacher.post(f"/instructor/regrade/{EXERCISE}")
    first, second = runs(app)
    assert first.status == "error" and first.error_message.startswith("Stopped: no progress")
    assert wait_for_run(app, second.id).status == "done"


def test_instructor_pages_show_the_button_and_the_latest_run(app) -> None:  # noqa: ANN001
    old, new = {"status": "passed", "passed": True, "score": 1.0}, {"status": "failed", "passed": False, "score": 0.5}
    with app.app_context():
        db = get_session()
        db.add(RegradeRun(exercise_id=EXERCISE, status="done", total=1, regraded=1, changed=1, changes_json=json.dumps(
            [{"submission": 7, "learner": "earlier@example.org", "old": old, "new": new, "changed": True,
              "error": None, "old_result": None}])))
        db.add(RegradeRun(exercise_id=EXERCISE, status="running", total=4, regraded=3, changed=1, failed=1,
                          changes_json=json.dumps([
                              {"submission": 12, "learner": "ada@example.org", "old": old, "new": new, "changed": True,
                               "error": None, "old_result": None},
                              {"submission": 13, "learner": "bob@example.org", "old": old, "new": old,
                               "changed": False, "error": None, "old_result": None}])))
        db.commit()
    teacher = make_instructor(app)
    overview = teacher.client.get("/instructor/").get_data(as_text=True)
    assert f'action="/instructor/regrade/{EXERCISE}"' in overview
    page = teacher.client.get(f"/instructor/exercises/{EXERCISE}").get_data(as_text=True)
    assert f'action="/instructor/regrade/{EXERCISE}"' in page and ">Regrade</button>" in page
    assert 'data-run="2" data-status="running"' in page and 'http-equiv="refresh"' in page
    assert "3 of 4 regraded: 1 changed, 1 unchanged, 1 failed to grade" in page
    changes = page.split('id="regrade-changes"')[1].split("</table>")[0]
    assert '<a href="/api/submissions/12">12</a>' in changes and "ada@example.org" in changes
    assert 'badge passed">passed</span> 100%' in changes and 'badge failed">failed</span> 50%' in changes
    assert "bob@example.org" not in changes and "earlier@example.org" not in page  # unchanged; an older run


def test_learners_cannot_regrade(app) -> None:  # noqa: ANN001
    learner = new_session(app).guest()
    assert learner.post(f"/instructor/regrade/{EXERCISE}").status_code == 403
    assert runs(app) == []
    assert make_instructor(app).post("/instructor/regrade/nope/none").status_code == 404


def test_regrade_needs_the_csrf_token(app) -> None:  # noqa: ANN001
    teacher = make_instructor(app)
    assert teacher.client.post(f"/instructor/regrade/{EXERCISE}").status_code == 400
    assert teacher.client.post(f"/instructor/regrade/{EXERCISE}", data={"csrf_token": "forged"}).status_code == 400
    assert runs(app) == []
    assert teacher.post(f"/instructor/regrade/{EXERCISE}").status_code == 302  # with the page's token it works

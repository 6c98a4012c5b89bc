"""Instructor pages: access control, dashboard numbers, content reload, background validation."""
from __future__ import annotations

import json
import time

import pytest

from academy.db import get_session
from academy.models import Submission, User, ValidationRun
from tests.helpers import EXERCISE, LESSON, new_session


def make_instructor(app, email: str = "teacher@example.org"):  # noqa: ANN001, ANN201
    from academy.auth import create_account
    with app.app_context():
        create_account(email, "password123", role="instructor")
        get_session().commit()
    teacher = new_session(app)
    teacher.signin(email)
    return teacher


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
    assert "revised" not in teacher.client.get(f"/lessons/{LESSON}/4").get_data(as_text=True)
    done = teacher.post("/instructor/reload", follow_redirects=True).get_data(as_text=True)
    assert "Reloaded" in done
    assert "<h1>Meet autocast, revised</h1>" in teacher.client.get(f"/lessons/{LESSON}/4").get_data(as_text=True)
    (exercises_copy / LESSON / "lesson.yaml").write_text("steps: [")
    broken = teacher.post("/instructor/reload", follow_redirects=True).get_data(as_text=True)
    assert "The course files have a problem" in broken and "lesson.yaml" in broken
    assert "revised" in teacher.client.get(f"/lessons/{LESSON}/4").get_data(as_text=True)


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
    assert teacher.post("/instructor/validate/nope/none").status_code == 404


def test_validate_report_names_failed_and_declared_checks(make_app, monkeypatch) -> None:  # noqa: ANN001
    """Per file: the checks it failed next to those it declares, and what is wrong when they differ."""
    from pathlib import Path

    import grader.validate
    from grader.validate import Case

    def result(failed: list[str]) -> dict:
        return {"status": "failed" if failed else "passed", "error": None,
                "checks": [{"id": c, "status": "failed", "because": None, "message": f"{c} message"} for c in failed]}

    cases = [Case(EXERCISE, Path("solution.py"), frozenset(), result([]), (), frozenset()),
             Case(EXERCISE, Path("mistakes/forgot-scaler.py"), frozenset({"scaled-backward"}),
                  result(["scaled-backward"])),
             Case(EXERCISE, Path("mistakes/not-caught.py"), frozenset({"grads-cleared"}), result([]))]
    monkeypatch.setattr(grader.validate, "validate_exercise", lambda *args, **kwargs: cases)
    app = make_app()
    assert make_instructor(app).post(f"/instructor/validate/{EXERCISE}").status_code == 302
    run = finished_validation(app, timeout=30)
    assert run.status == "failed"
    assert run.report.splitlines() == [
        "ok   solution.py: passes every check",
        "ok   forgot-scaler.py: failed scaled-backward (declared: scaled-backward)",
        "FAIL not-caught.py: failed nothing (declared: grads-cleared); expected to fail but passed: grads-cleared"]

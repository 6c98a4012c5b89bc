"""The verdict the moment it exists (academy/jobs/waiting.py): a `GET ?wait=` of a submission or Run answers when its
row is finished, woken by the job's news, by reading the row again, or by its wait running out; a bounded
number of requests wait at once. The jobs here are the test's own (the runner's handler for grading), so
each test decides when a row finishes; RECHECK_S is set so that only the path under test can end a wait."""
from __future__ import annotations

import time
from typing import Any

import pytest

from academy.jobs import waiting
from tests.support.apps import new_session
from tests.support.held_jobs import CODE, HeldJobs, get_in_thread
from tests.support.paths import EXERCISE


def _held_until_release(learner, path: str, held: HeldJobs, why: str) -> tuple[int, Any, float]:  # noqa: ANN001
    """GET `path` in a thread; it must still wait 0.3 s later (`why` it should); then let the held job end its
    row, and return the GET's (status code, body, seconds)."""
    answers: list[Any] = []
    thread = get_in_thread(learner, path, answers)
    time.sleep(0.3)
    assert not answers, why
    held.release.set()
    thread.join(30)
    return answers[0]


@pytest.mark.parametrize("kind", ["submissions", "runs"])
def test_a_waiting_get_answers_when_the_job_announces_its_row(app, hold, monkeypatch, kind) -> None:  # noqa: ANN001
    monkeypatch.setattr(waiting, "RECHECK_S", 60.0)  # no second read: only the news ends the wait early
    held = hold(app)
    learner = new_session(app).guest()
    created = learner.api("POST", f"/api/{kind}", {"exercise": EXERCISE, "code": CODE})
    assert created.status_code == 202
    assert held.started.wait(30)
    status, body, seconds = _held_until_release(learner, f"/api/{kind}/{created.json['id']}?wait=20", held,
                                                "the GET answered while the row was still running")
    assert status == 200 and body["status"] == "error", body
    assert seconds < 15, f"the GET answered after {seconds:.1f} s: it waited out its time, not for the news"


def test_a_row_finished_elsewhere_is_seen_by_reading_it_again(app, hold, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(waiting, "RECHECK_S", 0.05)
    held = hold(app, finish="quietly")
    learner = new_session(app).guest()
    created = learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json
    assert held.started.wait(30)
    answers: list[Any] = []
    thread = get_in_thread(learner, f"/api/submissions/{created['id']}?wait=20", answers)
    held.release.set()
    thread.join(30)
    status, body, seconds = answers[0]
    assert status == 200 and body["status"] == "error" and body["error"] == "ended by the test", body
    assert seconds < 15


def test_a_wait_that_runs_out_answers_the_row_as_it_is(app, hold, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(waiting, "RECHECK_S", 0.05)
    held = hold(app)
    learner = new_session(app).guest()
    created = learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json
    assert held.started.wait(30)
    started = time.monotonic()
    body = learner.api("GET", f"/api/submissions/{created['id']}?wait=0.4").json
    assert body["status"] == "running" and time.monotonic() - started >= 0.4, body
    held.release.set()


def test_waiting_requests_are_bounded_and_the_rest_answer_at_once(make_app, hold, monkeypatch) -> None:  # noqa: ANN001
    """With one seat, a second learner's wait is not held: their GET answers at once, still pending, and the
    browser polls. The first learner's wait is not cut short by it."""
    monkeypatch.setattr(waiting, "RECHECK_S", 60.0)
    app = make_app(LONG_POLL_WAITERS=1, GRADING_WORKERS=2)
    held = hold(app)
    first, second = new_session(app).guest(), new_session(app).guest()
    ids = [who.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json["id"]
           for who in (first, second)]
    assert held.started.wait(30)  # running before the GET: only the row's end can end its wait
    answers: list[Any] = []
    thread = get_in_thread(first, f"/api/submissions/{ids[0]}?wait=20", answers)
    deadline = time.monotonic() + 10
    while not waiting.finishes(app).waiting_now and time.monotonic() < deadline:  # the first holds the seat
        time.sleep(0.01)
    started = time.monotonic()
    body = second.api("GET", f"/api/submissions/{ids[1]}?wait=20").json
    assert body["status"] in ("queued", "running") and time.monotonic() - started < 5
    assert not answers and thread.is_alive()
    held.release.set()
    thread.join(30)
    assert answers[0][1]["status"] == "error"


@pytest.mark.parametrize(("query", "said"), [(f"wait={wait}", "seconds") for wait in ["abc", "-1", "inf", "nan", ""]]
                         + [(f"wait=20&seen={seen}", "queued or running") for seen in ["done", "bogus", ""]])
def test_a_wait_or_seen_status_that_makes_no_sense_is_refused(app, hold, query, said) -> None:  # noqa: ANN001
    """A wait that is not a number of seconds, or a last-seen status that cannot change, answers 400."""
    held = hold(app)
    learner = new_session(app).guest()
    created = learner.api("POST", "/api/runs", {"exercise": EXERCISE, "code": CODE}).json
    response = learner.api("GET", f"/api/runs/{created['id']}?{query}")
    held.release.set()
    assert response.status_code == 400 and said in response.json["error"]


def test_no_one_waits_on_someone_elses_submission(app, hold) -> None:  # noqa: ANN001
    held = hold(app)
    owner, other = new_session(app).guest(), new_session(app).guest()
    created = owner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json
    started = time.monotonic()
    assert other.api("GET", f"/api/submissions/{created['id']}?wait=20").status_code == 404
    assert time.monotonic() - started < 5
    held.release.set()


def test_one_learner_holds_one_waiting_seat_however_many_they_ask_for(app, hold, monkeypatch) -> None:  # noqa: ANN001
    """Four GETs of one learner's pending row at once: one waits, the others answer at once, and another
    learner still finds a seat (DLA_LONG_POLL_WAITERS is 4 here)."""
    monkeypatch.setattr(waiting, "RECHECK_S", 60.0)
    held = hold(app)
    learner, other = new_session(app).guest(), new_session(app).guest()
    mine = learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json["id"]
    theirs = other.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json["id"]
    answers: list[Any] = []
    first = get_in_thread(learner, f"/api/submissions/{mine}?wait=20", answers)
    deadline = time.monotonic() + 10
    while not waiting.finishes(app).waiting_now and time.monotonic() < deadline:
        time.sleep(0.01)
    for _ in range(3):
        started = time.monotonic()
        assert learner.api("GET", f"/api/submissions/{mine}?wait=20").json["status"] in ("queued", "running")
        assert time.monotonic() - started < 5
    theirs_answers: list[Any] = []
    second = get_in_thread(other, f"/api/submissions/{theirs}?wait=20", theirs_answers)
    while waiting.finishes(app).waiting_now < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert waiting.finishes(app).waiting_now == 2 and not answers and not theirs_answers
    held.release.set()
    first.join(30)
    second.join(30)
    assert answers[0][1]["status"] == "error" and theirs_answers[0][1]["status"] in ("running", "error")


def test_a_wait_on_a_queued_row_ends_when_it_starts_running(app, hold, monkeypatch) -> None:  # noqa: ANN001
    """The page says "Running" as soon as the job starts: a wait ends on any change of status, not only at
    the verdict. Two guests of one address take one turn, so the second's row waits queued behind the first."""
    monkeypatch.setattr(waiting, "RECHECK_S", 0.05)
    held = hold(app)
    first, second = new_session(app).guest(), new_session(app).guest()
    first.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE})
    assert held.started.wait(30)
    then = hold(app)  # the second job, when its turn comes, runs and is held in turn
    queued = second.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json["id"]
    answers: list[Any] = []
    # As the page does, the GET says it saw "queued": the second job may start before the GET reads the row,
    # and a wait that took the status it read then would last until the verdict.
    thread = get_in_thread(second, f"/api/submissions/{queued}?wait=20&seen=queued", answers)
    held.release.set()
    thread.join(30)
    status, body, seconds = answers[0]
    assert then.started.wait(5) and body["status"] == "running" and seconds < 15, (body, seconds)


def test_a_wait_from_a_page_that_saw_queued_answers_a_running_row_at_once(app, hold, monkeypatch) -> None:  # noqa: ANN001
    """The job may start between the page's POST and its first GET: the page says what it last showed
    (`seen=queued`), and a row already running answers at once, not at the verdict (the page would say
    "Queued" through the whole grading). Without `seen`, the status at the GET is the one that must change."""
    monkeypatch.setattr(waiting, "RECHECK_S", 60.0)
    held = hold(app)
    learner = new_session(app).guest()
    created = learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json["id"]
    assert held.started.wait(30)
    started = time.monotonic()
    answer = learner.api("GET", f"/api/submissions/{created}?wait=20&seen=queued")
    assert answer.json["status"] == "running" and time.monotonic() - started < 5
    _, body, _ = _held_until_release(learner, f"/api/submissions/{created}?wait=20&seen=running", held,
                                     "a running row answered a page that already showed it running")
    assert body["status"] == "error"

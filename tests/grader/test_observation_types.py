"""Whatever the learner's process sends, the grading is never "the grader failed" (issue 48, finding 4).

A probe's observations are written next to the learner's code, so any of them may hold a value of the wrong
type: a break's `line` as text reached `fail(line=...)`, the host refused the raw verdict ("malformed verdict:
'7' is not of type 'integer', 'null'") and the learner got an infra-error with the seed lost. The checking
API takes what a check hands it as data (grader.checks.grading.checking.CheckFailed), and a raw verdict leaves the
grading process only in its schema's shape (RawVerdict.bounded). The property test runs every exercise's
checks on real observations with wrong types put in (tests/grader/mutated_observations.py)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from grader.checks.grading.checking import CheckFailed, explained_by, fail
from grader.core.course import load_course
from grader.core.protocol import MAX_FIGURES, ErrorInfo, RawVerdict, Status, parse_output_line
from tests.support.paths import REPO

NOT_A_LINE = "which is not a line of your file: no line is marked"


@pytest.mark.parametrize("line, said", [("7", "the text '7'"), (True, "a bool"), (0, "0"), (-3, "-3"),
                                        (2**62, "a number of 19 digits"), (["7"], "a list"), (7.0, "7")])
def test_a_line_that_is_no_line_marks_none_and_says_so(line, said):
    with pytest.raises(CheckFailed) as failed:
        fail("The scheduler stepped on a skipped step.", line=line)
    assert failed.value.line is None
    assert failed.value.message == (f"The scheduler stepped on a skipped step. (Your code's process reported "
                                    f"{said} as the line of this, {NOT_A_LINE}.)")


def test_a_real_line_is_kept_and_nothing_is_added():
    with pytest.raises(CheckFailed) as failed:
        fail("backward ran on the raw loss.", event={"index": 4, "line": 12})
    assert (failed.value.line, failed.value.event, failed.value.message) == (12, 4, "backward ran on the raw loss.")


def test_what_is_not_an_event_a_hint_or_a_check_id_is_not_used():
    with pytest.raises(CheckFailed) as failed:
        fail("wrong", event=["not", "an", "event"], hint=["a", "list"])
    assert (failed.value.line, failed.value.event, failed.value.hint) == (None, None, None)
    with pytest.raises(CheckFailed) as failed:
        fail("wrong", event={"index": "3", "line": 5})
    assert (failed.value.line, failed.value.event) == (5, None)
    with pytest.raises(CheckFailed) as failed:
        explained_by(["runs"], "wrong", line="9")
    assert (failed.value.explained_by, failed.value.line) == (None, None)


def test_a_raw_verdict_leaves_the_grading_process_in_its_schemas_shape():
    # What a check (or a plugin, or a figure built from observations) could put there: every value of the
    # wrong type. The host reads the line as it reads a grading process's; before, it refused it (an infra-error).
    figure = {"kind": "table", "id": "t", "title": "T", "caption": "c", "alt": "a", "columns": ["x"],
              "rows": [[1.0]]}
    raw = RawVerdict(status=Status.FAILED, checks={
        "a": {"passed": False, "message": "m", "line": "7", "event": [1], "hint": 3, "explained_by": ["b"]},
        "b": {"passed": "no", "message": ["m"], "line": True, "extra": "x" * 10_000},
        "c": "not a mapping",
    }, trace={"title": "t", "rows": float("nan")}, figures=[
        {**figure, "rows": [[float("nan")]]}, {**figure, "rows": [[object()]]}, *[figure] * (MAX_FIGURES + 3)])
    kind, parsed = parse_output_line(raw.bounded().encode())
    assert kind == "verdict"
    assert parsed.checks == {"a": {"passed": False, "message": "m", "line": None, "event": None},
                             "b": {"passed": False, "message": "", "line": None, "event": None},
                             "c": {"passed": False, "message": ""}}
    assert parsed.trace is None and parsed.figures == [figure] * MAX_FIGURES
    assert any("check 'a': line '7' is not one: left out" in p for p in parsed.problems), parsed.problems


def test_an_error_line_that_is_a_bool_is_no_line():
    raw = RawVerdict(status=Status.ERROR)
    raw.error = ErrorInfo("exception", "Your code raised", True)
    _, parsed = parse_output_line(raw.bounded().encode())
    assert parsed.error.line is None


@pytest.fixture(scope="module")
def mutated_runs():
    proc = subprocess.run([sys.executable, "-m", "tests.grader.mutated_observations"], capture_output=True,
                          text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_every_exercises_checks_on_observations_of_the_wrong_type_judge_the_learner(mutated_runs):
    exercises = load_course().exercises
    assert {r["exercise"] for r in mutated_runs} == set(exercises)
    for report in mutated_runs:
        where = f"{report['exercise']}, {report['mutation']}"
        assert report["status"] in ("failed", "passed"), (where, report.get("error"), report.get("traceback"))
        assert report["ran"] == sorted(c.id for c in exercises[report["exercise"]].checks), where
        assert not any(p.startswith("pytest exited") for p in report["problems"]), (where, report["problems"])
    # The reported attack: skipped-steps' advances with their lines as text. The check still fails, as the
    # learner's doing, and says why no line is marked.
    advances = next(r for r in mutated_runs if r["exercise"] == "mixed-precision/skipped-steps"
                    and r["mutation"] == "lines as text")
    scheduler = advances["checks"]["scheduler-on-real-steps"]
    assert scheduler["status"] == "failed" and scheduler["line"] is None and NOT_A_LINE in scheduler["message"]

"""Every exercise's example.py, as Run uses it: the reference solution runs on it, confined (local sandbox),
and returns without an error."""
from __future__ import annotations

import pytest

from grader.core.course import load_course
from grader.host.grading import run_example
from tests.support.paths import EXERCISES

pytestmark = pytest.mark.slow


def test_the_reference_solution_runs_on_every_example(warm_sandbox) -> None:
    course = load_course(EXERCISES)
    sandbox = warm_sandbox("local")
    for exercise in course.exercises.values():
        run = run_example(exercise, exercise.solution_code(), sandbox=sandbox)
        assert run["status"] == "ran" and run["error"] is None, (exercise.id, run)
        assert run["returned"] is not None and len(run["returned"]) <= 2000


def test_a_run_reports_an_error_with_its_line_and_caps_what_it_returns() -> None:
    # A cold process (sandbox="local"): what `grader run` does.
    exercise = load_course(EXERCISES).exercises["mixed-precision/amp-step"]
    solution = exercise.solution_code()
    assert "    return loss.detach()\n" in solution
    huge = solution.replace("    return loss.detach()\n", "    print('hello')\n    return 'x' * 100_000\n")
    run = run_example(exercise, huge, sandbox="local")
    assert run["status"] == "ran" and run["output"] == "hello\n"
    assert run["returned_truncated"] and len(run["returned"]) == 2000
    broken = solution.replace("    return loss.detach()\n", "    return undefined_name\n")
    run = run_example(exercise, broken, sandbox="local")
    assert run["status"] == "error" and run["returned"] is None
    assert run["error"]["line"] == broken.splitlines().index("    return undefined_name") + 1
    assert "NameError" in run["error"]["message"]

"""Every exercise in the repository validates: its solution passes and each mistake fails exactly the
checks it declares. Parametrised from the course files, so a new exercise folder is covered unasked."""
import pytest

from grader.core.course import load_course
from tests.helpers import run_grader


@pytest.mark.slow
@pytest.mark.parametrize("exercise", sorted(load_course().exercises))
def test_exercise_validates(exercise):
    proc = run_grader("validate", exercise, "--sandbox", "local", timeout=900)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert "WRONG" not in out and "ok    solution.py: passes every check" in out

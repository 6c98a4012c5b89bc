"""`grader validate` on lessons 2-4: each solution passes, each mistake fails exactly what it declares."""
import pytest

from tests.conftest import run_grader

EXERCISES = ["gradient-accumulation/accumulate-amp", "profiling/fix-the-bottleneck", "gpu-memory/fit-the-budget"]


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_exercise_validates(exercise):
    proc = run_grader("validate", exercise, timeout=900)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert "WRONG" not in out and "passes every check" in out

"""Every exercise in the repository validates: solutions pass, each mistake fails exactly what it declares."""
from tests.conftest import run_grader


def test_every_exercise_in_the_repository_validates():
    proc = run_grader("validate", timeout=1800)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert "WRONG" not in out
    assert "mixed-precision/amp-step" in out and "mixed-precision/fix-underflow" in out

"""Every exercise in the repository validates: its solution passes and each mistake fails exactly the
checks it declares. Parametrised from the course files, so a new exercise folder is covered unasked.

One `grader validate` run grades every selected exercise on one warm pool (a run per exercise paid a CLI
start and a pool's torch start-ups each time); each test reads its own exercise's lines of that report."""
import pytest

from grader.core.course import load_course
from tests.helpers import run_grader

EXERCISES = sorted(load_course().exercises)


@pytest.fixture(scope="module")
def validation_report(request) -> dict[str, str]:
    """Each selected exercise's lines of one `grader validate` run (its header line first), by exercise id."""
    selected = [item.callspec.params["exercise"] for item in request.session.items
                if item.originalname == "test_exercise_validates" and hasattr(item, "callspec")]
    proc = run_grader("validate", *selected, "--sandbox", "local", timeout=1800)
    sections: dict[str, list[str]] = {}
    current = None
    for line in proc.stdout.decode().splitlines():
        if line in EXERCISES:
            current = line
            sections[current] = []
        if current is not None:
            sections[current].append(line)
    report = {exercise: "\n".join(lines) for exercise, lines in sections.items()}
    report["stderr"] = proc.stderr.decode()
    return report


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_exercise_validates(exercise, validation_report):
    out = validation_report.get(exercise)
    assert out is not None, f"grader validate printed nothing for {exercise}:\n{validation_report['stderr']}"
    assert "WRONG" not in out and "invalid:" not in out, out
    assert "ok    solution.py: passes every check" in out, out

"""`grader new`: a scaffold that validates at once, a copy of an exercise under a new id, plain refusals."""
import shutil

import pytest

from grader.core.course import load_exercise
from tests.support.grading import run_grader
from tests.support.paths import EXERCISES


@pytest.fixture
def course(tmp_path):
    """A private copy of the course, which `grader new` may write into."""
    root = tmp_path / "exercises"
    shutil.copytree(EXERCISES, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def grader(course, *args):
    proc = run_grader(*args, env={"DLA_EXERCISES": str(course)}, timeout=300)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


@pytest.mark.slow
def test_a_new_exercise_validates_at_once(course):
    code, out, err = grader(course, "new", "gpu-memory/clip-after-unscale")
    assert code == 0, err
    folder = course / "gpu-memory" / "clip-after-unscale"
    assert "mistakes/forgets-the-step.py" in out and "checks/test_checks.py" in out
    # Not listed for learners until the author says so: the line to add is printed instead.
    assert "\n  - exercise: clip-after-unscale\n" in out
    assert "clip-after-unscale" not in (course / "gpu-memory" / "lesson.yaml").read_text()
    code, out, err = grader(course, "validate", str(folder), "--sandbox", "local")
    assert code == 0, out + err
    assert "ok    solution.py: passes every check" in out
    assert ("ok    mistakes/forgets-the-step.py: failed matches-reference (declared: matches-reference)"
            "   [outside: caught]") in out


def test_from_copies_an_exercise_under_the_new_id(course):
    source = course / "mixed-precision" / "amp-step"
    (source / "checks" / "__pycache__").mkdir()
    (source / "checks" / "__pycache__" / "probe.cpython-311.pyc").write_bytes(b"stale")
    code, out, err = grader(course, "new", "profiling/amp-step-clipping", "--from", "mixed-precision/amp-step")
    assert code == 0, err
    copy = course / "profiling" / "amp-step-clipping"
    files = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert files == sorted(str(p.relative_to(source)) for p in source.rglob("*")
                           if p.is_file() and "__pycache__" not in p.parts)
    assert (copy / "solution.py").read_text() == (source / "solution.py").read_text()
    assert "Checks for profiling/amp-step-clipping." in (copy / "checks" / "test_amp_step.py").read_text()
    copied, original = load_exercise(copy, "profiling/amp-step-clipping"), load_exercise(source, "x/y")
    assert copied.checks == original.checks and len(copied.mistakes()) == len(original.mistakes())


@pytest.mark.parametrize(("args", "message"), [
    (["new", "mixed-precision/amp-step"], "already exists"),
    (["new", "Mixed-Precision/amp-step-2"], "is not an exercise id: write LESSON/EXERCISE"),
    (["new", "amp-step-2"], "is not an exercise id"),
    (["new", "mixed-precision/amp_step_2"], "is not an exercise id"),
    (["new", "mixed-precision/a/b"], "is not an exercise id"),
    (["new", "no-such-lesson/amp-step-2"], "there is no lesson 'no-such-lesson'"),
    (["new", "profiling/copy", "--from", "no/such"], "unknown exercise 'no/such'"),
])
def test_refusals_are_plain_and_change_nothing(course, args, message):
    before = sorted(p for p in course.rglob("*"))
    code, out, err = grader(course, *args)
    assert code == 1 and out == ""
    assert err.startswith("Error: ") and message in err and "Traceback" not in err
    assert sorted(p for p in course.rglob("*")) == before

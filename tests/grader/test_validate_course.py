"""Every exercise in the repository validates: its solution passes and each mistake fails exactly the
checks it declares. Parametrised from the course files, so a new exercise folder is covered unasked.

One `grader validate` run grades every selected exercise on one warm pool (a run per exercise paid a CLI
start and a pool's torch start-ups each time); each test reads its own exercise's lines of that report."""
import pytest

from grader.core.course import load_course
from tests.support.grading import run_grader

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


@pytest.mark.slow
def test_a_step_count_moved_by_a_wrong_schedule_is_judged_on_its_own_run(warm_sandbox):
    """scheduler_before_step.py counts its own real steps right, but its earlier, faster-falling learning rate
    moves which steps overflow: with this seed its run steps 8 times where a correct loop steps 9 (`grader
    validate`'s random draw met such a seed about once in 20 runs). counts-real-steps then holds the count to
    the run's own real steps (scheduler-on-real-steps fails on outside evidence), so the mistake's declaration
    holds whatever the seed; a count that is neither (10) still fails."""
    from grader.host.grading import run_submission

    exercise = load_course().exercises["mixed-precision/skipped-steps"]
    code = (exercise.path / "mistakes" / "scheduler_before_step.py").read_text()
    sandbox = warm_sandbox("local")

    def checks(source: str) -> dict[str, str]:
        result = run_submission(exercise, source, sandbox=sandbox, seed=1733054788)
        return {c["id"]: c["status"] for c in result["checks"]}

    assert "    return steps\n" in code
    assert checks(code) == {"runs": "passed", "through-the-scaler": "passed", "scheduler-on-real-steps": "failed",
                            "ema-on-real-steps": "skipped", "counts-real-steps": "passed",
                            "matches-reference": "skipped"}
    assert checks(code.replace("    return steps\n", "    return steps + 2\n"))["counts-real-steps"] == "failed"


@pytest.mark.slow
def test_a_norm_under_max_norm_after_wrong_syncs_is_no_clipping_error(warm_sandbox):
    """never-no-sync.py clips right but all-reduces after every micro-batch. Its gradients are then not a correct
    run's: with this seed a window's norm stayed under max_norm unclipped, and unscale-then-clip said it was "cut
    harder than clipping to max_norm does" (`grader validate`'s draw met such seeds 2 times in 30). A norm under
    max_norm is judged only where every window synced once, at its end; the wrong syncs fail on the grader's own
    count either way."""
    from grader.host.grading import run_submission

    exercise = load_course().exercises["gradient-accumulation/ddp-clip"]
    code = (exercise.path / "mistakes" / "never-no-sync.py").read_text()
    result = run_submission(exercise, code, sandbox=warm_sandbox("local"), seed=1785938965)
    assert {c["id"]: c["status"] for c in result["checks"]} == {
        "runs": "passed", "syncs-once-per-window": "failed", "unscale-then-clip": "passed",
        "steps-through-the-scaler": "passed", "same-weights-on-both-ranks": "skipped", "matches-reference": "skipped"}

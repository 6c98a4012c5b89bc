"""The `grader` CLI contract: exit codes, the JSON shape, readable reports and bad input."""
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from tests.support.grading import check_json, run_grader, run_grader_here
from tests.support.paths import EXERCISES

AMP = EXERCISES / "mixed-precision" / "amp-step"
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "grader" / "core" / "schemas" / "result.json").read_text())


@pytest.fixture(scope="module")
def here(warm_sandbox):
    """The session's warm local sandbox: the tests that grade the repository's amp-step run the command in this
    process through it (tests.support.grading.run_grader_here); the console script itself is run cold by the others."""
    return warm_sandbox("local")


def torch_import_s() -> float:
    """The floor a fresh grading process cannot beat, on this machine now: `python -c "import torch"`."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.monotonic() - started


def test_reference_solution_passes_with_the_documented_json_shape():
    floor = torch_import_s()
    started = time.monotonic()
    code, result = check_json("mixed-precision/amp-step", AMP / "solution.py")
    assert code == 0
    jsonschema.validate(result, SCHEMA)
    assert result["passed"] is True and result["score"] == 1.0 and result["status"] == "passed"
    assert result["exercise"] == "mixed-precision/amp-step"
    assert result["device"] == "cpu (cuda emulated)"
    assert result["sandbox"] == "local"
    assert {c["id"] for c in result["checks"]} >= {"autocast-scope", "scaled-backward", "step-update-order"}
    for check in result["checks"]:
        assert set(check) >= {"id", "title", "passed", "message", "hint", "line"}
    # The 5 s target is measured in benchmarks/grader_check.py. This bounds a regression on a quiet machine
    # (15 s) and scales with the floor when the other test worker slows both (a fresh interpreter took 3x as long).
    assert time.monotonic() - started < max(15, 5 * floor)


def test_a_failing_check_exits_1_and_names_the_line(here):
    code, result = check_json("mixed-precision/amp-step", AMP / "mistakes" / "raw_backward.py", here=here)
    assert code == 1
    assert result["passed"] is False and 0 < result["score"] < 1
    scaled = next(c for c in result["checks"] if c["id"] == "scaled-backward")
    assert not scaled["passed"]
    assert "raw loss" in scaled["message"] and scaled["line"] == 11
    assert scaled["hint"]
    assert next(c for c in result["checks"] if c["id"] == "autocast-scope")["passed"]


def test_exercise_can_be_given_as_a_folder(here):
    code, result = check_json(str(AMP), AMP / "solution.py", here=here)
    assert code == 0 and result["exercise"] == "mixed-precision/amp-step"


def test_terminal_report_is_readable(here):
    proc = run_grader_here(here, "check", "mixed-precision/amp-step", str(AMP / "mistakes" / "no_zero_grad.py"),
                           "--sandbox", "local")
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert "FAIL  Gradients cleared before backward  [grads-cleared]" in out
    assert "hint: Call `optimizer.zero_grad()`" in out
    assert "4/6 checks passed" in out
    assert "\x1b[" not in out  # no colour codes when stdout is not a terminal


@pytest.mark.parametrize("make, expected", [
    (lambda d: d / "missing.py", "no such file"),
    (lambda d: (d / "bin.py").write_bytes(b"\x7fELF\x00\x01\x02") and d / "bin.py", "binary file"),
    (lambda d: (d / "latin.py").write_bytes("x = 'café'\n".encode("latin-1")) and d / "latin.py", "not UTF-8"),
    (lambda d: (d / "big.py").write_bytes(b"# padding\n" * 500_000) and d / "big.py", "limit is 256 KB"),
    (lambda d: d, "is a directory"),
])
def test_bad_files_exit_2_with_a_clear_message(tmp_path, make, expected):
    proc = run_grader("check", "mixed-precision/amp-step", str(make(tmp_path)), "--sandbox", "local")
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr.decode()


def test_unknown_exercise_exits_2_and_lists_the_known_ones():
    proc = run_grader("check", "mixed-precision/nope", str(AMP / "solution.py"))
    assert proc.returncode == 2
    assert "unknown exercise 'mixed-precision/nope'" in proc.stderr.decode()
    assert "mixed-precision/amp-step" in proc.stderr.decode()


@pytest.fixture(scope="module")
def unrunnable_checks(request, tmp_path_factory, here) -> dict[str, tuple[int, dict]]:
    """`grader check --json` of every selected unrunnable source, through the warm pool, by source."""
    sources = [item.callspec.params["source"] for item in request.session.items
               if item.originalname == "test_code_that_cannot_run_fails_with_a_plain_error"
               and hasattr(item, "callspec")]
    folder = tmp_path_factory.mktemp("unrunnable")
    results = {}
    for number, source in enumerate(sources):
        path = folder / f"s{number}.py"
        path.write_text(source)
        results[source] = check_json("mixed-precision/amp-step", path, here=here)
    return results


@pytest.mark.parametrize("source, kind, message, line", [
    ("def train_step(model, optimizer, scaler, loss_fn, x, y)\n    return 1\n", "syntax", "syntax error on line 1", 1),
    ("", "missing", "does not define `train_step`", None),
    ("def step(model, optimizer, scaler, loss_fn, x, y):\n    pass\n", "missing", "does not define `train_step`", None),
    ("def train_step(model, opt):\n    pass\n", "signature",
     "must accept (model, optimizer, scaler, loss_fn, x, y)", 1),
    ("import torch\n\nvalue = 1 / 0\n", "exception", "raised ZeroDivisionError on line 3 while it was being loaded", 3),
    ("train_step = 3\n", "missing", "is a int, not a function", None),
])
def test_code_that_cannot_run_fails_with_a_plain_error(unrunnable_checks, source, kind, message, line):
    code, result = unrunnable_checks[source]
    assert code == 1
    assert result["status"] == "error"
    assert result["error"]["kind"] == kind
    assert message in result["error"]["message"]
    assert result["error"]["line"] == line
    # One message: every check skipped because the code did not load, none with a message or hint.
    assert all(c["status"] == "skipped" and c["passed"] is None and c["because"] == "load"
               and not c["message"] and not c["hint"] for c in result["checks"])
    assert result["score"] == 0 and result["device"] is None


def test_exception_inside_the_step_names_the_call_and_line(tmp_path, here):
    path = tmp_path / "s.py"
    solution = (AMP / "solution.py").read_text()
    assert "    return loss.detach()\n" in solution
    path.write_text(solution.replace("    return loss.detach()\n", "    return loss.item() / 0\n"))
    code, result = check_json("mixed-precision/amp-step", path, here=here)
    runs = next(c for c in result["checks"] if c["id"] == "runs")
    assert code == 1 and not runs["passed"]
    assert runs["message"].startswith("Call 1 of train_step failed. Your code raised ZeroDivisionError on line 13")
    assert runs["line"] == 13


def test_broken_exercise_is_an_infrastructure_failure(tmp_path):
    broken = tmp_path / "mixed-precision" / "amp-step"
    shutil.copytree(AMP, broken)
    (broken / "checks" / "probe.py").write_text("raise RuntimeError('probe bug')\n")
    proc = run_grader("check", str(broken), str(AMP / "solution.py"), "--json", "--sandbox", "local")
    assert proc.returncode == 3
    result = json.loads(proc.stdout)
    assert result["status"] == "infra-error"
    assert "probe bug" in result["error"]["message"]


def test_list_shows_exercises_with_titles():
    proc = run_grader("list")
    out = proc.stdout.decode()
    assert proc.returncode == 0
    assert "mixed-precision/amp-step" in out and "Write one AMP training step" in out


def test_validate_reports_a_mistake_that_is_not_caught(tmp_path):
    copy = tmp_path / "mixed-precision" / "amp-step"
    shutil.copytree(AMP, copy)
    for extra in (copy / "mistakes").glob("*.py"):
        extra.unlink()
    # A "mistake" that is in fact correct: validate must say the declared check passed.
    (copy / "mistakes" / "not_a_mistake.py").write_text(
        "# expect-fail: scaled-backward\n" + (AMP / "solution.py").read_text())
    proc = run_grader("validate", str(copy), "--seeds", "2")
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert "ok    solution.py: passes every check (2 seeds)" in out
    # one line per wrong grading, with the seed that replays it (grader check --seed)
    wrong = [line for line in out.splitlines() if "WRONG" in line]
    assert len(wrong) == 2, out
    for line in wrong:
        assert re.search(r"WRONG mistakes/not_a_mistake.py: failed nothing \(declared: scaled-backward\); "
                         r"expected to fail but passed: scaled-backward \(seed \d+\)$", line), line
    assert "2 problem(s)" in out


def test_validate_grades_an_exercise_outside_the_course_on_a_warm_pool_of_its_folder(tmp_path):
    """`grader validate FOLDER` for an exercise outside the course: its cases are graded by a warm pool serving
    that folder (one had served the configured course instead, and every case paid a cold interpreter)."""
    from unittest import mock

    from click.testing import CliRunner

    from grader.host.cli import main
    from sandbox.local import LocalSandbox

    copy = tmp_path / "mixed-precision" / "amp-step"
    shutil.copytree(AMP, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for extra in sorted((copy / "mistakes").glob("*.py"))[1:]:
        extra.unlink()
    with mock.patch.object(LocalSandbox, "start", side_effect=AssertionError("a cold grading process")) as cold:
        result = CliRunner().invoke(main, ["validate", str(copy), "--sandbox", "local"])
    assert cold.call_count == 0 and result.exit_code == 0, result.output
    assert "ok    solution.py: passes every check" in result.output


def test_run_shows_what_the_function_printed_returned_or_raised(tmp_path, here):
    code = (AMP / "solution.py").read_text().replace("    return loss", "    print('here')\n    return loss")
    good = tmp_path / "good.py"
    good.write_text(code)
    done = run_grader("run", "mixed-precision/amp-step", str(good), "--sandbox", "local")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "printed:\n  here\n" in out and "returned: tensor(" in out
    bad = tmp_path / "bad.py"
    bad.write_text(code.replace("    print('here')\n", "    print(undefined)\n"))
    failed = run_grader_here(here, "run", "mixed-precision/amp-step", str(bad), "--sandbox", "local", "--json")
    assert failed.returncode == 1
    run = json.loads(failed.stdout)
    assert run["status"] == "error" and run["returned"] is None and "NameError" in run["error"]["message"]
    assert run["error"]["line"] == code.splitlines().index("    print('here')") + 1

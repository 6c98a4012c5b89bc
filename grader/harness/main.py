"""The grading process: run one submission against one exercise and produce the raw verdict.

    python -m grader.harness --exercise-dir DIR --submission FILE [--seed N] [--hide PATH ...]

prints one JSON object on stdout (and nothing else: anything else this process would print goes to
stderr). The sandboxes (local process, Docker container, warm pool) all run exactly this.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

MAX_CODE_BYTES = 256 * 1024


def warm_up() -> None:
    """Import what a grading run needs before forking: the child then starts ~2 s sooner.

    No tensor op may run here: a multi-threaded op before fork() can deadlock the child.
    """
    import torch

    torch.set_num_threads(1)
    import torch._dynamo  # noqa: F401 - optimizers import it lazily on first construction (~0.9 s)
    import torch.optim  # noqa: F401
    import pytest  # noqa: F401

    from grader.harness import amp, learner, plugin  # noqa: F401

    # Everything imported so far lives as long as the process: keep it out of the collector's sweeps
    # (pytest calls gc.collect() several times per run; with torch loaded each costs ~0.1 s).
    gc.freeze()


def _error_result(kind: str, message: str, line: int | None = None) -> dict[str, Any]:
    return {"status": "error", "error": {"kind": kind, "message": message, "line": line}}


def _syntax_error(code: str) -> dict[str, Any] | None:
    try:
        compile(code, "submission.py", "exec")
    except SyntaxError as exc:
        where = f" on line {exc.lineno}" if exc.lineno else ""
        return _error_result("syntax", f"Your code has a syntax error{where}: {exc.msg}.", exc.lineno)
    except ValueError as exc:  # e.g. null bytes
        return _error_result("syntax", f"Your code cannot be compiled: {exc}.")
    return None


def _run_checks(exercise_dir: Path, observed: dict[str, Any], run_facts: dict[str, Any]) -> tuple[
        dict[str, dict[str, Any]], list[str]]:
    import pytest

    from grader.harness import plugin

    check_run = plugin.CheckRun(observed=observed, run=run_facts)
    plugin.activate(check_run)
    checks_dir = exercise_dir / "checks"
    sys.path.insert(0, str(checks_dir))
    ini = Path(__file__).with_name("pytest.ini")
    args = [str(checks_dir), "-c", str(ini), "--rootdir", str(checks_dir), "-p", "no:cacheprovider",
            "-p", "grader.harness.plugin", "--import-mode=importlib", "-q", "--no-header",
            "-W", "ignore::DeprecationWarning"]
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        code = pytest.main(args)
    if code not in (0, 1):
        check_run.problems.append(f"pytest exited {code}: {captured.getvalue()[-2000:]}")
    return check_run.results, check_run.problems


def grade(exercise_dir: Path, code: str, *, seed: int | None = None,
          hide: list[Path] | None = None) -> dict[str, Any]:
    """Grade `code` against the exercise in `exercise_dir`; returns the raw verdict (see result.py)."""
    from grader.course import load_exercise
    from grader.harness.isolation import Limits, run_confined
    from grader.harness.learner import make_target

    started = time.monotonic()
    exercise = load_exercise(exercise_dir, f"{exercise_dir.parent.name}/{exercise_dir.name}",
                             authoring_files=False)
    seed = random.randrange(1, 2**31) if seed is None else seed
    verdict = _syntax_error(code)
    if verdict is None:
        import torch

        from grader.harness.emulation import amp_device

        limits = Limits(time_s=exercise.time_limit_s, memory_mb=exercise.memory_mb)
        before_drop, target = make_target(exercise.checks_dir, code, exercise.entry, list(exercise.params),
                                          seed, exercise.memory_mb)
        keep = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
                Path(__file__).resolve().parents[2], Path(torch.__file__).resolve().parents[1]]
        hidden = [exercise_dir.resolve().parent.parent, Path.home(), Path("/root"), Path("/home")]
        outcome = run_confined(target, limits, hidden + list(hide or []), keep, before_drop)
        verdict = _interpret(outcome, limits)
        verdict["output"] = outcome.output
        verdict["output_truncated"] = outcome.output_truncated
        notes = verdict.setdefault("notes", [])
        notes.extend(n for n in outcome.isolation if n not in notes)
        if verdict["status"] == "observed":
            device = amp_device()
            run_facts = {"seed": seed, "device": device, "emulated": device != "cuda",
                         "entry": exercise.entry}
            results, problems = _run_checks(exercise.path, verdict.pop("observations"), run_facts)
            verdict["checks"] = results
            verdict["problems"] = problems
            declared = {c.id for c in exercise.checks}
            missing = declared - set(results)
            if missing:
                verdict["problems"].append(f"declared checks with no test: {sorted(missing)}")
            all_passed = all(r["passed"] for r in results.values()) and not missing
            verdict["status"] = "passed" if all_passed else "failed"
    verdict["seed"] = seed
    verdict["harness_s"] = round(time.monotonic() - started, 3)
    return verdict


def _interpret(outcome, limits) -> dict[str, Any]:
    """Turn how the learner's process ended into observations or a learner-facing error."""
    import signal as signals

    import torch

    from grader.harness.isolation import OUTPUT_CAP

    if outcome.timed_out:
        return {"status": "timeout", "error": {"kind": "timeout", "line": None,
                "message": f"Time limit of {limits.time_s:g} s exceeded: your code was stopped."}}
    message = None
    if outcome.payload is not None:
        try:
            message = torch.load(io.BytesIO(outcome.payload), weights_only=True)
        except Exception as exc:  # noqa: BLE001 - anything unreadable is the learner's doing
            return _error_result("protocol", f"The grader could not read what your code's process sent back "
                                             f"({type(exc).__name__}).")
    if outcome.signal is not None:
        name = signals.Signals(outcome.signal).name if outcome.signal in signals.Signals._value2member_map_ \
            else str(outcome.signal)
        if outcome.signal == signals.SIGXCPU:
            text = f"CPU time limit exceeded ({limits.time_s:g} s): your code was stopped."
        elif outcome.signal == signals.SIGXFSZ:
            text = f"Your code wrote a file larger than {limits.max_file_mb} MB and was stopped."
        else:
            text = f"Your code's process was killed ({name})."
        return {"status": "killed", "error": {"kind": "killed", "message": text, "line": None}}
    if outcome.output_truncated:
        # Flooding the output is how a submission would hide a forged verdict or stall the grader.
        return {"status": "killed", "error": {"kind": "output", "line": None, "message":
                f"Your code printed more than {OUTPUT_CAP // 1024} KB of output; keep prints short."}}
    if outcome.exit_code == 71:
        return _error_result("memory", f"Your code ran out of memory (limit {limits.memory_mb} MB).")
    if not isinstance(message, dict) or outcome.exit_code != 0:
        return _error_result("exit", f"Your code ended its process (exit code {outcome.exit_code}) before it "
                                     f"could be graded.")
    if message.get("infra"):
        return {"status": "infra-error", "error": {"kind": "infra", "line": None, "message": str(message["infra"])}}
    result: dict[str, Any] = {"device": message.get("device"), "notes": list(message.get("notes") or [])}
    if not message.get("ok"):
        err = message.get("error") or {}
        result.update(_error_result(str(err.get("kind", "exception")), str(err.get("message", "Your code failed.")),
                                    err.get("line") if isinstance(err.get("line"), int) else None))
        return result
    result.update(status="observed", observations=message.get("observations") or {})
    return result


def _read_submission(path: str) -> str:
    data = sys.stdin.buffer.read(MAX_CODE_BYTES + 1) if path == "-" else Path(path).read_bytes()
    return data.decode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.harness")
    parser.add_argument("--exercise-dir", required=True, type=Path)
    parser.add_argument("--submission", required=True, help="file with the learner's code, or - for stdin")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--hide", action="append", type=Path, default=[])
    args = parser.parse_args(argv)
    # Our stdout carries the verdict alone: keep a private copy, point fd 1 at stderr for everyone else.
    verdict_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        code = _read_submission(args.submission)
        warm_up()
        verdict = grade(args.exercise_dir, code, seed=args.seed, hide=args.hide)
    except Exception as exc:  # noqa: BLE001 - reported as an infrastructure failure
        import traceback

        traceback.print_exc()
        verdict = {"status": "infra-error", "error": {"kind": "infra", "line": None,
                   "message": f"The grader itself failed: {type(exc).__name__}: {exc}"}}
    verdict_out.write(json.dumps(verdict, default=str))
    verdict_out.flush()
    return 0

"""Grade one submission inside a grading process and produce its raw verdict.

`warm_up()` imports what grading needs (so a warm process answers in a fraction of a second) and
`verdict_for()` runs the learner's code in a confined child (isolation.py), then the exercise's pytest checks
here, in the grading process. The entry that calls them is grader/harness/serve.py.
"""
from __future__ import annotations

import contextlib
import gc
import io
import random
import sys
from pathlib import Path
from typing import Any

from grader.course import Exercise
from grader.harness.frame import FrameError, check_frame
from grader.harness.isolation import Confinement
from grader.protocol import RawVerdict, Status, error_verdict, infra_error, learner_timeout
from grader.settings import GRADER_MEMORY_MB

EMULATION_NOTE = ("No GPU here: CUDA autocast ran as CPU float16 autocast and the CUDA GradScaler as the CPU "
                  "GradScaler; timings and memory are the CPU's.")


def warm_up() -> None:
    """Import what a grading run needs before forking: the child then starts ~2 s sooner.

    No tensor op may run here: a multi-threaded op before fork() can deadlock the child.
    """
    import torch

    torch.set_num_threads(1)
    import pytest  # noqa: F401
    import torch._dynamo  # noqa: F401 - optimizers import it lazily on first construction (~0.9 s)
    import torch.optim  # noqa: F401

    from grader.harness import amp, learner, plugin, seccomp  # noqa: F401

    seccomp.available()  # loads libseccomp now: the learner's view has no library search path
    # Everything imported so far lives as long as the process: keep it out of the collector's sweeps
    # (pytest calls gc.collect() several times per run; with torch loaded each costs ~0.1 s).
    gc.freeze()


def run_pytest_once() -> None:
    """One pytest session on a trivial test: pytest's first session in a process imports and sets up
    much of itself lazily (~80 ms of a warm verdict's ~170 ms of checks, measured), so a process that
    waits for its request (a warm one) pays that before it arrives. No tensor op, no learner code."""
    import shutil
    import tempfile

    import pytest

    folder = tempfile.mkdtemp(prefix="dla-warm-")
    try:
        Path(folder, "test_warm.py").write_text("def test_warm():\n    assert True\n")
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main([folder, "-q", "-p", "no:cacheprovider", "--import-mode=importlib", "--rootdir", folder,
                         "-c", str(Path(__file__).with_name("pytest.ini"))])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _syntax_error(code: str) -> RawVerdict | None:
    try:
        compile(code, "submission.py", "exec")
    except SyntaxError as exc:
        where = f" on line {exc.lineno}" if exc.lineno else ""
        return error_verdict(Status.ERROR, "syntax", f"Your code has a syntax error{where}: {exc.msg}.", exc.lineno)
    except ValueError as exc:  # e.g. null bytes
        return error_verdict(Status.ERROR, "syntax", f"Your code cannot be compiled: {exc}.")
    return None


def _run_checks(exercise_dir: Path, observed: dict[str, Any], run_facts: dict[str, Any],
                outside: dict[str, Any]):  # noqa: ANN202 - plugin.CheckRun
    import pytest

    from grader.harness import plugin

    check_run = plugin.CheckRun(observed=observed, run=run_facts, outside=outside)
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
    return check_run


def verdict_for(exercise: Exercise, code: str, confinement: Confinement, *, seed: int | None = None,
                hide: list[Path] | None = None) -> RawVerdict:
    """Grade `code` against `exercise` (loaded from the harness's own copy of the checks).

    `hide`: host paths no part of the learner's view may contain (the web app's instance folder);
    the exercises folder is always one of them."""
    from grader.harness.isolation import Limits, run_confined
    from grader.harness.learner import make_target
    from grader.harness.view import grader_view

    seed = random.randrange(1, 2**31) if seed is None else seed
    _limit_self(exercise)
    verdict = _syntax_error(code)
    if verdict is None:
        from grader.harness.emulation import amp_device

        device = amp_device()
        limits = Limits(time_s=exercise.time_limit_s, memory_mb=exercise.memory_mb)
        referee = load_referee(exercise.checks_dir, seed, device)
        before_drop, target = make_target(exercise.checks_dir, code, exercise.entry, list(exercise.params),
                                          seed, exercise.memory_mb)
        view = grader_view([exercise.path.resolve().parent.parent, *(hide or [])]) \
            if confinement is Confinement.NAMESPACES else None
        outcome = run_confined(target, limits, confinement, view, before_drop, referee)
        verdict, observations = _interpret(outcome, limits)
        verdict.output = outcome.output
        verdict.output_truncated = outcome.output_truncated
        verdict.notes.extend(n for n in outcome.isolation if n not in verdict.notes)
        verdict.problems.extend(referee.problems)
        if observations is not None:
            # The checks read the grading side's copy of the events, never the list the frame claims.
            observations["events"] = referee.events
            for name, with_learner_code in referee.memory_runs:
                referee.memory[name] = _measure_memory(exercise, code, seed, name, with_learner_code,
                                                       confinement, view)
            run_facts = {"seed": seed, "device": device, "emulated": device != "cuda",
                         "entry": exercise.entry}
            check_run = _run_checks(exercise.path, observations, run_facts, referee.outside())
            results = verdict.checks = check_run.results
            verdict.problems.extend(check_run.problems)
            # The timeline shows the call (or window) of the first event that a check the learner will see
            # failed names (checks reported skipped, one mistake one message, mark nothing).
            from grader.display import focus
            from grader.result import shown_checks

            marked = [check.get("event") for check in shown_checks(exercise, verdict) if check["status"] == "failed"]
            verdict.trace, verdict.figures = focus(check_run.trace, marked), check_run.figures
            missing = {c.id for c in exercise.checks} - set(results)
            if missing:
                verdict.problems.append(f"declared checks with no test: {sorted(missing)}")
            all_passed = all(r["passed"] for r in results.values()) and not missing
            verdict.status = Status.PASSED if all_passed else Status.FAILED
    verdict.seed = seed
    return verdict


def run_for(exercise: Exercise, code: str, confinement: Confinement, *, seed: int | None = None,
            hide: list[Path] | None = None) -> RawVerdict:
    """A Run: call the learner's function once on the exercise's example (example.py), confined exactly as
    for grading (same limits, same view, same isolation), and report what it printed, what it returned or
    the error with its line. No checks run; the status is RAN when the function returned."""
    from grader.harness.isolation import Limits, run_confined
    from grader.harness.learner import make_run_target
    from grader.harness.view import grader_view

    seed = random.randrange(1, 2**31) if seed is None else seed
    _limit_self(exercise)
    verdict = _syntax_error(code)
    if verdict is None and not exercise.example_path.is_file():
        verdict = infra_error(f"The exercise {exercise.id} has no example to run (example.py).")
    if verdict is None:
        limits = Limits(time_s=exercise.time_limit_s, memory_mb=exercise.memory_mb)
        before_drop, target = make_run_target(exercise.path, code, exercise.entry, list(exercise.params), seed,
                                              exercise.memory_mb)
        view = grader_view([exercise.path.resolve().parent.parent, *(hide or [])]) \
            if confinement is Confinement.NAMESPACES else None
        outcome = run_confined(target, limits, confinement, view, before_drop)
        verdict, observations = _interpret(outcome, limits)
        verdict.output, verdict.output_truncated = outcome.output, outcome.output_truncated
        verdict.notes.extend(n for n in outcome.isolation if n not in verdict.notes)
        if observations is not None:
            verdict.status = Status.RAN
            verdict.run = {"returned": str(observations.get("returned", ""))[:4000],
                           "returned_truncated": bool(observations.get("returned_truncated"))}
    verdict.seed = seed
    return verdict


def load_referee(checks_dir: Path, seed: int, device: str):  # noqa: ANN201 - channel.Referee
    """The exercise's `checks/referee.py` Referee, or the plain one (it keeps the event stream)."""
    import importlib.util

    from grader.harness.channel import Referee

    path = checks_dir / "referee.py"
    if not path.exists():
        return Referee(seed, device)
    if str(checks_dir) not in sys.path:
        sys.path.insert(0, str(checks_dir))
    spec = importlib.util.spec_from_file_location("exercise_referee", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Referee(seed, device)


def _measure_memory(exercise: Exercise, code: str, seed: int, name: str, with_learner_code: bool,
                    confinement: Confinement, view) -> dict[str, Any]:  # noqa: ANN001 - view.View | None
    """One dedicated confined process that runs only the probe's `measure(api, name)`: its peak
    memory as the kernel counted it (isolation.Outcome), read here. Without the learner's code the
    process runs the exercise's own reference (api.entry is None)."""
    from grader.harness.isolation import Limits, run_confined
    from grader.harness.learner import make_target

    limits = Limits(time_s=exercise.time_limit_s, memory_mb=exercise.memory_mb)
    before_drop, target = make_target(exercise.checks_dir, code if with_learner_code else None, exercise.entry,
                                      list(exercise.params), seed, exercise.memory_mb, measure=name)
    outcome = run_confined(target, limits, confinement, view, before_drop)
    verdict, observations = _interpret(outcome, limits)
    return {"bytes": outcome.memory_peak_bytes, "meter": outcome.memory_meter,
            "ok": observations is not None,
            "message": verdict.error.message if observations is None and verdict.error else None,
            "observations": observations}




def _limit_self(exercise: Exercise) -> None:
    """The grading process under limits of its own, whatever the learner's frame makes it do: address
    space (the learner's child, forked later, lowers it further) and CPU time. Not on CUDA hosts, whose
    driver reserves address space far beyond any such limit."""
    import resource

    from grader.harness.emulation import cuda_available
    from grader.harness.isolation import _current_vm_bytes

    if not cuda_available():
        space = _current_vm_bytes() + (exercise.memory_mb + GRADER_MEMORY_MB) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (space, space))
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + 2 * exercise.time_limit_s + 60)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


def _interpret(outcome, limits) -> tuple[RawVerdict, dict[str, Any] | None]:  # noqa: ANN001 - isolation's Outcome, Limits
    """How the learner's process ended: (verdict so far, observations when the checks can run)."""
    import signal as signals

    import torch

    from grader.harness.emulation import amp_device, device_label
    from grader.harness.isolation import OUTPUT_CAP

    if outcome.setup_failed:
        return infra_error(f"the exercise's probe failed to load: {outcome.setup_failed}"), None
    if outcome.refused:
        return error_verdict(Status.INFRA_ERROR, "confinement", f"The local sandbox could not confine your "
                             f"code, so it did not run it: {outcome.refused}"), None
    if outcome.timed_out:
        return learner_timeout(limits.time_s), None
    message, dropped = None, []
    if outcome.payload is not None:
        try:
            message = torch.load(io.BytesIO(outcome.payload), weights_only=True)
        except Exception as exc:  # noqa: BLE001 - anything unreadable is the learner's doing
            return error_verdict(Status.ERROR, "protocol", f"The grader could not read what your code's "
                                 f"process sent back ({type(exc).__name__})."), None
        try:
            message, dropped = check_frame(message)
        except FrameError as exc:
            return error_verdict(Status.ERROR, "protocol", f"Your code's process sent back data the grader "
                                 f"does not accept: {exc}."), None
    if outcome.out_of_memory and (outcome.signal is not None or outcome.exit_code != 0):
        return error_verdict(Status.KILLED, "memory", f"Your code ran out of memory: its processes together "
                             f"used more than {limits.memory_mb} MB."), None
    if outcome.signal is not None:
        name = signals.Signals(outcome.signal).name if outcome.signal in signals.Signals._value2member_map_ \
            else str(outcome.signal)
        if outcome.signal == signals.SIGXCPU:
            text = f"CPU time limit exceeded ({limits.time_s:g} s): your code was stopped."
        elif outcome.signal == signals.SIGXFSZ:
            text = f"Your code wrote a file larger than {limits.max_file_mb} MB and was stopped."
        else:
            text = f"Your code's process was killed ({name})."
        return error_verdict(Status.KILLED, "killed", text), None
    if outcome.output_truncated:
        # Flooding the output is how a submission would hide a forged verdict or stall the grader.
        return error_verdict(Status.KILLED, "output", f"Your code printed more than {OUTPUT_CAP // 1024} KB "
                             f"of output; keep prints short."), None
    if outcome.exit_code == 71:
        message = f"Your code ran out of memory (limit {limits.memory_mb} MB)."
        return error_verdict(Status.ERROR, "memory", message), None
    if not isinstance(message, dict) or outcome.exit_code != 0:
        return error_verdict(Status.ERROR, "exit", f"Your code ended its process (exit code {outcome.exit_code}) "
                             f"before it could be graded."), None
    if not message.get("ok"):
        err = message.get("error") or {}
        verdict = error_verdict(Status.ERROR, str(err.get("kind", "exception")),
                                str(err.get("message", "Your code failed.")),
                                err.get("line") if isinstance(err.get("line"), int) else None)
        observations = None
    else:
        verdict, observations = RawVerdict(status=Status.FAILED), message.get("observations") or {}
    # The learner's code ran: what it ran on, and what the grader knows about that, stated from here.
    # Code that failed while it was being loaded never reached the device (one message, no device).
    verdict.device = None if message.get("stage") == "load" else device_label()
    if amp_device() != "cuda":
        verdict.notes.append(EMULATION_NOTE)
    verdict.problems.extend(dropped)
    return verdict, observations


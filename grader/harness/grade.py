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
from grader.harness.frame import load as load_frame
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
    from grader.harness.view import grader_view

    seed = random.randrange(1, 2**31) if seed is None else seed
    _limit_self(exercise)
    verdict = _syntax_error(code)
    if verdict is None:
        from grader.harness.emulation import amp_device

        device = amp_device()
        referee = load_referee(exercise.checks_dir, seed, device)
        view = grader_view([exercise.path.resolve().parent.parent, *(hide or [])]) \
            if confinement is Confinement.NAMESPACES else None
        run = _Runs(exercise, code, seed, confinement, view, referee)
        outcome, verdict, observations = run.learner(referee.main_run)
        verdict.output = outcome.output
        verdict.output_truncated = outcome.output_truncated
        verdict.notes.extend(n for n in outcome.isolation if n not in verdict.notes)
        if observations is not None:
            # The checks read the grading side's copy of the events, never the list the frame claims.
            observations["events"] = referee.events
            # The other learner runs' observations, under a key the grading side sets (whatever the frame held).
            observations["runs"] = {}
            for name, with_learner_code in referee.memory_runs:
                observed = run.measured(name, with_learner_code)
                if with_learner_code:
                    observations["runs"][name] = observed
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
        verdict.problems[:0] = referee.problems
    verdict.seed = seed
    return verdict.bounded()


class _Runs:
    """The processes of one grading: the main run, then each of the referee's memory runs, every one
    confined alike and connected to the referee (grader/harness/channel.py), each one's peak memory as
    the kernel counted it kept in `referee.memory`."""

    def __init__(self, exercise: Exercise, code: str, seed: int, confinement: Confinement, view,  # noqa: ANN001 - view.View | None
                 referee) -> None:  # noqa: ANN001 - channel.Referee
        from grader.harness.isolation import Limits

        self.exercise, self.code, self.seed, self.confinement, self.view = exercise, code, seed, confinement, view
        self.referee = referee
        self.limits = Limits(time_s=exercise.time_limit_s, memory_mb=exercise.memory_mb)

    def _run(self, name: str, with_learner_code: bool):  # noqa: ANN202 - (Outcome, RawVerdict, observations)
        from grader.harness.isolation import run_confined
        from grader.harness.learner import make_target

        exercise = self.exercise
        self.referee.begin(name)
        before_drop, target = make_target(exercise.checks_dir, self.code if with_learner_code else None,
                                          exercise.entry, list(exercise.params), self.seed, exercise.memory_mb,
                                          run=name)
        outcome = run_confined(target, self.limits, self.confinement, self.view, before_drop, self.referee)
        verdict, observations = _interpret(outcome, self.limits, self.referee.refused_in.get(name))
        self.referee.memory[name] = {"bytes": outcome.memory_peak_bytes, "meter": outcome.memory_meter,
                                     "ok": observations is not None,
                                     "message": verdict.error.message if observations is None and verdict.error
                                     else None}
        return outcome, verdict, observations

    def learner(self, name: str):  # noqa: ANN201 - (Outcome, RawVerdict, observations)
        """The main run: the learner's code under the probe's `probe(api)`."""
        return self._run(name, True)

    def measured(self, name: str, with_learner_code: bool) -> dict[str, Any] | None:
        """A memory run: with the learner's code, the probe's same `probe(api)` (api.run = name), whose
        observations are returned for the checks; without, the probe's `measure(api, name)`."""
        _, _, observations = self._run(name, with_learner_code)
        if observations is not None and with_learner_code:
            observations["events"] = self.referee.events_of[name]
        return observations


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
    return verdict.bounded()


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


def _limit_self(exercise: Exercise) -> None:
    """The grading process under limits of its own, whatever the learner's side sends it: address space
    and CPU time. Its own share of address space is GRADER_MEMORY_MB above what it holds now (the soft
    limit); the hard limit leaves the learner's share on top, for the learner's processes forked from it,
    which raise their soft limit to their own bound and no further. Not on CUDA hosts, whose driver
    reserves address space far beyond any such limit."""
    import resource

    from grader.harness.emulation import cuda_available
    from grader.harness.isolation import _current_vm_bytes

    if not cuda_available():
        own = _current_vm_bytes() + GRADER_MEMORY_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (own, own + exercise.memory_mb * 1024 * 1024))
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + 2 * exercise.time_limit_s + 60)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


def _interpret(outcome, limits, refused: str | None = None) -> tuple[RawVerdict, dict[str, Any] | None]:  # noqa: ANN001 - isolation's Outcome, Limits
    """How the learner's process ended: (verdict so far, observations when the checks can run).
    `refused`: what the learner's side sent on the live channel that the grading side refused."""
    import signal as signals

    from grader.harness.emulation import amp_device, device_label
    from grader.harness.isolation import OUTPUT_CAP

    if outcome.setup_failed:
        return infra_error(f"the exercise's probe failed to load: {outcome.setup_failed}"), None
    if outcome.refused:
        return error_verdict(Status.INFRA_ERROR, "confinement", f"The local sandbox could not confine your "
                             f"code, so it did not run it: {outcome.refused}"), None
    if refused is not None:
        # The run wrote something to the grader's channel that it refused (and was stopped for it).
        return error_verdict(Status.ERROR, "protocol", f"While your code ran, its process sent the grader "
                             f"something it refuses: {refused}."), None
    if outcome.timed_out:
        return learner_timeout(limits.time_s), None
    message, dropped = None, []
    if outcome.payload is not None:
        try:
            message, dropped = check_frame(load_frame(outcome.payload))
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
        err = message.get("error") if isinstance(message.get("error"), dict) else {}
        verdict = error_verdict(Status.ERROR, str(err.get("kind", "exception"))[:40],
                                str(err.get("message", "Your code failed.")),
                                err.get("line") if isinstance(err.get("line"), int) else None)
        observations = None
    else:
        observations = message.get("observations")
        if observations is None:
            observations = {}
        if not isinstance(observations, dict):
            return error_verdict(Status.ERROR, "protocol", f"Your code's process sent back observations the "
                                 f"grader cannot read (a {type(observations).__name__}, not a mapping)."), None
        verdict = RawVerdict(status=Status.FAILED)
    # The learner's code ran: what it ran on, and what the grader knows about that, stated from here.
    # Code that failed while it was being loaded never reached the device (one message, no device).
    verdict.device = None if message.get("stage") == "load" else device_label()
    if amp_device() != "cuda":
        verdict.notes.append(EMULATION_NOTE)
    verdict.problems.extend(dropped)
    return verdict, observations


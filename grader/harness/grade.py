"""Grade one submission inside a grading process and produce its raw verdict.

`warm_up()` imports what grading needs (so a warm process answers in a fraction of a second);
`verdict_for()` runs the learner's code confined (the jail, sandbox/jail/), every run the referee asks for,
then the exercise's pytest checks here, in the grading process. The entry that calls them is serve.py.

The jail is made (and forks its zygote) before the request is read (`learner_jail`, called by serve.py):
every learner process is forked from a copy of this process taken before any exercise, hint, code, seed,
reference or secret existed in it, and before any frame that holds one was on its stack, so none can
find one in its memory. The correct runs the checks compare with (each exercise's checks/reference.py,
grader.reference) are imported only after that, by the checks.
"""
from __future__ import annotations

import contextlib
import gc
import io
import os
import random
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from grader.core.course import Exercise
from grader.core.protocol import RawVerdict, Status, error_verdict, infra_error
from grader.core.settings import GRADER_MEMORY_MB
from grader.harness.interpret import CONFINEMENT_NOTES, interpret
from grader.harness.view import learner_view
from sandbox.jail import Confinement, Jail, LearnerHandle, Limits, Outcome

if TYPE_CHECKING:  # imported when grading needs them (warm_up): the checks' modules load after confinement
    import threading

    from grader.checks.referee.base import Referee
    from grader.harness.plugin import CheckRun


def warm_up() -> None:
    """Import what a grading run needs before forking: the child then starts ~2 s sooner.

    No tensor op may run here: a multi-threaded op before fork() can deadlock the child.
    """
    import torch

    torch.set_num_threads(1)
    import pytest  # noqa: F401
    import torch._dynamo  # noqa: F401 - optimizers import it lazily on first construction (~0.9 s)
    import torch.optim  # noqa: F401

    # record_function's first __enter__ imports this module (torch.autograd.profiler._maybe_cupti_monitor):
    # in a learner's `profile(with_stack=True)` its module and class bodies would run under the Python
    # tracer, which keeps bare pointers to each traced code object's name and file name, and are freed when
    # the import ends; key_averages(group_by_stack_n=...) then decoded freed memory (UnicodeDecodeError).
    with contextlib.suppress(ImportError):  # a torch without it imports nothing there
        import torch.profiler._cupti_monitor  # noqa: F401

    from grader.harness import plugin  # noqa: F401
    from grader.learner import amp, entry  # noqa: F401
    from sandbox.jail import seccomp

    seccomp.available()  # loads libseccomp now: the learner's view has no library search path
    # Everything imported so far lives as long as the process: keep it out of the collector's sweeps
    # (pytest calls gc.collect() several times per run; with torch loaded each costs ~0.1 s).
    gc.freeze()


# pytest plugins a grading run never uses. Each costs time in every run (registering, a gc.collect() at the
# end, a metadata scan for autoloaded ones: playwright's, in a venv that has it, took 0.3 s to import):
# without them a warm amp-step verdict took 0.22-0.24 s instead of 0.26-0.29 s (unconfined, measured).
UNUSED_PYTEST_PLUGINS = ("cacheprovider", "pastebin", "junitxml", "doctest", "setuponly", "setupplan", "stepwise",
                         "unraisableexception", "threadexception", "logging", "faulthandler", "subtests")


def pytest_args(folder: Path) -> list[str]:
    """The arguments every pytest session of the grading process starts with: the harness's own ini (never
    the repository's), `folder` as root, no autoloaded plugin and none of UNUSED_PYTEST_PLUGINS."""
    args = [str(folder), "-c", str(Path(__file__).with_name("pytest.ini")), "--rootdir", str(folder), "-q",
            "--import-mode=importlib", "--disable-plugin-autoload"]
    for name in UNUSED_PYTEST_PLUGINS:
        args += ["-p", f"no:{name}"]
    return args


# pytest reads these from the environment whatever its arguments say. A grading's sessions are the harness's
# alone: with the host's PYTEST_ADDOPTS="--junitxml=..." (a CI run's), every in-process grading exited 4, a
# usage error, since junitxml is one of UNUSED_PYTEST_PLUGINS.
PYTEST_ENVIRONMENT = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")


def harness_pytest(args: list[str]) -> int:
    """`pytest.main(args)` with none of PYTEST_ENVIRONMENT (restored after, for the rest of the process)."""
    import pytest

    kept = {name: os.environ.pop(name) for name in PYTEST_ENVIRONMENT if name in os.environ}
    try:
        return pytest.main(args)
    finally:
        os.environ.update(kept)


def run_pytest_once() -> None:
    """One pytest session on a trivial test: pytest's first session in a process imports and sets up
    much of itself lazily (~80 ms of a warm verdict's ~170 ms of checks, measured), so a process that
    waits for its request (a warm one) pays that before it arrives. No tensor op, no learner code."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="dla-warm-")
    try:
        Path(folder, "test_warm.py").write_text("def test_warm():\n    assert True\n")
        with contextlib.redirect_stdout(io.StringIO()):
            harness_pytest(pytest_args(Path(folder)))
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
                outside: dict[str, Any]) -> CheckRun:
    from grader.harness import plugin
    from grader.learner.entry import import_checks

    check_run = plugin.CheckRun(observed=observed, run=run_facts, outside=outside)
    plugin.activate(check_run)
    checks_dir = exercise_dir / "checks"
    import_checks(checks_dir)
    args = [*pytest_args(checks_dir), "-p", "grader.harness.plugin", "--no-header", "-W", "ignore::DeprecationWarning"]
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        code = harness_pytest(args)
    if code not in (0, 1):
        check_run.problems.append(f"pytest exited {code}: {captured.getvalue()[-2000:]}")
    return check_run


def _ran(verdict: RawVerdict, outcome: Outcome, confinement: Confinement) -> None:
    """What the run printed, and what the grading side says of how it was confined."""
    verdict.output, verdict.output_truncated = outcome.output, outcome.output_truncated
    if outcome.refused is None:
        verdict.notes.extend(n for n in CONFINEMENT_NOTES[confinement] if n not in verdict.notes)


def learner_jail(course_root: Path, confinement: Confinement, hide: list[Path] | None = None) -> Jail:
    """The jail every learner process of one grading or Run is forked from (with the learner's view of
    `course_root`, in NAMESPACES). Make it before the request exists in this process: its zygote is a copy
    of this process, call stack included (serve.py)."""
    view = learner_view(course_root, hide) if confinement is Confinement.NAMESPACES else None
    return Jail(confinement, view)


@contextlib.contextmanager
def _jail_for(exercise: Exercise, confinement: Confinement, hide: list[Path] | None,
              jail: Jail | None) -> Iterator[Jail]:
    """`jail` when the caller made one (serve.py, before the request); else one made now, for a caller in
    this process (a test, a benchmark), whose learner processes then hold a copy of this call's frames."""
    if jail is not None:
        yield jail
        return
    with learner_jail(exercise.course_root, confinement, hide) as made:
        yield made


def verdict_for(exercise: Exercise, code: str, confinement: Confinement, *, seed: int | None = None,
                hide: list[Path] | None = None, jail: Jail | None = None) -> RawVerdict:
    """Grade `code` against `exercise` (loaded from the harness's own copy of the checks).

    `hide`: host paths no part of the learner's view may contain (the web app's instance folder);
    the exercises folder is always one of them. `jail`: made by `learner_jail` before the request was
    read (serve.py); without it one is made here (see `_jail_for`)."""
    seed = random.randrange(1, 2**31) if seed is None else seed
    _limit_self(exercise)
    verdict = _syntax_error(code)
    if verdict is None:
        from grader.learner.emulation import amp_device

        device = amp_device()
        with _jail_for(exercise, confinement, hide, jail) as jail:
            referee = load_referee(exercise.checks_dir, seed, device)
            run = _Runs(exercise, code, seed, jail, referee)
            outcome, verdict, observations = run.learner(referee.main_run)
            _ran(verdict, outcome, confinement)
            if observations is not None:
                # The checks read the grading side's copy of the events, never the list the frame claims.
                observations["events"] = referee.events
                # The other learner runs' observations, under a key the grading side sets (whatever the frame held).
                observations["runs"] = {}
                for name, with_learner_code in referee.memory_runs:
                    observed = run.measured(name, with_learner_code)
                    if with_learner_code:
                        observations["runs"][name] = observed
        if observations is not None:
            run_facts = {"seed": seed, "device": device, "emulated": device != "cuda", "entry": exercise.entry}
            check_run = _run_checks(exercise.path, observations, run_facts, referee.outside())
            results = verdict.checks = check_run.results
            verdict.problems.extend(check_run.problems)
            # The timeline shows the call (or window) of the first event that a check the learner will see
            # failed names (checks reported skipped, one mistake one message, mark nothing).
            from grader.core.display import focus
            from grader.core.result import shown_checks

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
    confined alike by the same jail and connected to the referee (channel.py), each one's peak memory as
    the kernel counted it kept in `referee.memory`."""

    def __init__(self, exercise: Exercise, code: str, seed: int, jail: Jail, referee: Referee) -> None:
        self.exercise, self.code, self.seed, self.jail, self.referee = exercise, code, seed, jail, referee
        self.limits = Limits(time_s=exercise.time_limit_s, memory_mb=exercise.memory_mb)

    def _run(self, name: str, with_learner_code: bool) -> tuple[Outcome, RawVerdict, dict[str, Any] | None]:
        from grader.harness import channel
        from grader.learner.entry import ProbeJob

        exercise, referee = self.exercise, self.referee
        referee.begin(name)
        job = ProbeJob(exercise.checks_dir, self.code if with_learner_code else None, exercise.entry,
                       tuple(exercise.params), self.seed, exercise.memory_mb, name)
        grader_end, learner_end = socket.socketpair()
        sockets, ends = {"channel": learner_end}, [(grader_end, False)]
        if referee.helper_channel:  # a second channel, for a process the probe forks before learner code loads
            helper_grader_end, helper_end = socket.socketpair()
            sockets["helper"] = helper_end
            ends.append((helper_grader_end, True))
        serving: list[tuple[threading.Thread, socket.socket]] = []

        def serve(handle: LearnerHandle) -> None:
            serving.extend((channel.serve_in_background(referee, end, handle, helper=helper), end)
                           for end, helper in ends)

        outcome = self.jail.run(job, self.limits, sockets=sockets, on_start=serve,
                                stop_when=lambda: name in referee.refused_in, meter_memory=bool(referee.memory_runs))
        for thread, end in serving:
            thread.join(timeout=2)
            if thread.is_alive():  # a process the learner left behind still holds its end
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                thread.join(timeout=2)
        for end, _ in ends:
            end.close()
        verdict, observations = interpret(outcome, self.limits, referee.refused_in.get(name))
        referee.memory[name] = {"bytes": outcome.memory_peak_bytes, "meter": outcome.memory_meter,
                                "ok": observations is not None,
                                "message": verdict.error.message if observations is None and verdict.error else None}
        return outcome, verdict, observations

    def learner(self, name: str) -> tuple[Outcome, RawVerdict, dict[str, Any] | None]:
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
            hide: list[Path] | None = None, jail: Jail | None = None) -> RawVerdict:
    """A Run: call the learner's function once on the exercise's example (example.py), confined exactly as
    for grading (same limits, same view, same isolation), and report what it printed, what it returned or
    the error with its line. No checks run; the status is RAN when the function returned."""
    from grader.learner.entry import ExampleJob

    seed = random.randrange(1, 2**31) if seed is None else seed
    _limit_self(exercise)
    verdict = _syntax_error(code)
    if verdict is None and not exercise.example_path.is_file():
        verdict = infra_error(f"The exercise {exercise.id} has no example to run (example.py).")
    if verdict is None:
        limits = Limits(time_s=exercise.time_limit_s, memory_mb=exercise.memory_mb)
        job = ExampleJob(exercise.path, code, exercise.entry, tuple(exercise.params), seed, exercise.memory_mb)
        with _jail_for(exercise, confinement, hide, jail) as jail:
            outcome = jail.run(job, limits)
        verdict, observations = interpret(outcome, limits)
        _ran(verdict, outcome, confinement)
        if observations is not None:
            verdict.status = Status.RAN
            verdict.run = {"returned": str(observations.get("returned", ""))[:4000],
                           "returned_truncated": bool(observations.get("returned_truncated"))}
    verdict.seed = seed
    return verdict.bounded()


def load_referee(checks_dir: Path, seed: int, device: str) -> Referee:
    """The exercise's `checks/referee.py` Referee, or the plain one (it keeps the event stream)."""
    import importlib.util

    from grader.harness.channel import Referee
    from grader.learner.entry import import_checks

    path = checks_dir / "referee.py"
    if not path.exists():
        return Referee(seed, device)
    import_checks(checks_dir)
    spec = importlib.util.spec_from_file_location("exercise_referee", path)
    if spec is None or spec.loader is None:  # never for a .py file that exists
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    referee: Referee = module.Referee(seed, device)
    return referee


def _limit_self(exercise: Exercise) -> None:
    """The grading process under limits of its own, whatever the learner's side sends it: address space
    and CPU time. Its own share of address space is GRADER_MEMORY_MB above what it holds now (the soft
    limit); the hard limit leaves the learner's share on top, for learner processes whose zygote was forked
    after it (an in-process caller's jail, `_jail_for`), which raise their soft limit to their own bound and
    no further (serve.py's zygote is forked before it: its learner processes set their own bounds). Not on
    CUDA hosts, whose driver reserves address space far beyond any such limit."""
    import resource

    from grader.learner.emulation import cuda_available
    from sandbox.jail.rlimits import current_vm_bytes

    if not cuda_available():
        own = current_vm_bytes() + GRADER_MEMORY_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (own, own + exercise.memory_mb * 1024 * 1024))
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + 2 * exercise.time_limit_s + 60)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))

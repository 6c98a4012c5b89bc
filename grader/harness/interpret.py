"""How a learner run ended, as a verdict so far: the jail's Outcome and the frame the run sent back.

Everything here is stated by the grading side: the device, the notes, whether the code was confined. The
frame (what the learner's process sent) is data, checked before use (frame.py); whatever malformed thing
it holds is the learner's error, said plainly.
"""
from __future__ import annotations

import re
import signal as signals
from typing import Any

from grader.core.protocol import RawVerdict, Status, error_verdict, infra_error, learner_timeout, submission_line
from grader.harness.frame import FrameError, check_frame
from grader.harness.frame import load as load_frame
from grader.learner.recorder import SUBMISSION_FILENAME
from sandbox.jail import OUTPUT_CAP, Confinement, Limits, Outcome
from sandbox.jail.tree import EXIT_OUT_OF_MEMORY

EMULATION_NOTE = ("No GPU here: CUDA autocast ran as CPU float16 autocast and the CUDA GradScaler as the CPU "
                  "GradScaler; timings and memory are the CPU's.")
UNCONFINED_NOTE = ("graded UNCONFINED (--sandbox unconfined): your code ran as your own user, with your "
                   "files and network in reach; use this only for your own code")
CONTAINER_NOTE = "graded in a single-use container: no network, read-only file system, learner code under its own uid"
CONFINEMENT_NOTES = {Confinement.CONTAINER: (CONTAINER_NOTE,), Confinement.NONE: (UNCONFINED_NOTE,),
                     Confinement.NAMESPACES: ()}


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)', re.MULTILINE)


def stuck_line(stack: str | None) -> int | None:
    """The line of the learner's file the code was running when it was stopped: the innermost frame in
    submission.py of the first thread that has one, in the stack faulthandler wrote (most recent call first;
    the thread that took the signal, usually the main one, comes first). The confined process wrote it, so it
    only ever names a line to show, and a line that is no line of theirs names none."""
    blocks = re.split(r"\n(?=\S)", stack or "")
    for block in sorted(blocks, key=lambda block: not block.startswith("Current thread")):
        for frame in _FRAME.finditer(block):
            if frame["file"] == SUBMISSION_FILENAME:
                return submission_line(int(frame["line"]))
    return None


def _timeout(limits: Limits, line: int | None) -> RawVerdict:
    if line is None:
        return learner_timeout(limits.time_s)
    return error_verdict(Status.TIMEOUT, "timeout", f"Time limit of {limits.time_s:g} s exceeded: your code was "
                         f"stopped while it ran line {line}.", line)


def _flood() -> RawVerdict:
    # Flooding the output is how a submission would hide a forged verdict or stall the grader.
    return error_verdict(Status.KILLED, "output", f"Your code printed more than {OUTPUT_CAP // 1024} KB of output "
                         f"and was stopped; keep prints short.")


def interpret(outcome: Outcome, limits: Limits, refused: str | None = None) -> tuple[RawVerdict, dict[str, Any] | None]:
    """How the learner's process ended: (verdict so far, observations when the checks can run).
    `refused`: what the learner's side sent on the live channel that the grading side refused."""
    from grader.learner.emulation import amp_device, device_label

    if outcome.setup_failed:
        return infra_error(f"the exercise's probe failed to load: {outcome.setup_failed}"), None
    if outcome.refused:
        return error_verdict(Status.INFRA_ERROR, "confinement", f"The local sandbox could not confine your "
                             f"code, so it did not run it: {outcome.refused}"), None
    if refused is not None:
        # The run wrote something to the grader's channel that it refused (and was stopped for it).
        return error_verdict(Status.ERROR, "protocol", f"While your code ran, its process sent the grader "
                             f"something it refuses: {refused}."), None
    if outcome.output_truncated and (outcome.timed_out or outcome.output_flooded):
        # Stopped for the flood (or it ran out of time printing): the flood is what happened.
        return _flood(), None
    if outcome.timed_out and outcome.out_of_memory:
        # The kernel's OOM killer struck first; a cgroup at its memory limit can then reclaim past the deadline.
        return error_verdict(Status.TIMEOUT, "memory", f"Your code ran out of memory (its processes together reached "
                             f"{limits.memory_mb} MB, and the kernel stopped one of them), then ran past its time "
                             f"limit of {limits.time_s:g} s and was stopped."), None
    if outcome.timed_out and outcome.memory_limit_reached:
        # No kill yet: without swap, a cgroup at its limit can keep reclaiming its own file pages past the deadline.
        return error_verdict(Status.TIMEOUT, "memory", f"Your code reached its memory limit (its processes together, "
                             f"{limits.memory_mb} MB) and ran past its time limit of {limits.time_s:g} s while the "
                             "kernel reclaimed memory for it; it was stopped."), None
    if outcome.timed_out:
        return _timeout(limits, stuck_line(outcome.stack)), None
    message: dict[str, Any] | None = None
    dropped: list[str] = []
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
        return _flood(), None
    if outcome.exit_code == EXIT_OUT_OF_MEMORY:
        text = f"Your code ran out of memory (limit {limits.memory_mb} MB)."
        return error_verdict(Status.ERROR, "memory", text), None
    if not isinstance(message, dict) or outcome.exit_code != 0:
        return error_verdict(Status.ERROR, "exit", f"Your code ended its process (exit code {outcome.exit_code}) "
                             f"before it could be graded."), None
    if not message.get("ok"):
        said = message.get("error")
        err: dict[str, Any] = said if isinstance(said, dict) else {}
        verdict = error_verdict(Status.ERROR, str(err.get("kind", "exception"))[:40],
                                str(err.get("message", "Your code failed.")), submission_line(err.get("line")))
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
    # Code that failed while it was being loaded never reached the device (one message, no device); a frame that
    # says it ran (ok) is not believed when it also says "load" (it would leave a passed verdict without a device).
    # Whether the CUDA emulation was used is the learner's process's to say (only it sees the calls); it only
    # chooses between "cpu" and "cpu (cuda emulated)" on a host the grading side knows has no GPU.
    emulated = message.get("emulated") is True
    verdict.device = None if message.get("stage") == "load" and not message.get("ok") else device_label(emulated)
    if amp_device() != "cuda" and emulated:
        verdict.notes.append(EMULATION_NOTE)
    verdict.problems.extend(dropped)
    return verdict, observations


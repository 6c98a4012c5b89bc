"""What an exercise's `checks/probe.py` imports. It runs in the learner's (confined) process:

    def prepare() -> None                 # optional: install spies before the submission is loaded
    def probe(api: ProbeAPI) -> dict      # call the learner's function, return observations (plain data,
                                          # tensors allowed: grader/harness/frame.py bounds them)
    def measure(api, name) -> dict        # optional: one step alone in a dedicated process whose peak
                                          # memory the grading side reads (outside.Referee.memory_runs)

The probe returns observations, never a verdict: the checks judge them in the grading process. What the
spies record reaches the checks as `observed["events"]` (the kinds and fields: grader.checks.grading.events).

Calling the learner's function: `api.call(*args)` (an exception ends the run with one learner-facing
message) or `api.try_call(*args)` -> (value, None) or (None, {kind, message, line}), to go on and let a
check say which call failed. Another function of the submission: `sys.modules["submission"].NAME`,
wrapped so that its exceptions become `describe_exception(exc, api.memory_mb)` (a `LearnerError`).

A grading-side process beside the learner's (a referee with `helper_channel = True`): `start_helper(run)`
from `prepare()`, before the learner's code loads, forks one that runs `run(channel)` and reports on a
channel of its own (`channel.ask(...)`, answered by the referee's `answer_helper`); `wait_helper(pid, s)`.
"""
from __future__ import annotations

from grader.learner import accumulation, amp, memory, profiling
from grader.learner import channel as learner_channel
from grader.learner.accumulation import watch_step_gradients
from grader.learner.amp import watch_loss, watch_model, watch_optimizer
from grader.learner.channel import ask
from grader.learner.emulation import install_cuda_emulation
from grader.learner.entry import LearnerError, ProbeAPI, describe_exception
from grader.learner.helper import start as start_helper
from grader.learner.helper import wait as wait_helper
from grader.learner.memory import SavedTensorMeter, cuda_peak, measure_step, return_freed_memory
from grader.learner.profiling import slow_forward, swap_in, watch_calls
from grader.learner.recorder import RECORDER, SUBMISSION_FILENAME, submission_line

__all__ = [
    "ProbeAPI", "LearnerError", "describe_exception",
    "install_amp_spies", "install_accumulation_spies", "install_profiler_spies", "install_cuda_emulation",
    "RECORDER", "watch_model", "watch_optimizer", "watch_loss", "watch_step_gradients", "watch_calls",
    "swap_in", "slow_forward",
    "ask", "learner_channel", "start_helper", "wait_helper", "submission_line", "SUBMISSION_FILENAME",
    "SavedTensorMeter", "measure_step", "cuda_peak", "return_freed_memory", "memory_measure",
]


def install_amp_spies() -> type:
    """Record every backward, clipping and GradScaler call (kinds `backward`, `clip`, `scaler.*`), and map
    CUDA autocast and GradScaler onto the CPU's on a host without a GPU. Call it from `prepare()`.
    `RECORDER.mark("call")` before each call of the learner's function lets the checks split the log per
    call (`judging.calls`). Returns the recording GradScaler class (torch.amp.GradScaler is now it)."""
    return amp.install()


def install_accumulation_spies() -> type:
    """`install_amp_spies()`, and each backward event also gets `value`, `loss` and `scale`, from which
    `judging.backward_divisor` reads how the loss was divided (gradient accumulation)."""
    return accumulation.install()


def install_profiler_spies() -> None:
    """Record torch.profiler sessions and the learner's record_function regions (`profile.*`,
    `label.enter`) into the event stream; `RECORDER.profiled_run = i` tags them with the probe's profiled
    run, and `RECORDER.recording = False` stops recording (what follows is not the learner's)."""
    profiling.install()


def memory_measure(device: str) -> str:
    """What `measure_step` counts on `device`, in words for a learner-facing message."""
    return memory.describe(device)

"""The grading side of fit-the-budget: memory measured by the kernel, read here.

After the main run, the grading side starts one dedicated confined process per measurement, each
doing one thing on the measurement batch (probe.measure): nothing but building it ("baseline"), the
original step ("original"), the learner's step ("step"), the learner's evaluate ("evaluate") and a
forward under no_grad ("no-grad"). Only "step" and "evaluate" load the learner's code. Each process's
peak is read from outside it (isolation.Outcome.memory_peak_bytes: the submission cgroup's peak, or
the peak resident set from wait4), so no hook, allocator trick or patched counter in the learner's
process changes it: saved_tensors_hooks and save_on_cpu keep the activations in the same memory.
"""
from __future__ import annotations

from typing import Any

from grader.checks import outside


class Referee(outside.Referee):
    memory_runs = (("baseline", False), ("original", False), ("step", True), ("evaluate", True),
                   ("no-grad", False))

"""The grading side of fit-the-budget: the data, drawn here, and memory measured by the kernel, read here.

The data every learner process runs on is drawn here from the operating system's randomness, never from
the run's seed (which the learner's process can read), and told to each process when it asks, just
before the learner's function is called: nothing about it can be computed ahead, at load time or in
another process.

On a CPU, every process that loads the learner's code is a measured one, and every one is checked: the
main run ("step") calls train_step once, the "evaluate" run calls evaluate once, each on the same batch
as the checks' reference, and the kernel's count of that process's memory is its memory
(sandbox.jail.Outcome.memory_peak_bytes, sandbox/jail/meter.py: the submission cgroup's peak, in a container
the container's cgroup sampled while it ran). Beside them run the
grading side's own processes, which never load learner code (probe.measure): nothing but building the
model and batch ("baseline"), the original step ("original") and a forward under no_grad ("no-grad").
No hook, allocator trick or patched counter in the learner's process changes a kernel's peak:
saved_tensors_hooks and save_on_cpu keep the activations in the same memory, and a pool allocated at
load time is part of the same process's peak. On CUDA, which cgroups do not count, the main run measures
in-process (the documented in-process row of docs/threat-model.md), and there are no other runs.
"""
from __future__ import annotations

import secrets
from typing import Any

from grader.checks.referee import outside


class Referee(outside.Referee):
    main_run = "step"

    def __init__(self, seed: int, device: str) -> None:
        super().__init__(seed, device)
        self.data_seed = secrets.randbelow(2**31 - 2) + 1
        self.memory_runs = () if device == "cuda" else (
            ("evaluate", True), ("baseline", False), ("original", False), ("no-grad", False))

    def answer(self, request: dict[str, Any], learner: outside.Learner) -> dict[str, Any]:
        if request.get("op") == "data":
            return {"seed": self.data_seed}
        raise outside.ChannelError(f"fit-the-budget answers only 'data' (asked {str(request)[:80]})")

    def outside(self) -> dict[str, Any]:
        return {**super().outside(), "seed": self.data_seed}

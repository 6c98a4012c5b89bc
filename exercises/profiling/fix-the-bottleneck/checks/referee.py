"""The grading side of fix-the-bottleneck's timing: both steps timed on this process's clock.

Each round the learner's process asks to start; this side picks the round's data (a seed the learner
learns only then, so nothing can be computed ahead), times the original step itself with the learner's
processes paused (so they cannot slow it), and times the learner's step from its start answer to its
finish question. The finish question carries the losses of the timed steps, which the checks compare
with the original's on the same data: the timed work is the checked work.
"""
from __future__ import annotations

import math
import random
import time
from typing import Any

import torch

import scenario
from grader.checks import outside

ROUNDS = 11  # timed rounds per side; round 0 is a warm-up for both and is not counted


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class Referee(outside.Referee):
    def __init__(self, seed: int, device: str) -> None:
        super().__init__(seed, device)
        rng = random.Random(seed)
        self.seeds = [rng.randrange(1, 2**31) for _ in range(ROUNDS + 1)]
        self.original_s: dict[int, float] = {}
        self.learner_s: dict[int, float] = {}
        self.original_losses: dict[int, list[float]] = {}
        self.learner_losses: dict[int, list[float | None]] = {}
        self.clock = outside.Stopwatch()
        self.open: int | None = None

    def _time_original(self, index: int, learner: outside.Learner) -> None:
        learner.pause()
        try:
            synchronize(self.device)
            started = time.perf_counter()
            model, optimizer, loss_fn, batches = scenario.build(self.seeds[index], self.device)
            losses = [float(scenario.slow_train_step(model, optimizer, loss_fn, x, y)) for x, y in batches]
            synchronize(self.device)
            self.original_s[index] = time.perf_counter() - started
            self.original_losses[index] = losses
        finally:
            learner.resume()

    def answer(self, request: dict[str, Any], learner: outside.Learner) -> dict[str, Any]:
        op, index = request.get("op"), request.get("index")
        expected = len(self.learner_s) if self.open is None else self.open
        if not isinstance(index, int) or index != expected or index > ROUNDS:
            raise outside.ChannelError(f"timing round {index!r} asked out of turn (expected {expected})")
        if op == "start" and self.open is None:
            if index % 2 == 0:  # alternate which side goes first: a burst of load hits both alike
                self._time_original(index, learner)
            self.open = index
            self.clock.start()
            return {"seed": self.seeds[index]}
        if op == "finish" and self.open == index:
            self.learner_s[index] = self.clock.stop()
            losses = request.get("losses") if isinstance(request.get("losses"), list) else []
            self.learner_losses[index] = [x if isinstance(x, (int, float)) and math.isfinite(x) else None
                                          for x in losses[:scenario.BATCHES]]
            self.open = None
            if index % 2 == 1:
                self._time_original(index, learner)
            return {}
        raise outside.ChannelError(f"timing: {op!r} for round {index} out of turn")

    def outside(self) -> dict[str, Any]:
        rounds = [i for i in range(1, ROUNDS + 1) if i in self.learner_s and i in self.original_s]
        return {"rounds": [{"index": i, "original_s": self.original_s[i], "learner_s": self.learner_s[i],
                            "original_losses": self.original_losses[i],
                            "learner_losses": self.learner_losses.get(i, [])} for i in rounds],
                "rounds_wanted": ROUNDS}

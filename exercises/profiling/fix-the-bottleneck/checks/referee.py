"""The grading side of fix-the-bottleneck: what the learner's code runs on, decided here, and both steps
timed on this process's clock.

Every choice a check compares against is drawn here from the operating system's randomness (`secrets`),
never from the run's seed, which the learner's process can read, and is told to the learner's process
only when it needs it: the order of find_bottleneck's two profiled runs (which one slows preprocess and
which one the model's forward), the data of the replayed steps, and each timing round's data.

Each round the learner's process asks to start; this side picks the round's data (a seed the learner
learns only then, so nothing can be computed ahead), times the original step itself with the learner's
processes paused (so they cannot slow it), and times the learner's step from its start answer until its
finish question has been received whole (`arrived`, which the channel sets from the question's last
byte, once it is checked: a header or part of the question sent ahead stops nothing). The finish
question carries the losses of the timed steps and the weights after them, which the checks compare with
the original's on the same data: the timed work is the checked work, its last update included. Both
sides' times include reporting those weights.
"""
from __future__ import annotations

import io
import math
import secrets
import time
from typing import Any

import torch

import scenario
from grader.checks import outside

from scenario import MIN_SPEEDUP, ROUNDS, decided, report, synchronize


def secret_seed() -> int:
    return secrets.randbelow(2**31 - 2) + 1


class Referee(outside.Referee):
    def __init__(self, seed: int, device: str) -> None:
        super().__init__(seed, device)
        self.profiled_runs = list(scenario.SLOW_SPOTS)
        secrets.SystemRandom().shuffle(self.profiled_runs)
        self.profiled_told: list[str] = []
        self.replay_seed: int | None = None
        self.seeds = [secret_seed() for _ in range(ROUNDS + 1)]
        self.original_s: dict[int, float] = {}
        self.learner_s: dict[int, float] = {}
        self.original: dict[int, dict[str, Any]] = {}
        self.learner: dict[int, dict[str, Any]] = {}
        self.clock = outside.Stopwatch()
        self.open: int | None = None

    def _time_original(self, index: int, learner: outside.Learner) -> None:
        learner.pause()
        try:
            synchronize(self.device)
            started = time.perf_counter()
            model, optimizer, loss_fn, batches = scenario.build_timed(self.seeds[index], self.device)
            losses = [float(scenario.slow_train_step(model, optimizer, loss_fn, x, y)) for x, y in batches]
            synchronize(self.device)
            done = report(losses, model)
            torch.save(done, io.BytesIO())  # as the learner's finish question is framed: both sides pay for it
            self.original_s[index] = time.perf_counter() - started
            self.original[index] = done
        finally:
            learner.resume()

    def answer(self, request: dict[str, Any], learner: outside.Learner) -> dict[str, Any]:
        op, index = request.get("op"), request.get("index")
        if op == "profiled":
            if index != len(self.profiled_told) or index >= len(self.profiled_runs):
                raise outside.ChannelError(f"profiled run {index!r} asked out of turn")
            self.profiled_told.append(self.profiled_runs[index])
            return {"spot": self.profiled_runs[index]}
        if op == "replay":
            if self.replay_seed is not None:
                raise outside.ChannelError("the replay's data asked twice")
            self.replay_seed = secret_seed()
            return {"seed": self.replay_seed}
        expected = len(self.learner_s) if self.open is None else self.open
        if not isinstance(index, int) or index != expected or index > ROUNDS or (op == "start" and self.decided):
            raise outside.ChannelError(f"timing round {index!r} asked out of turn (expected {expected})")
        if op == "start" and self.open is None:
            if index % 2 == 0:  # alternate which side goes first: a burst of load hits both alike
                self._time_original(index, learner)
            self.open = index
            self.clock.start()
            return {"seed": self.seeds[index]}
        if op == "finish" and self.open == index:
            self.learner_s[index] = self.clock.stop(at=self.arrived)  # its last byte received, not its reading
            self.learner[index] = {"losses": _losses(request.get("losses")), "params": _params(request.get("params"))}
            self.open = None
            if index % 2 == 1:
                self._time_original(index, learner)
            return {"done": self.decided}
        raise outside.ChannelError(f"timing: {op!r} for round {index} out of turn")

    def _timed(self) -> list[int]:
        return [i for i in range(1, ROUNDS + 1) if i in self.learner_s and i in self.original_s]

    @property
    def decided(self) -> bool:
        """Whether enough rounds were timed for the verdict (scenario.decided); the learner's process is told
        so in the finish answer and stops asking."""
        ratios = [self.original_s[i] / self.learner_s[i] for i in self._timed()]
        return decided(ratios, MIN_SPEEDUP[self.device])

    def outside(self) -> dict[str, Any]:
        rounds = self._timed()
        return {"rounds": [{"index": i, "original_s": self.original_s[i], "learner_s": self.learner_s[i],
                            "original_losses": self.original[i]["losses"],
                            "learner_losses": self.learner[i]["losses"],
                            "original_params": self.original[i]["params"],
                            "learner_params": self.learner[i]["params"]} for i in rounds],
                "decided": self.decided, "rounds_most": ROUNDS, "profiled_runs": list(self.profiled_told),
                "replay_seed": self.replay_seed}


def _losses(value: Any) -> list[float | None]:
    """The timed steps' losses as sent: numbers kept, anything else None (the check says which)."""
    losses = value if isinstance(value, list) else []
    return [float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None
            for x in losses[:scenario.TIMED_BATCHES]]


def _params(value: Any) -> dict[str, torch.Tensor]:
    """The weights as sent: float32 tensors by parameter name, anything else left out (the check says so)."""
    if not isinstance(value, dict):
        return {}
    return {name: tensor.detach().float() for name, tensor in value.items()
            if isinstance(name, str) and isinstance(tensor, torch.Tensor)}

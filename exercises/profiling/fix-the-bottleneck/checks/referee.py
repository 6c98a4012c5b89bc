"""The grading side of fix-the-bottleneck: what the learner's code runs on, decided here, and both steps
timed on this process's clock.

Every choice a check compares against is drawn here from the operating system's randomness (`secrets`),
never from the run's seed, which the learner's process can read, and is told to the learner's process
only when it needs it: the order of find_bottleneck's two profiled runs (which one slows preprocess and
which one the model's forward), the data of the replayed steps, and each timing round's data.

The timing rounds are grader.checks.referee.timing's (`outside.TimedRounds`): each round's data is a seed drawn
here and told when the round starts; the original step is timed here with the learner's processes paused,
the learner's from its start answer until its finish question has been received whole. The finish
question carries the losses of the timed steps and the weights after them, which the checks compare with
the original's on the same data: the timed work is the checked work, its last update included. Both
sides' times include reporting those weights.
"""
from __future__ import annotations

import math
import secrets
from typing import Any

import scenario
from grader.checks.referee import outside

from scenario import MIN_SPEEDUP, ROUNDS, report


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
        self.timing = outside.TimedRounds(self.seeds, device, MIN_SPEEDUP[device], self._original, _received)

    def _original(self, seed: int) -> dict[str, Any]:
        """The original step on a timing round's data, as the learner's round runs it."""
        model, optimizer, loss_fn, batches = scenario.build_timed(seed, self.device)
        losses = [float(scenario.slow_train_step(model, optimizer, loss_fn, x, y)) for x, y in batches]
        scenario.synchronize(self.device)
        return report(losses, model)

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
        return self.timing.answer(request, learner, self.arrived)

    def outside(self) -> dict[str, Any]:
        return {**self.timing.outside(), "profiled_runs": list(self.profiled_told),
                "replay_seed": self.replay_seed}


def _received(request: dict[str, Any]) -> dict[str, Any]:
    """A timing round's finish question: the timed steps' losses and the weights after them."""
    return {"losses": _losses(request.get("losses")), "params": outside.tensors_by_name(request.get("params"))}


def _losses(value: Any) -> list[float | None]:
    """The timed steps' losses as sent: numbers kept, anything else None (the check says which)."""
    losses = value if isinstance(value, list) else []
    return [float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None
            for x in losses[:scenario.TIMED_BATCHES]]

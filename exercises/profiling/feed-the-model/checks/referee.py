"""The grading side of feed-the-model: every epoch's data drawn here, and both loops timed on this process's
clock.

The data of the replayed epoch and of each timing round (the records, the sampler's order and the model's
first weights) come from a seed drawn here from the operating system's randomness (`secrets`), never from
the run's seed, which the learner's process can read, and told only when that epoch starts: nothing can be
decoded ahead, and nothing kept from one epoch fits the next. The rounds are grader.checks.referee.timing's: the
original loop timed here with the learner's processes paused, the learner's from the round's start answer
until its finish question, carrying the weights after the epoch, has been received whole; the checks compare
those weights with the original's on the same data.
"""
from __future__ import annotations

import secrets
from typing import Any

import reference
import scenario
from grader.checks.referee import outside

ROUNDS = 11  # at most; they stop once 6 fall on one side of the bar (grader.checks.referee.timing.decided)


def secret_seed() -> int:
    return secrets.randbelow(2**31 - 2) + 1


class Referee(outside.Referee):
    def __init__(self, seed: int, device: str) -> None:
        super().__init__(seed, device)
        self.replay_seed: int | None = None
        self.seeds = [secret_seed() for _ in range(ROUNDS + 1)]
        self.timing = outside.TimedRounds(self.seeds, device, reference.MIN_SPEEDUP, self._original, _received)

    def _original(self, seed: int) -> dict[str, Any]:
        """The starter's epoch on a timing round's data, as the learner's round runs it."""
        model, optimizer, loss_fn, dataset, sampler, batch_size = scenario.build(seed, self.device)
        reference.original_train(model, optimizer, loss_fn, dataset, sampler, batch_size)
        scenario.synchronize(self.device)
        return {"params": scenario.params(model)}

    def answer(self, request: dict[str, Any], learner: outside.Learner) -> dict[str, Any]:
        if request.get("op") == "replay":
            if self.replay_seed is not None:
                raise outside.ChannelError("the replayed epoch's data asked twice")
            self.replay_seed = secret_seed()
            return {"seed": self.replay_seed}
        return self.timing.answer(request, learner, self.arrived)

    def outside(self) -> dict[str, Any]:
        return {**self.timing.outside(), "replay_seed": self.replay_seed}


def _received(request: dict[str, Any]) -> dict[str, Any]:
    """A timing round's finish question: the weights after the learner's epoch."""
    return {"params": outside.tensors_by_name(request.get("params"))}

"""The authoring API: what an exercise's `checks/` files import, instead of the harness's internals.

An exercise's checks folder holds code for three places (docs/authoring.md walks through one):

    checks/scenario.py   both sides: build the task's model and data from the run's seed
                         (`seeded(seed)` below); nothing that runs a correct solution
    checks/reference.py  the grading process only: the correct run(s) the checks compare with and the
                         values the verdict decides on (`from grader.reference... import ...` for the shared
                         ones); imported by checks/test_*.py and checks/referee.py, never by probe.py,
                         scenario.py, example.py or what they import (grader/reference/__init__.py)
    checks/probe.py      the learner's process: `from grader.checks.probing import ...`: spies,
                         calling the learner's function (`ProbeAPI`), memory meters, questions to the referee
    checks/test_*.py     the grading process: `from grader.checks.judging import ...`: `check`, `fail`,
                         `explained_by`, the recorded events (`EVENTS`) and shared verdicts
    checks/referee.py    optional, the grading process while the learner's code runs:
                         `from grader.checks.outside import Referee, ...`: evidence the learner cannot reach

These names are kept stable: what the harness reorganises behind them is its own business. Each is a
re-export or a thin wrapper of the harness code that does the work, documented where it is defined.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["seeded"]


def seeded(seed: int) -> torch.Generator:
    """Seed torch's global generator with the run's seed (model initialisation) and return a generator of
    its own for the data, seeded from it too, so the probe and the checks, each calling
    `scenario.build(seed, device)`, build the same model and data.

    The seed is the run's (`api.seed` in the probe, `run["seed"]` in the checks): random per run, printed
    in the result, and replayed with `grader check --seed N`."""
    import torch  # here, so that grader.checks.events stays importable without torch

    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed + 1)

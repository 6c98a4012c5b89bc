"""The authoring API: what an exercise's `checks/` files import, one package per process that runs them, and
never the harness (grader.harness imports this API, not the other way round).

    grader.checks.learner   the learner's (confined) process: checks/probe.py, checks/scenario.py and what
                            they import: spies, calling the learner's function, scenarios, the DDP ranks
    grader.checks.grading   the grading process after the run: checks/test_*.py (pytest): check, fail,
                            verdicts, suites, the recorded event kinds
    grader.checks.referee   the grading process while the learner's code runs: checks/referee.py: the
                            Referee base, secrets told once, timing rounds, the DDP referee
    grader.checks           both processes: `seeded(seed)` below, for checks/scenario.py

An exercise's checks folder (docs/authoring.md walks through one):

    checks/scenario.py   both sides: build the task's model and data from the run's seed; nothing that runs
                         a correct solution (grader.checks.learner.scenarios, `seeded`)
    checks/reference.py  the grading process only: the correct run(s) the checks compare with and the
                         values the verdict decides on (grader.reference for the shared ones); imported by
                         checks/test_*.py and checks/referee.py, never by probe.py, scenario.py, example.py
                         or what they import (grader/reference/__init__.py)
    checks/probe.py      the learner's process: grader.checks.learner
    checks/test_*.py     the grading process: grader.checks.grading (`from grader.checks.grading.judging
                         import check, fail`)
    checks/referee.py    optional, the grading process while the learner's code runs: grader.checks.referee
                         (`from grader.checks.referee.outside import Referee`)

Course code that several lessons' exercises share lives in the course, not here (exercises/_library/).
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
    import torch  # here, so that grader.checks.grading.events stays importable without torch

    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed + 1)

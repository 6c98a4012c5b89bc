"""The grading side's correct run (grading process only: never imported by probe.py or scenario.py, so no
learner process can import, read or reach it; grader/reference/__init__.py): the correct AMP step on the
scenario's task."""
from typing import Any

import scenario
from courselib.reference import amp_step_run


def run(seed: int, device: str) -> dict[str, list[Any]]:
    """A correct AMP step called on every call of the task: losses, weights, scale and step norms per call."""
    return amp_step_run(scenario.TASK, seed, device)

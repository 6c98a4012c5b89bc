"""The grading side's correct run (grading process only: never imported by probe.py or scenario.py, so no
learner process can import, read or reach it; grader/reference/__init__.py): the same training in float32."""
import scenario
from courselib.reference import fp32_run as task_fp32_run


def fp32_run(seed: int, device: str) -> tuple[list[float], float]:
    """The same training in float32: the loss of each step, and the final loss."""
    return task_fp32_run(scenario.TASK, seed, device)

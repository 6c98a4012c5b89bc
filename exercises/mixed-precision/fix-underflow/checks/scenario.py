"""The fix-underflow task: the shared regression task whose fp16 gradients underflow
(grader.checks.learner.scenarios.UnderflowTask), built identically in the learner's process (probe) and the
grader's (checks)."""
from grader.checks.learner.scenarios import UnderflowTask

TASK = UnderflowTask()
STEPS = TASK.steps

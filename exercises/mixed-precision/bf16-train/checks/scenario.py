"""bf16-train's task: fix-underflow's (grader.checks.learner.scenarios.UnderflowTask, the same numbers), whose fp16
gradients underflow and whose bf16 ones do not."""
from grader.checks.learner.scenarios import UnderflowTask

TASK = UnderflowTask()
STEPS = TASK.steps

"""The fix-underflow task: the shared regression task whose fp16 gradients underflow
(courselib.tasks.UnderflowTask, exercises/_library), built identically in the learner's process (probe) and the
grader's (checks)."""
from courselib.tasks import UnderflowTask

TASK = UnderflowTask()
STEPS = TASK.steps

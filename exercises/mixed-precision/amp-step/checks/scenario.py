"""The amp-step task, built identically in the learner's process (probe) and the grader's (checks): the
shared AMP-step task as it is (courselib.tasks.AmpStepTask, exercises/_library: three ordinary calls, one whose scaled
fp16 gradients overflow, then one whose float16 gradients underflow unless the loss is scaled)."""
from courselib.tasks import AmpStepTask

TASK = AmpStepTask()

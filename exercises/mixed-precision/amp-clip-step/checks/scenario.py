"""The amp-clip-step task: amp-step's (courselib.tasks.AmpStepTask, exercises/_library), with a clipping threshold
passed as train_step's last argument; built identically in the learner's process (probe) and the
grader's (checks)."""
from courselib.tasks import AmpStepTask

# The scenario's gradient norms are 0.29-0.45 (seeds 0-4, measured): a threshold of 0.1 clips every
# ordinary step, so a step that does not clip (or clips scaled gradients) moves the weights differently.
MAX_NORM = 0.1
TASK = AmpStepTask(max_norm=MAX_NORM)

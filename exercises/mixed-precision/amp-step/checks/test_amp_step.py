"""Checks for mixed-precision/amp-step. They run in the grading process, never beside learner code.

Every check of this exercise is the shared AMP step's (courselib.checks.AmpStepChecks), on the
scenario's task. A variant changes the task in scenario.py and adds its own checks as methods of the
class (amp-clip-step: a clipping threshold, and unscale-then-clip)."""
import reference
import scenario
from courselib.checks import AmpStepChecks


class TestAmpStep(AmpStepChecks):
    task = scenario.TASK
    correct_run = staticmethod(reference.run)

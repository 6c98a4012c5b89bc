"""The grading side of skipped-steps: where the two outlier batches lie, drawn here from `secrets` (never from the
run's seed, which the learner's process can read) and told once, to the probe: the same referee as fused-skip's
(grader.checks.referee.outside.drawn_once). The pairs it draws from, and why those: courselib.referee
(exercises/_library/referee.py)."""
import secrets

from courselib.referee import OUTLIER_PAIRS
from grader.checks.referee import outside

Referee = outside.drawn_once("outliers", OUTLIER_PAIRS, lambda: secrets)

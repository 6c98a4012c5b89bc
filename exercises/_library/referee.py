"""Where the two outlier batches of mixed-precision/skipped-steps and fused-skip may lie: the grading process, while
the learner's code runs (their checks/referee.py draws one pair from `secrets`:
grader.checks.referee.outside.drawn_once).

The positions come from the operating system's randomness (`secrets`), never from the run's seed, which the
learner's process can read: code that skips the scheduler and the EMA (skipped-steps) or the warm-up (fused-skip)
on fixed batches instead of reading the scaler fails. The probe asks once, after the learner's module loaded and
just before `train` is called, and builds the batches from the answer without keeping it; a second question (the
learner's code asking for itself) is refused, and the verdict says so. The checks' correct loop runs on the same
positions (`outside["outliers"]`).

Every allowed pair keeps the scenario's shape (measured on the CPU, 41 seeds): both outliers after the
calibration's skips (the first at batch 7-9, 0-based), at least one batch apart, the last at batch 14 at the latest
so that a real step follows it, and the scale still grows in every run (with the first at batch 11 it sometimes
never does), so each mistake in mistakes/ fails on every pair. An advance made one batch late, on a skipped batch
right after a real one, ends exactly where a correct loop ends (the weights did not move in between): so the pair
of the exercise's first version, (8, 12), and the pairs one batch after it are left out, and code written against
the old batches fails every grading. A loop hardcoded on one allowed pair still passes the few gradings that draw
it or a pair one batch after it."""

__all__ = ["OUTLIER_PAIRS"]

OLD_NEIGHBOURHOOD = {(8, 12), (8, 13), (9, 12), (9, 13)}  # the first version's pair, and one batch later
OUTLIER_PAIRS = tuple((first, second) for first in range(7, 10) for second in range(first + 2, 15)
                      if (first, second) not in OLD_NEIGHBOURHOOD)

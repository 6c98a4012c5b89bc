"""The authoring API for the learner's process: what an exercise's `checks/probe.py` and `checks/scenario.py`
(and the modules they import) import. It runs in the learner's confined process, beside the learner's code,
so nothing here decides a verdict or computes a right answer:

    probing     spies, calling the learner's function (`ProbeAPI`), memory meters, questions to the referee
    probes      probe skeletons several exercises share (a whole training loop, timed rounds, another
                function of the submission)
    scenarios   the same model and data from the same seed on both sides (`params`, `scaled_loss`, `plain_step`)
    ddp         the two ranks of a DDP exercise: the learner's, and the grader's, forked before the learner's
                code loads

The grading process imports these too (a scenario builds the same model for the checks); they import no
grading-only code (grader.checks.grading, grader.checks.referee, grader.reference, an exercise's reference).
"""

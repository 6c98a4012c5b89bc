"""The authoring API for the grading process, after the learner's code ran: what an exercise's
`checks/test_*.py` import. pytest runs them there, with the harness's plugin (grader/harness/plugin.py):

    judging     the one import of a test: `check`, `fail`, `explained_by`, `figure`, `show`, the recorded
                event kinds and the shared verdicts
    checking    check, fail, CheckFailed: what the harness's plugin reads (show() hands it pictures)
    verdicts    verdicts shared by exercises, on what the learner's process recorded
    suites      checks shared by exercises (a training loop's losses, its zero gradients)
    events      the recorded event kinds
    ddp         the words of a DDP exercise's failed run

Never imported by the learner's process (nothing on the learner's side imports this package).
"""

"""The grading side's correct runs, shared by exercises: what a check compares the learner's run with.

Grading process only. Nothing here may be importable, readable or reachable from a learner's process
(issue 48): in the local sandbox this folder is masked in the learner's view (grader/harness/view.py),
in the grader image it is root's alone (sandbox/Dockerfile) while learner code runs as another uid, and
no grading process imports it before its jail's zygote is forked (grader/harness/serve.py), so no learner
process holds it in `sys.modules` or finds it with `gc`. `grader.checks`, which the probes import, never
imports it. The correct runs on one lesson's shared tasks are the course's (exercises/_library/reference.py,
`courselib.reference`), under the same rule.

The same split holds in each exercise's `checks/` folder:

    checks/scenario.py    both sides: constants, `build(seed, device)` (inputs, the model), readers of
                          what a run ended with; nothing that runs a correct solution
    checks/reference.py   the grading side only: the correct run(s) and the values the verdict decides
                          on; imported by `checks/test_*.py` and `checks/referee.py` (`import reference`),
                          never by `probe.py`, `scenario.py`, `example.py` or what they import

tests/integrity/test_reference.py grades, per exercise, a submission that looks for the reference by
import, in `sys.modules`, by reading its file, through frames, closures and `__globals__`, and with `gc`.
"""

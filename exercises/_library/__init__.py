"""The course's shared code: what exercises of its lessons share, shipped with the course (beside its lessons,
never a lesson itself: course.yaml lists the lessons). Imported as the package `courselib`, by the same
mechanism that makes an exercise's checks folder importable (grader/learner/entry.py: import_checks), in the
learner's process and the grading process alike; the grader image holds it with the checks
(grader/host/image.py).

Each module says which process imports it, as the authoring API's packages do (grader/checks/__init__.py):

    courselib.tasks       both sides (checks/scenario.py): AmpStepTask (mixed-precision/amp-step,
                          amp-clip-step), UnderflowTask (mixed-precision/fix-underflow, bf16-train)
    courselib.probes      the learner's process (checks/probe.py): amp_step_probe
    courselib.checks      the grading process (checks/test_*.py): AmpStepChecks
    courselib.reference   the grading process only: the correct runs on those tasks (amp_step_run, fp32_run);
                          like an exercise's checks/reference.py, never imported by what a learner process
                          loads (tests/test_architecture.py)
    courselib.referee     the grading process while the learner's code runs (checks/referee.py): the outlier
                          pairs mixed-precision/skipped-steps and fused-skip draw from
"""

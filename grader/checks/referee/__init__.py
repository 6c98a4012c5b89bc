"""The authoring API for the referee: what an exercise's optional `checks/referee.py` imports. It runs in the
grading process while the learner's code runs, and answers the probe's questions with evidence the learner
cannot reach (secrets drawn from `secrets`, timings on the grading side's clock, another process's report):

    outside     the `Referee` base (grader.checks.referee.base), `drawn_once` (one secret told once),
                TimedRounds
    timing      timing rounds on the grading process's clock (a `faster` check)
    ddp         the referee of both DDP exercises (`grader_rank_referee`)
    base        what a referee is; the harness serves it on the channel (grader/harness/channel.py)

Never imported by the learner's process.
"""

"""What an exercise's optional `checks/referee.py` imports: evidence the learner's code cannot reach.

The referee runs in the grading process while the learner's code runs. Subclass `Referee` (the module
must define a class named `Referee`):

    class Referee(outside.Referee):
        def answer(self, request, learner):   # a probe's ask(request), answered here; the learner's
            ...                               # processes may be paused (learner.pause/resume)
        def outside(self):                    # what the checks get as their `outside` fixture
            ...
        memory_runs = (("step", True),)       # dedicated processes running probe.measure(api, "step"),
                                              # True: with the learner's code loaded; their peak memory,
                                              # read by the kernel, lands in outside()["memory"]["step"]

`Stopwatch` times on this process's clock; `ChannelError` refuses a question asked out of turn (the
channel closes and the run says so). The learner's side asks with `grader.checks.probing.ask`.
"""
from __future__ import annotations

from grader.harness.channel import ChannelError, Learner, Referee, Stopwatch

__all__ = ["Referee", "Learner", "ChannelError", "Stopwatch"]

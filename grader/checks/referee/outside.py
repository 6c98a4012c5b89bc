"""What an exercise's optional `checks/referee.py` imports: evidence the learner's code cannot reach.

The referee runs in the grading process while the learner's code runs. Subclass `Referee` (the module
must define a class named `Referee`):

    class Referee(outside.Referee):
        def answer(self, request, learner):   # a probe's ask(request), answered here; the learner's
            ...                               # processes may be paused (learner.pause/resume)
        def outside(self):                    # what the checks get as their `outside` fixture
            ...
        memory_runs = (("evaluate", True),    # more processes, confined like the main run: True, the
                       ("original", False))   # learner's code under the probe's same probe(api) (api.run
                                              # = the name; its observations reach the checks as
                                              # observed["runs"][name]); False, the probe's
                                              # measure(api, name), no learner code. Every run's peak
                                              # memory, read by the kernel, lands in
                                              # outside()["memory"][name] (the main run's: main_run)
        main_run = "main"                     # the main run's name (api.run there)
        helper_channel = False                # True: a channel for a process the probe forks before the
        def answer_helper(self, request):     # learner's code loads (probing.start_helper); what it
            ...                               # asks or reports is answered here

`TimedRounds` (grader.checks.referee.timing) answers a probe's timing rounds: the original and the learner's code
timed alternately on this process's clock, on data drawn per round (a `faster` check's evidence);
`tensors_by_name` reads the weights a finish question carries.
`Stopwatch` times on this process's clock (`stop(at=self.arrived)`: when the question being answered
arrived); `ChannelError` refuses a question asked out of turn or malformed (the channel closes and the
verdict is the learner's error, saying why; any other exception in `answer` is refused the same way, and
the author finds its traceback among the verdict's problems). The learner's side asks with
`grader.checks.learner.probing.ask`.

Secrets live here: draw anything a check compares against or an outcome depends on (data, orders,
choices) from `secrets`, never from `self.seed` (which the learner's process can read), and tell it to
the learner's process only when its code needs it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from grader.checks.referee.base import ChannelError, Learner, Referee, Stopwatch
from grader.checks.referee.timing import TimedRounds, tensors_by_name

__all__ = ["Referee", "Learner", "ChannelError", "Stopwatch", "TimedRounds", "tensors_by_name", "drawn_once"]


def drawn_once(op: str, choices: Sequence[Any], source: Callable[[], Any]) -> type:
    """A referee that draws one of `choices` from `source()` (the referee module's `secrets`, looked up when
    drawn: never the run's seed, which the learner's process can read) and tells it once, as `batches`, to
    the probe's `ask({"op": op})`; a second question (the learner's code asking for itself) is refused and
    the run's verdict says so. The checks get it as `outside[op]`; it is the referee's attribute `op` too.
    mixed-precision/skipped-steps and fused-skip: `Referee = drawn_once("outliers", OUTLIER_PAIRS, ...)`."""

    class DrawnOnce(Referee):
        def __init__(self, seed: int, device: str) -> None:
            super().__init__(seed, device)
            setattr(self, op, list(choices[source().randbelow(len(choices))]))
            self.told = False

        def answer(self, request: dict[str, Any], learner: Learner) -> dict[str, Any]:
            if request != {"op": op}:
                raise ChannelError(f"this exercise answers only '{op}' (asked {str(request)[:80]})")
            if self.told:
                raise ChannelError(f"the {op} were asked for twice: only the grader's probe asks")
            self.told = True
            return {"batches": getattr(self, op)}

        def outside(self) -> dict[str, Any]:
            return {**super().outside(), op: list(getattr(self, op))}

    DrawnOnce.__name__ = DrawnOnce.__qualname__ = "Referee"  # what tests/integrity/test_secrets.py looks for
    return DrawnOnce

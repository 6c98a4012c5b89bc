"""The grading process's work per submission is bounded by the task, not by what the learner's process sends
(issue 48, finding 5).

feed-the-model recorded every input the learner's model was given, and the checks looked up every row of
each among the dataset's records, one Python step per row: four float16 inputs of 240,000 rows each (the
frame's bounds allow 32 million elements) cost the grading process ~10 CPU-s more than a plain solution's
grading, outside the learner's cgroup and time limit, and the verdict still passed. The checks now examine
at most the epoch's batches and two more, of at most a batch's rows each (scenario.KEPT_BATCHES x BATCH).

The attack and a control (the plain solution) are graded in one fresh process, one after the other, and the
grading process's own CPU time is compared (its learner processes are its children, not counted): a
generous bound relative to the control, so that a loaded machine slows both alike."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.paths import REPO

# The reference solution, plus, in its first call only (the replayed epoch the checks examine; the timed
# rounds are untouched, so the verdict still passes), four inputs of 240,000 float16 rows given to the model:
# the forward hook records each before the model refuses its dtype.
ATTACK = """
_train, _calls = train, []


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    _train(model, optimizer, loss_fn, dataset, sampler, batch_size)
    _calls.append(1)
    for _ in range(4 if len(_calls) == 1 else 0):
        try:
            model(torch.rand(240_000, 32).half())
        except RuntimeError:
            pass
"""

MEASURE = """
    import json, resource
    from grader.core.course import load_course
    from grader.harness import grade
    from sandbox.jail import Confinement

    grade.warm_up()
    grade._limit_self = lambda exercise: None  # two gradings in one process (its limits: test_grading_process.py)
    exercise = load_course().exercises["profiling/feed-the-model"]
    solution = (exercise.path / "solution.py").read_text()

    def own_cpu():
        used = resource.getrusage(resource.RUSAGE_SELF)
        return used.ru_utime + used.ru_stime

    for name, code in (("control", solution), ("attack", solution + {attack!r})):
        started = own_cpu()
        verdict = grade.verdict_for(exercise, code, Confinement.NONE, seed=3)
        print(json.dumps({{"name": name, "cpu_s": own_cpu() - started, "status": verdict.status.value,
                          "failed": {{k: r["message"] for k, r in verdict.checks.items() if not r["passed"]}}}}))
"""


def test_a_submission_that_feeds_the_model_huge_inputs_costs_the_grading_process_no_more_than_a_plain_one():
    import json

    code = textwrap.dedent(MEASURE.format(attack=ATTACK))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = {run["name"]: run for run in map(json.loads, proc.stdout.splitlines())}
    control, attack = runs["control"], runs["attack"]
    assert control["status"] == "passed", control
    # Measured (2-core machine, December 2026): control 1.4 CPU-s, the attack 11.3 before the bound, 1.5 after.
    assert attack["cpu_s"] <= 2 * control["cpu_s"] + 0.5, (attack, control)

"""Secrets live on the grading side, and no learner process holds a copy (issue 26, found by its review).

A learner process is a fork, and a fork is a copy of its parent's memory: when it was forked from the
grading process after the referee had drawn its secrets (fix-the-bottleneck's round data, fit-the-budget's
data, ddp-accumulate's other rank's), `gc.get_objects()` found the referee with all of them, and a
submission that kept the slow loop looked every timed round up: 4/4. Every learner process now comes from
the jail's zygote, forked before the referee was loaded (sandbox/jail/zygote.py)."""
from __future__ import annotations

import pytest

from grader.host.grading import run_submission
from tests.support.grading import caught_by

# Loaded as the learner's module: it looks through its whole process for the referee, or any module of
# the exercise's grading side, and says what it found as the error it raises.
SCAN = '''
import gc, sys
found = [type(o).__name__ for o in gc.get_objects()
         if type(o).__name__ == "Referee" or getattr(type(o), "__module__", "") == "exercise_referee"]
found += [name for name in sys.modules if "referee" in name]
raise RuntimeError(f"SCAN found {len(found)}: {sorted(set(found))[:5]}")
'''

# The review's attack: the slow per-row preprocess kept; at load time every round's data is rebuilt from
# the referee's seeds found in memory and run through the slow step; the timed rounds only look it up.
LOOKED_UP = '''
import gc, torch
from torch.profiler import ProfilerActivity, profile, record_function
LABELS = ("preprocess", "forward", "backward", "optimizer")


def preprocess(x):
    rows = []
    for row in x:
        rows.append((row - row.mean()) / (row.std() + 1e-5))
    return torch.stack(rows)


def _slow(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    with record_function("preprocess"):
        x = preprocess(x)
    with record_function("forward"):
        loss = loss_fn(model(x), y)
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
    return loss.detach()


TABLE = {}
ref = next((o for o in gc.get_objects() if type(o).__name__ == "Referee"), None)
if ref is not None:
    import scenario
    for seed in ref.seeds:
        model, opt, lf, batches = scenario.build_timed(seed, "cpu")
        for x, y in batches:
            loss = _slow(model, opt, lf, x, y)
            TABLE[(x.sum().item(), x[0, 0].item())] = (loss, [p.detach().clone() for p in model.parameters()])


def train_step(model, optimizer, loss_fn, x, y):
    hit = TABLE.get((x.sum().item(), x[0, 0].item()))
    if hit is None:
        return _slow(model, optimizer, loss_fn, x, y)
    with torch.no_grad():
        for p, q in zip(model.parameters(), hit[1]):
            p.copy_(q)
    return hit[0]


def find_bottleneck(model, optimizer, loss_fn, batches):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
    totals = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in LABELS}
    return max(totals, key=totals.get)
'''


@pytest.mark.parametrize("exercise", ["profiling/fix-the-bottleneck", "gpu-memory/fit-the-budget",
                                      "gradient-accumulation/ddp-accumulate"])
def test_no_learner_process_finds_the_referee_in_its_memory(sandbox, exercise):
    result = run_submission(exercise, SCAN, sandbox=sandbox)
    assert result["status"] == "error", result
    assert "SCAN found 0: []" in result["error"]["message"], result["error"]


def test_timed_rounds_cannot_be_looked_up_from_a_copy_of_the_referee(sandbox):
    result = run_submission("profiling/fix-the-bottleneck", LOOKED_UP, sandbox=sandbox)
    assert result["status"] in ("passed", "failed"), result["error"]
    assert "faster" in caught_by(result), result["checks"]

"""Issue 48, item 1: data that decides an outcome is the grading side's secret. skipped-steps' two outlier
batches (inputs 1000 times larger, overflowing scaled gradients) used to lie at batches 8 and 12 (0-based)
whatever the seed, and the run's seed fixes the calibration's skips: a loop that skips the scheduler, the EMA
and the count on a hardcoded list of batches, reading no scale at all, passed every check for seed 0. The
positions are now drawn by the exercise's referee from `secrets` and told to the probe only as the batches;
the old pair is never drawn, so this loop fails every grading. One grading, in the local sandbox's warm pool:
what the attack exploits is the scenario, not the sandbox."""
from __future__ import annotations

import pytest

from grader.host.grading import run_submission
from tests.support.grading import caught_by


@pytest.fixture(scope="module")
def local(warm_sandbox):
    return warm_sandbox("local")


# Seed 0 with the outliers at 8 and 12: the calibration skips batches 0-3 and 6, the outliers 8 and 12.
SKIPS_HARDCODED_BATCHES = '''
import torch

SKIPPED = {0, 1, 2, 3, 6, 8, 12}  # never read from the scaler: the batches a correct loop skipped, seed 0


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    steps = 0
    for i, (x, y) in enumerate(batches):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if i in SKIPPED:
            continue
        scheduler.step()
        ema.update_parameters(model)
        steps += 1
    return steps
'''


def test_a_loop_that_skips_hardcoded_batches_fails(local):
    result = run_submission("mixed-precision/skipped-steps", SKIPS_HARDCODED_BATCHES, sandbox=local, seed=0)
    assert result["status"] == "failed", result
    assert caught_by(result) & {"scheduler-on-real-steps", "ema-on-real-steps", "matches-reference"}, result["checks"]

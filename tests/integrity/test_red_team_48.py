"""Issue 48's fixes attacked again, as a learner who reads the grader's source would (red team, after the
fixes). One grading per attack, in the local sandbox's warm pool: what each attack exploits is the check's
logic, not the sandbox.

ddp-clip, steps-through-the-scaler: the secret overflowing window cannot be known in advance, but it needs
not be: after the window's last backward the all-reduced gradient holds inf for any code to see. A loop that
unscales, clips, steps with optimizer.step() only when every gradient is finite and calls scaler.update()
leaves the weights and the scale a correct loop leaves, and passed every check (1 of 1, deterministic: the
skip does not depend on the seed). The check now also asks, window by window, that the step went through
scaler.step (the recorded calls).
"""
from __future__ import annotations

import pytest

from grader.host.grading import run_submission
from tests.helpers import caught_by


@pytest.fixture(scope="module")
def local(warm_sandbox):
    return warm_sandbox("local")


SKIPS_THE_OVERFLOW_BY_HAND = '''
import contextlib

import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        ends_window = i == window_start + window_size - 1
        with contextlib.nullcontext() if ends_window else model.no_sync():
            scaler.scale(loss_fn(model(x), y) / window_size).backward()
        if ends_window:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            if all(bool(torch.isfinite(p.grad).all()) for p in model.parameters()):
                optimizer.step()  # never scaler.step: the overflow is skipped by hand
            scaler.update()
            optimizer.zero_grad()
'''


def test_a_step_that_skips_the_overflow_by_hand_does_not_step_through_the_scaler(local):
    result = run_submission("gradient-accumulation/ddp-clip", SKIPS_THE_OVERFLOW_BY_HAND, sandbox=local)
    assert result["status"] == "failed", result
    assert caught_by(result) == {"steps-through-the-scaler"}, result["checks"]
    message = next(c["message"] for c in result["checks"] if c["id"] == "steps-through-the-scaler")
    assert "scaler.step(optimizer)" in message, message

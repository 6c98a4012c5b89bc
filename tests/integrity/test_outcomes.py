"""Wrong training that the spies' records alone let through is caught by an outcome the grading side
recomputes (docs/threat-model.md): the reported gradient-accumulation attack, a 10x learning rate plus
an extra class-level optimizer step per window, with and without removing the step hooks that see it.
Both sandboxes, through their warm pools."""
from __future__ import annotations

from grader.grading import run_submission
from tests.helpers import caught_by

EXERCISE = "gradient-accumulation/accumulate-amp"
LOOP = '''
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    {before}
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        size = min(accum_steps, n - (i - i % accum_steps))
        with torch.autocast(device_type='cuda'):
            loss = loss_fn(model(x), y) / size
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            scaler.step(optimizer)
            {extra}
            scaler.update()
            optimizer.zero_grad()
'''



def failed_checks(sandbox, before: str = "pass", extra: str = "pass") -> set[str]:
    result = run_submission(EXERCISE, LOOP.format(before=before, extra=extra), sandbox=sandbox)
    assert result["status"] in ("passed", "failed"), result["error"]
    return caught_by(result)


def test_control_the_correct_loop_passes(sandbox):
    assert failed_checks(sandbox) == set()


def test_a_larger_learning_rate_is_caught_by_the_outcome(sandbox):
    failed = failed_checks(sandbox, before='for group in optimizer.param_groups:\n        group["lr"] *= 10')
    assert failed == {"matches-reference-run"}


def test_an_extra_class_level_step_is_seen_and_caught_by_the_outcome(sandbox):
    failed = failed_checks(sandbox, before='for group in optimizer.param_groups:\n        group["lr"] *= 10',
                           extra="type(optimizer).step(optimizer)")
    assert {"step-at-boundaries", "matches-reference-run"} <= failed


def test_removing_the_step_hooks_hides_the_step_but_not_the_outcome(sandbox):
    failed = failed_checks(sandbox, before="optimizer._optimizer_step_pre_hooks.clear()",
                           extra="type(optimizer).step(optimizer)")
    assert "matches-reference-run" in failed

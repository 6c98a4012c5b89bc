"""Wrong training that the spies' records alone let through is caught by an outcome the grading side
recomputes (docs/threat-model.md): the reported gradient-accumulation attack, a 10x learning rate plus
an extra class-level optimizer step per window, with and without removing the step hooks that see it.
Both sandboxes, through their warm pools."""
from __future__ import annotations

from grader.host.grading import run_submission
from tests.support.grading import caught_by

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


# ddp-accumulate: a loop that all-reduces on every micro-batch, which then rewrites the all-reduce counts
# its own process holds (reachable through gc). The count that decides is taken where it cannot write.
SYNCS_EVERY_MICRO_BATCH_AND_REWRITES_THE_COUNTS = '''
import gc


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    ends = [(i + 1) % accum_steps == 0 or i + 1 == n for i in range(n)]
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window = min(accum_steps, n - (i - i % accum_steps))
        (loss_fn(model(x), y) / window).backward()  # under DDP every backward all-reduces
        if ends[i]:
            optimizer.step()
            optimizer.zero_grad()
    for counts in gc.get_objects():
        if isinstance(counts, list) and len(counts) == n and all(type(c) is int for c in counts) and any(counts):
            counts[:] = [1 if end else 0 for end in ends]  # as if only each window's last one had synced
'''


def test_all_reduce_counts_rewritten_in_the_learners_process_change_nothing(sandbox):
    result = run_submission("gradient-accumulation/ddp-accumulate", SYNCS_EVERY_MICRO_BATCH_AND_REWRITES_THE_COUNTS,
                            sandbox=sandbox)
    assert result["status"] in ("passed", "failed"), result["error"]
    assert "syncs-once-per-window" in caught_by(result)

"""The spies' events reach the grading side as they happen (grader/harness/channel.py), and the raw
backward that amp-step's reported attack used changes the weights the grading side compares (an
underflowing call, checks/scenario.py). The attack: raw loss.backward(), a hand-made skip of
non-finite steps with a direct optimizer.step(), and the spies' records rewritten afterwards through
sys.modules. Variants: the stream silenced, the classification forged before it is streamed."""
from __future__ import annotations

from grader.grading import run_submission
from tests.helpers import caught_by

EXERCISE = "mixed-precision/amp-step"
RAW_STEP = '''
import sys
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        loss = loss_fn(model(x), y)
    {before_backward}
    loss.backward()
    if all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None):
        optimizer.step()  # a hand-made skip of overflowing steps
    {after}
    return loss
'''
REWRITE_RECORDS = '''recorder = sys.modules["grader.harness.amp"].RECORDER
    for event in recorder.events:
        if event["event"] == "backward":
            event["on"] = "scaled"
        if event["event"] == "optimizer.step":
            event["via_scaler"] = True'''
SILENCE_STREAM = '''sys.modules["grader.harness.channel"]._learner = None'''
FORGE_BEFORE_STREAM = ('''sys.modules["grader.harness.amp"].Recorder.classify_backward_target = '''
                       '''lambda self, t: ("scaled", None)''')


def failed_checks(sandbox, before_backward: str = "pass", after: str = "pass") -> set[str]:
    code = RAW_STEP.format(before_backward=before_backward, after=after)
    result = run_submission(EXERCISE, code, sandbox=sandbox)
    assert result["status"] in ("passed", "failed"), result["error"]
    return caught_by(result)


def test_rewriting_the_records_afterwards_changes_nothing(sandbox):
    failed = failed_checks(sandbox, after=REWRITE_RECORDS)
    assert {"scaled-backward", "matches-reference"} <= failed


def test_silencing_the_stream_leaves_the_checks_nothing_to_pass_on(sandbox):
    failed = failed_checks(sandbox, before_backward=SILENCE_STREAM)
    assert {"scaled-backward", "matches-reference"} <= failed


def test_a_forged_classification_still_leaves_the_weights_wrong(sandbox):
    failed = failed_checks(sandbox, before_backward=FORGE_BEFORE_STREAM)
    assert "matches-reference" in failed

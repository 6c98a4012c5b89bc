"""The spies' events reach the grading side as they happen (grader/harness/channel.py), and the raw
backward that amp-step's reported attack used changes the weights the grading side compares (an
underflowing call, checks/scenario.py). The attack: raw loss.backward(), a hand-made skip of
non-finite steps with a direct optimizer.step(), and the spies' records rewritten afterwards through
sys.modules. Variants: the stream silenced, the classification forged before it is streamed."""
from __future__ import annotations

import pytest

from grader.grading import run_submission
from tests.helpers import EXERCISES, caught_by

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


# The past rewritten through the channel itself: amendments of fields the spies recorded earlier
# (issue: "the learner's process holds no pen"). Each base fails on its own; with the amendments it
# passed every check before the grading side restricted what an amendment may do.
REWRITE_THE_PAST = '''
import json as _json
import struct as _struct
import sys as _sys


def _rewrite_the_past(change):
    sock = _sys.modules["grader.harness.channel"]._learner._sock
    for event in _sys.modules["grader.harness.amp"].RECORDER.events:
        fields = change(event)
        if fields:
            payload = _json.dumps({"op": "amend", "index": event["index"], "fields": fields}).encode()
            sock.sendall(_struct.pack(">IB", len(payload), ord("J")) + payload)


def _backward_outside_autocast(event):
    if event["event"] == "backward" and event["autocast"]:
        return {"autocast": False, "autocast_dtype": None}


def _float16_amp(event):
    kind = event["event"]
    if kind in ("forward", "loss") and not event["autocast"]:
        return {"autocast": True, "autocast_dtype": "float16"}
    if kind == "backward" and event["on"] != "scaled":
        return {"on": "scaled"}
    if kind == "optimizer.step" and not event["via_scaler"]:
        return {"via_scaler": True}
    if kind == "optimizer.class_step":
        return {"event": "scaler.step", "scale": 65536.0}
    if kind == "optimizer.zero_grad":
        return {"event": "scaler.update", "scale_before": 65536.0, "scale_after": 65536.0}


def _bfloat16_autocast(event):
    if event["event"] in ("forward", "loss") and not event["autocast"]:
        return {"autocast": True, "autocast_dtype": "bfloat16"}


_learners_function = {entry}


def {entry}(*args):
    result = _learners_function(*args)
    _rewrite_the_past({change})
    return result
'''
FP32_WITH_AN_IDLE_SCALER = '''
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    scaler, losses = torch.amp.GradScaler("cuda"), []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        scaler.scale(loss)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
'''


def _backward_inside_autocast(exercise: str) -> str:
    solution = (EXERCISES / exercise / "solution.py").read_text()
    moved = solution
    for loss in ("        loss = loss_fn(out, y)\n", "            loss = loss_fn(model(x), y) / window_size\n"):
        indent = loss[:len(loss) - len(loss.lstrip())]
        moved = moved.replace(f"{loss}{indent[4:]}scaler.scale(loss).backward()",
                              f"{loss}{indent}scaler.scale(loss).backward()")
    assert moved != solution
    return moved


REWRITES = {
    "mixed-precision/amp-step": (lambda: _backward_inside_autocast("mixed-precision/amp-step"), "train_step",
                                 "_backward_outside_autocast", "autocast-scope"),
    "mixed-precision/amp-clip-step": (lambda: _backward_inside_autocast("mixed-precision/amp-clip-step"),
                                      "train_step", "_backward_outside_autocast", "autocast-scope"),
    "gradient-accumulation/accumulate-amp": (
        lambda: _backward_inside_autocast("gradient-accumulation/accumulate-amp"), "train",
        "_backward_outside_autocast", "autocast-scope"),
    "mixed-precision/fix-underflow": (lambda: FP32_WITH_AN_IDLE_SCALER, "train", "_float16_amp", "autocast-scope"),
    "mixed-precision/bf16-train": (
        lambda: (EXERCISES / "mixed-precision/bf16-train/mistakes/no-autocast.py").read_text(), "train",
        "_bfloat16_autocast", "bf16-autocast"),
}


@pytest.mark.parametrize("exercise", sorted(REWRITES))
def test_amending_what_a_spy_recorded_earlier_is_refused(sandbox, exercise):
    base, entry, change, caught = REWRITES[exercise]
    alone = run_submission(exercise, base(), sandbox=sandbox)
    assert caught in caught_by(alone)  # the base fails on its own
    result = run_submission(exercise, base() + REWRITE_THE_PAST.replace("{entry}", entry).replace("{change}", change),
                            sandbox=sandbox)
    assert not result["passed"], result["checks"]
    assert result["status"] == "error" and "amend" in result["error"]["message"], result["error"]

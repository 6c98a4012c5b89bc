"""The spies' events reach the grading side as they happen (grader/harness/channel.py), and the raw
backward that amp-step's reported attack used changes the weights the grading side compares (an
underflowing call, checks/scenario.py). The attack: raw loss.backward(), a hand-made skip of
non-finite steps with a direct optimizer.step(), and the spies' records rewritten afterwards through
sys.modules. Variants: the stream silenced, the classification forged before it is streamed."""
from __future__ import annotations

import pytest

from grader.host.grading import run_submission
from tests.support.grading import caught_by
from tests.support.paths import EXERCISES

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
REWRITE_RECORDS = '''recorder = sys.modules["grader.learner.amp"].RECORDER
    for event in recorder.events:
        if event["event"] == "backward":
            event["on"] = "scaled"
        if event["event"] == "optimizer.step":
            event["via_scaler"] = True'''
SILENCE_STREAM = '''sys.modules["grader.learner.channel"]._learner = None'''
FORGE_BEFORE_STREAM = ('''sys.modules["grader.learner.amp"].classify_backward_target = '''
                       '''lambda t: ("scaled", None)''')


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
# (issue 26: "the learner's process holds no pen"). With them, a backward inside autocast (amp-step,
# amp-clip-step, accumulate-amp) and plain float32 training (fix-underflow, bf16-train) passed every
# check; without them each fails. Each amends what was recorded since it last did, after every call
# (every step of a training loop): the grading side refuses the first such amendment and stops the run.
REWRITE_THE_PAST = '''
import json as _json
import struct as _struct
import sys as _sys

_amended = [0]


def _rewrite_the_past(change):
    sock = _sys.modules["grader.learner.channel"]._learner._sock
    events = _sys.modules["grader.learner.amp"].RECORDER.events
    for event in events[_amended[0]:]:
        fields = change(event)
        if fields:
            payload = _json.dumps({"op": "amend", "index": event["index"], "fields": fields}).encode()
            sock.sendall(_struct.pack(">IB", len(payload), ord("J")) + payload)
    _amended[0] = len(events)


def _backward_outside_autocast(event):
    if event["event"] == "backward" and event["autocast"]:
        return {"autocast": False, "autocast_dtype": None}


def _float16_amp(event):
    if event["event"] in ("forward", "loss") and not event["autocast"]:
        return {"autocast": True, "autocast_dtype": "float16"}
    if event["event"] == "backward" and event["on"] != "scaled":
        return {"on": "scaled"}


def _bfloat16_autocast(event):
    if event["event"] in ("forward", "loss") and not event["autocast"]:
        return {"autocast": True, "autocast_dtype": "bfloat16"}
'''
AFTER_EVERY_CALL = '''
_learners_step = train_step


def train_step(*args):
    result = _learners_step(*args)
    _rewrite_the_past({change})
    return result
'''
# float32 training (no autocast); for fix-underflow with a GradScaler of scale 1 that steps and updates
# (unscaling by 1) after a backward on the raw loss.
FP32_TRAINING = '''
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    scaler, losses = torch.amp.GradScaler("cuda", init_scale=1.0) if {scaler} else None, []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        if scaler:
            scaler.scale(loss)
        loss.backward()
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        losses.append(loss.item())
        _rewrite_the_past({change})
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


def _accumulation_inside_autocast() -> str:
    moved = _backward_inside_autocast("gradient-accumulation/accumulate-amp")
    backward = "        scaler.scale(loss).backward()\n"
    return moved.replace(backward, backward + "        _rewrite_the_past(_backward_outside_autocast)\n")


# Each base fails the check its amendments forge on its own (measured on the code before: the same files
# without the amendments fail autocast-scope, bf16-autocast for bf16-train).
REWRITES = {
    "mixed-precision/amp-step": lambda: _backward_inside_autocast("mixed-precision/amp-step")
    + AFTER_EVERY_CALL.format(change="_backward_outside_autocast"),
    "mixed-precision/amp-clip-step": lambda: _backward_inside_autocast("mixed-precision/amp-clip-step")
    + AFTER_EVERY_CALL.format(change="_backward_outside_autocast"),
    "gradient-accumulation/accumulate-amp": _accumulation_inside_autocast,
    "mixed-precision/fix-underflow": lambda: FP32_TRAINING.format(scaler=True, change="_float16_amp"),
    "mixed-precision/bf16-train": lambda: FP32_TRAINING.format(scaler=False, change="_bfloat16_autocast"),
}


@pytest.mark.parametrize("exercise", sorted(REWRITES))
def test_amending_what_a_spy_recorded_earlier_is_refused(sandbox, exercise):
    result = run_submission(exercise, REWRITE_THE_PAST + REWRITES[exercise](), sandbox=sandbox)
    assert not result["passed"], result["checks"]
    assert result["status"] == "error" and "amendment" in result["error"]["message"], result["error"]
    assert result["duration_s"] < 20  # stopped at the first refused amendment, not at the end of training

"""The DDP exercises (ddp-accumulate, ddp-clip) against a learner who reads the grader's code (issue 48,
findings 1 and 9), in both sandboxes.

Finding 1: the grader's rank is a fork of the learner's process, and its correct loop was a module of the
probe (checks/other_rank.py over grader.checks.learner.ddp.accumulate_windows): a submission could import the
grader's own no_sync loop, and ddp-clip's scenario held the one-process reference. Now the referee sends
the loop's source to the grader's rank alone (checks/grader_rank.py), and the references are in
checks/reference.py, which no learner process imports.

Finding 9: the learner's own collectives run on the default group, which the grader's rank answers as a
copy of the learner's rank; DDP's syncs run on a group of their own, where the grader's rank counts them.
An all-reduce of the learner's own therefore cannot stand in for a DDP sync: it brings nothing of the
other rank."""
from __future__ import annotations

import json
import os
import struct

import pytest

from grader.checks.learner.collectives import MAX_HEADER, MAX_VALUES, _Mirror
from grader.host.grading import run_submission
from tests.support.grading import caught_by

# The learner's function (either exercise's signature): it looks through its own process for the grader's
# loop and the references, by import, in sys.modules, by reading the files beside the scenario, in gc and
# through every thread's frames, prints what it found, then trains correctly.
REACHES_FOR_THE_LOOP = r'''
import contextlib
import gc
import os
import sys

NAMES = {"accumulate_windows", "reference", "reference_params", "_reference_params", "grader_rank", "other_rank"}
FILES = ("reference.py", "grader_rank.py", "other_rank.py", "referee.py")


def _grading(obj):
    try:
        code = getattr(obj, "__code__", None)
        path = getattr(code, "co_filename", None) or getattr(obj, "__file__", None) or ""
        return getattr(obj, "__name__", None) in NAMES or str(path).endswith(FILES)
    except Exception:  # objects whose attributes raise (torch's script classes) are none of the grader's
        return False


def _look():
    found = set()
    for name in ("reference", "grader_rank", "other_rank"):
        try:
            __import__(name)
            found.add("import " + name)
        except Exception:
            pass
    found |= {"module " + name for name, module in list(sys.modules.items()) if module and _grading(module)}
    found |= {"ddp." + name for name in NAMES if hasattr(sys.modules.get("grader.checks.learner.ddp"), name)}
    found |= {"scenario." + name for name in NAMES if hasattr(sys.modules.get("scenario"), name)}
    here = os.path.dirname(getattr(sys.modules.get("scenario"), "__file__", "") or "")
    for name in FILES:
        try:
            with open(os.path.join(here, name)) as file:
                file.read(1)
            found.add("read " + name)
        except Exception:
            pass
    for frame in sys._current_frames().values():
        while frame is not None:
            found |= {"frame " + key for key, value in {**frame.f_globals, **frame.f_locals}.items()
                      if callable(value) and _grading(value)}
            frame = frame.f_back
    found |= {"gc " + str(getattr(obj, "__name__", type(obj)))
              for obj in gc.get_objects() if callable(obj) and _grading(obj)}
    return sorted(found)


def train(model, optimizer, *args):
    print("DDP REACH", _look())
    scaler, loss_fn, micro_batches, accum_steps = (None, *args) if len(args) == 3 else args[:4]
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        size = min(accum_steps, n - (i - i % accum_steps))
        ends = (i + 1) % accum_steps == 0 or i + 1 == n
        with contextlib.nullcontext() if ends else model.no_sync():
            loss = loss_fn(model(x), y) / size
            (scaler.scale(loss) if scaler else loss).backward()
        if ends and scaler:
            scaler.step(optimizer)
            scaler.update()
        elif ends:
            optimizer.step()
        if ends:
            optimizer.zero_grad()
'''


@pytest.mark.parametrize("exercise", ["gradient-accumulation/ddp-accumulate", "gradient-accumulation/ddp-clip"])
def test_the_grader_ranks_loop_and_the_reference_are_not_in_the_learners_process(sandbox, exercise):
    result = run_submission(exercise, REACHES_FOR_THE_LOOP, sandbox=sandbox)
    assert result["status"] in ("passed", "failed"), result["error"]
    assert "DDP REACH []" in result["output"], result["output"]


# No no_sync and no DDP sync: every window's gradients averaged by hand with dist.all_reduce on the default
# group instead. There the grader's rank answers as a copy of the learner's (it contributes the learner's own
# gradients), so the average brings nothing of its data, and it counts no DDP sync.
AVERAGES_ON_THE_DEFAULT_GROUP = r'''
import torch.distributed as dist


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        size = min(accum_steps, n - (i - i % accum_steps))
        with model.no_sync():
            (loss_fn(model(x), y) / size).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= dist.get_world_size()
            optimizer.step()
            optimizer.zero_grad()
'''


def test_an_all_reduce_of_its_own_is_no_gradient_sync(sandbox):
    result = run_submission("gradient-accumulation/ddp-accumulate", AVERAGES_ON_THE_DEFAULT_GROUP, sandbox=sandbox)
    assert result["status"] == "failed", result["error"]
    checks = {c["id"]: c for c in result["checks"]}
    assert checks["runs"]["status"] == "passed", checks["runs"]["message"]
    assert "syncs-once-per-window" in caught_by(result)
    assert "0 times" in checks["syncs-once-per-window"]["message"], checks["syncs-once-per-window"]["message"]


# What the learner's rank writes on the pipe to the grader's rank is the learner's to forge. The grader's rank
# reads it with bounds, before it allocates or joins anything, and only ever joins the default group with it.
def _frames(*frames: bytes) -> dict:
    reader, writer = os.pipe()
    os.write(writer, b"".join(frames))
    os.close(writer)
    report = {"collectives": 0, "collective_error": None}
    _Mirror(reader, report).run()
    assert report["collectives"] == 0
    return report


def _frame(header: dict, payload: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return struct.pack(">I", len(text)) + text + payload


def test_what_the_learners_rank_describes_is_bounded_before_the_grader_rank_acts_on_it():
    assert "description of" in _frames(b"\xff\xff\xff\xff")["collective_error"]
    assert "description of" in _frames(_frame({"op": "barrier", "pad": "x" * MAX_HEADER}))["collective_error"]
    assert "unknown collective" in _frames(_frame({"op": "new_group", "tensors": []}))["collective_error"]
    too_big = {"op": "all_reduce", "tensors": [["torch.float32", [1 << 40]]]}  # 4 TB: refused, never allocated
    assert f"more than {MAX_VALUES} bytes" in _frames(_frame(too_big))["collective_error"]
    assert "described as" in _frames(_frame({"op": "all_reduce", "tensors": [["torch.complex64", [1]]]}))[
        "collective_error"]
    assert _frames(b"")["collective_error"] is None  # the learner's rank closed the pipe: nothing to follow

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

import json

import pytest

from grader.host.grading import run_submission
from tests.support.grading import caught_by


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


# graph-breaks: the probe's lists of graphs and breaks live in the learner's process until the probe returns.
# Code that runs in Python after a break (a function under torch.compiler.disable) found them with `gc` and
# emptied the breaks and merged the graphs into one: `mistakes/prints-the-tensor.py` plus this passed all 3
# checks (1 of 1, deterministic). Each graph and break is now streamed to the grading process as dynamo makes
# it, before any of the learner's code runs in Python.
SCRUBS_THE_RECORDS = '''
import gc

import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


@torch.compiler.disable
def _scrub():
    for found in gc.get_objects():
        if type(found) is list and found and all(type(e) is dict for e in found):
            if set(found[0]) == {"seq", "call", "kind", "reason", "line", "lines"}:
                found.clear()
            elif set(found[0]) == {"seq", "call", "ops", "op_count", "foreign"} and len(found) > 1:
                ops = [op for g in found for op in g["ops"]]
                found[:] = [dict(found[0], ops=ops, op_count=len(ops), foreign=[])]


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    print("cross-entropy", loss)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    out = loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
    _scrub()
    return out
'''


def test_records_emptied_after_a_break_do_not_hide_it(local):
    result = run_submission("profiling/graph-breaks", SCRUBS_THE_RECORDS, sandbox=local)
    assert result["status"] == "failed", result
    message = next(c["message"] for c in result["checks"] if c["id"] == "no-graph-breaks")
    assert "`print`" in message, message


# graph-breaks: torch._dynamo.comptime runs the learner's function while dynamo traces, before any break: it
# swapped dynamo's unspied log_graph_break in for the print's break and the spy back after it, and a print left
# in passed all 3 checks (1 of 1, deterministic). Each comptime call is now streamed before it runs, and fails.
SWAPS_THE_SPY_WHILE_TRACED = '''
import torch
import torch.nn.functional as F
from torch._dynamo import symbolic_convert
from torch._dynamo.comptime import comptime

Z_WEIGHT, Z_MAX = 0.01, 4.0
SAVED = {}


def mute(ctx):
    SAVED["spy"] = symbolic_convert.InstructionTranslatorBase.__dict__["log_graph_break"]
    symbolic_convert.InstructionTranslatorBase.log_graph_break = lambda self, code_options, reason, exc: None


def unmute(ctx):
    symbolic_convert.InstructionTranslatorBase.log_graph_break = SAVED["spy"]


def compute_loss(model, x, y):
    comptime(mute)
    print("step")
    comptime(unmute)
    logits = model(x)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return F.cross_entropy(logits, y) + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
'''


def test_code_run_while_dynamo_traces_does_not_pass(local):
    result = run_submission("profiling/graph-breaks", SWAPS_THE_SPY_WHILE_TRACED, sandbox=local)
    assert result["status"] == "failed", result
    message = next(c["message"] for c in result["checks"] if c["id"] == "no-graph-breaks")
    line = SWAPS_THE_SPY_WHILE_TRACED.splitlines().index("    comptime(mute)") + 1
    assert f"torch._dynamo.comptime on line {line}" in message, message


# Every exercise: the learner's module runs after the probe was loaded, and any of the probe's functions (a spy's
# __globals__, or the module found with gc) reaches the probe module. A module that replaced `probe.probe` there
# had its own function called in place of the probe's, and reported whatever it liked. The entry now takes the
# probe's function before the learner's module loads: the replacement is never called, and the mistake below
# is judged on what it really did.
REPLACES_THE_PROBE = '''
import gc
import types


def _forged(api):
    raise RuntimeError("the learner's own probe ran")


for _module in [o for o in gc.get_objects() if isinstance(o, types.ModuleType)]:
    if getattr(_module, "__name__", "") == "exercise_probe":
        _module.probe = _forged
'''


def test_a_probe_replaced_by_the_learners_module_is_never_called(local):
    from tests.support.paths import EXERCISES

    mistake = (EXERCISES / "mixed-precision" / "amp-step" / "mistakes" / "raw_backward.py").read_text()
    result = run_submission("mixed-precision/amp-step", mistake + REPLACES_THE_PROBE, sandbox=local)
    assert "the learner's own probe ran" not in json.dumps(result), result
    failed = {c["id"] for c in result["checks"] if c["status"] == "failed"}
    assert failed == {"scaled-backward"}, result["checks"]  # what the mistake did, as the real probe saw it

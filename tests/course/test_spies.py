"""The spy and measurement modules the lessons 2-4 probes use: grader/learner/{accumulation,profiling,memory}.py.

Spies that patch torch globally run in a child interpreter, so they cannot leak into other tests.
"""
import json
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from grader.checks.grading import verdicts
from grader.learner import memory


def run_python(source: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


# --- memory ---------------------------------------------------------------------------------------

def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(*(nn.Sequential(nn.Linear(32, 32), nn.GELU()) for _ in range(4)))


def test_saved_tensor_meter_counts_activations_not_weights():
    model = _mlp()
    x = torch.randn(64, 32)
    with memory.SavedTensorMeter(exclude=model.parameters()) as meter:
        model(x).sum().backward()
    # Each Linear saves its input and each GELU its input: 8 activations of 64x32 float32.
    assert meter.bytes == 8 * 64 * 32 * 4
    assert meter.count > 8  # the weights were saved too, but not counted in bytes


def test_saved_tensor_meter_sees_checkpointing_and_no_grad():
    model = _mlp()
    x = torch.randn(64, 32)
    with memory.SavedTensorMeter(exclude=model.parameters()) as meter:
        h = x
        for block in model:
            h = checkpoint(block, h, use_reentrant=False)
        h.sum().backward()
    assert meter.bytes == 4 * 64 * 32 * 4  # only the four block inputs
    with memory.SavedTensorMeter(exclude=model.parameters()) as meter, torch.no_grad():
        model(x)
    assert meter.count == 0 and meter.bytes == 0


def test_measure_step_on_cpu_reports_saved_bytes():
    model = _mlp()
    x = torch.randn(16, 32)
    result, measured, count = memory.measure_step(lambda: model(x).sum(), "cpu", model.parameters())
    assert measured == 8 * 16 * 32 * 4 and count > 0 and result.requires_grad
    assert "saved for backward" in memory.describe("cpu") and "peak" in memory.describe("cuda")


# --- profiling ------------------------------------------------------------------------------------

def test_speedup_is_the_median_of_paired_ratios():
    assert verdicts.speedup([10, 10, 10], [5, 2, 10]) == 2.0
    # A busy moment that slows both halves of a round leaves its ratio intact.
    assert verdicts.speedup([10, 100, 10], [5, 50, 5]) == 2.0


def test_profiler_spies_record_learner_labels_only():
    found = run_python('''
        import json, torch
        from grader.learner import profiling, recorder
        profiling.install()
        learner = compile(
            "from torch.profiler import profile, record_function, ProfilerActivity\\n"
            "def run(work, optimizer):\\n"
            "    with profile(activities=[ProfilerActivity.CPU]) as prof:\\n"
            "        with record_function('outer'):\\n"
            "            with record_function('inner'):\\n"
            "                work()\\n"
            "        optimizer.step()\\n"
            "    prof.key_averages()\\n"
            "    prof.events()\\n",
            "submission.py", "exec")
        scope = {}
        exec(learner, scope)
        model = torch.nn.Linear(2, 2)
        model(torch.ones(1, 2)).sum().backward()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        work = profiling.watch_calls(lambda: torch.ones(3).sum(), "work")
        scope["run"](work, optimizer)
        print(json.dumps(recorder.RECORDER.events))
    ''')
    kinds = [e["event"] for e in found]
    assert kinds == ["profile.enter", "label.enter", "label.enter", "call", "profile.exit", "profile.key_averages",
                     "profile.events"]
    labels = [e["label"] for e in found if e["event"] == "label.enter"]
    assert labels == ["outer", "inner"]  # not torch.optim's "Optimizer.step#SGD.step"
    call = found[3]
    assert call["labels"] == ["outer", "inner"] and call["profiling"] and call["line"] == 6
    assert found[0]["activities"] == ["CPU"] and found[0]["line"] == 3


@pytest.mark.parametrize("style, want", [
    ("decorator", ["step", "preprocess"]),   # @record_function("preprocess") on the function
    ("with-inside", ["step", "preprocess"]),  # with record_function("preprocess"): in its body
    ("unlabelled", ["step"]),                 # no label of its own: the original runs where it was called
])
def test_swap_in_runs_the_original_inside_the_learners_own_label(style, want):
    """Issue 19: a label on or inside the learner's preprocess must survive the grader's swap."""
    found = run_python(f'''
        import json, torch
        from grader.learner import profiling, recorder
        profiling.install()
        bodies = {{
            "decorator": "@record_function('preprocess')\\ndef preprocess(x):\\n    return x + 1\\n",
            "with-inside": "def preprocess(x):\\n    with record_function('preprocess'):\\n        return x + 1\\n",
            "unlabelled": "def preprocess(x):\\n    return x + 1\\n",
        }}
        learner = compile(
            "from torch.profiler import profile, record_function, ProfilerActivity\\n"
            + bodies["{style}"] +
            "def run():\\n"
            "    with profile(activities=[ProfilerActivity.CPU]) as prof:\\n"
            "        with record_function('step'):\\n"
            "            out = preprocess(torch.zeros(2))\\n"
            "    return out, {{e.key: e.cpu_time_total for e in prof.key_averages()}}\\n",
            "submission.py", "exec")
        scope = {{"torch": torch}}
        exec(learner, scope)
        def original(x):
            import time
            time.sleep(0.05)
            return x - 1
        scope["preprocess"] = profiling.swap_in(scope["preprocess"], original, "preprocess")
        out, totals = scope["run"]()
        calls = [e for e in recorder.RECORDER.events if e["event"] == "call"]
        print(json.dumps({{"out": out.tolist(), "calls": calls, "totals": totals}}))
    ''')
    assert found["out"] == [-1.0, -1.0]  # the original's result, not the learner's
    [call] = found["calls"]
    assert call["labels"] == want and call["seconds"] >= 0.05
    # The learner's own profile puts the original's time under the innermost label around it.
    assert found["totals"][want[-1]] >= 50_000  # microseconds


def test_slow_forward_is_logged_with_the_labels_around_the_model_call():
    found = run_python('''
        import json, torch
        from grader.learner import profiling, recorder
        profiling.install()
        learner = compile(
            "from torch.profiler import record_function\\n"
            "def step(model, x):\\n"
            "    with record_function('forward'):\\n"
            "        return model(x)\\n",
            "submission.py", "exec")
        scope = {}
        exec(learner, scope)
        model = torch.nn.Linear(2, 2)
        seen = []
        profiling.slow_forward(model, lambda x: seen.append(x.requires_grad), "forward")
        out = scope["step"](model, torch.ones(1, 2, requires_grad=True))
        calls = [e for e in recorder.RECORDER.events if e["event"] == "call"]
        print(json.dumps({"calls": calls, "seen": seen, "grad": out.requires_grad}))
    ''')
    [call] = found["calls"]
    assert call["name"] == "forward" and call["labels"] == ["forward"]
    assert found["seen"] == [False] and found["grad"]  # the slow work stays out of the graph


# --- accumulation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, loss, scale, want", [
    (65536 / 3, 1.0, 65536.0, ("scaled", 3)),
    (65536.0, 1.0, 65536.0, ("scaled", 1)),
    (0.5, 1.0, 65536.0, ("raw", 2)),
    (1.0, 1.0, None, ("raw", 1)),
    (0.3, 1.0, 65536.0, ("other", None)),
])
def test_divisor_reads_scale_and_window_from_the_backward_value(value, loss, scale, want):
    kind, k, _ = verdicts.divisor({"value": value, "loss": loss, "scale": scale})
    assert (kind, k) == want


def test_accumulation_spies_record_backward_values_and_step_gradients():
    found = run_python('''
        import json, torch
        from grader.checks.grading import verdicts
        from grader.learner import accumulation, amp
        accumulation.install()
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        amp.watch_model(model)
        amp.watch_optimizer(optimizer)
        accumulation.watch_step_gradients(optimizer, model)
        loss_fn = amp.watch_loss(torch.nn.functional.mse_loss)
        scaler = torch.amp.GradScaler("cuda")
        for _ in range(2):
            with torch.autocast(device_type="cuda"):
                loss = loss_fn(model(torch.randn(8, 4)), torch.zeros(8, 2)) / 2
            scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        events = amp.RECORDER.events
        backwards = [verdicts.divisor(e)[:2] for e in events if e["event"] == "backward"]
        grads = [e for e in events if e["event"] == "optimizer.grads"]
        print(json.dumps({"backwards": backwards, "steps": len(grads), "via_scaler": grads[0]["via_scaler"],
                          "grad_is_unscaled": float(grads[0]["grads"]["weight"].abs().max()) < 100}))
    ''')
    assert found == {"backwards": [["scaled", 2], ["scaled", 2]], "steps": 1, "via_scaler": True,
                     "grad_is_unscaled": True}

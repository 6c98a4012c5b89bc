"""Issue 52's changes attacked as a learner who reads the grader's source would (red team of 6d60935..): the
course's shared code (`courselib`, exercises/_library/) and the tasks it builds in the learner's process, and the
frame's new `emulated` field. One grading per attack in the local sandbox's warm pool (what each attack tries is
the same in both sandboxes: the docker sandbox runs the same jail and the same entry), the reach of courselib in
both. The warm verdict is attacked in test_red_team_52_verdict.py."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch

from grader.core.protocol import Status
from grader.harness.interpret import interpret
from grader.host.grading import run_example, run_submission
from grader.learner.emulation import CPU_DEVICE, EMULATED_DEVICE
from sandbox.jail import Limits, Outcome
from tests.support.grading import caught_by
from tests.support.paths import EXERCISES

AMP_STEP = "mixed-precision/amp-step"
SOLUTION = (EXERCISES / AMP_STEP / "solution.py").read_text()


@pytest.fixture(scope="module")
def local(warm_sandbox):
    return warm_sandbox("local")


# 1. courselib's grading-only modules (reference, checks, referee) from the learner's process: by import, through
# `courselib.__path__` (import machinery and the file system), through the loaded packages' files, and by planting
# a module of the grading side's names where the grading process (this one or the next learner's) would import it.
# The scan runs while the learner's module loads, inside a grading (the probe's process, where courselib.tasks
# and courselib.probes are loaded), and prints what it reached.
REACH_COURSELIB = r'''
import importlib, importlib.util, os, sys

found, wrote = [], []
for name in ("courselib.reference", "courselib.checks", "courselib.referee", "reference", "exercise_referee",
             "exercises._library.reference", "exercises._library.checks", "_library.reference"):
    try:
        module = importlib.import_module(name)
        if getattr(module, "__file__", None) or [k for k in vars(module) if not k.startswith("__")]:
            found.append("import " + name)
    except BaseException:
        pass
library = sys.modules.get("courselib")
folders = list(getattr(library, "__path__", []) or [])
for name in ("courselib.tasks", "courselib.probes", "scenario"):
    path = getattr(sys.modules.get(name), "__file__", None)
    if path:
        folders.append(os.path.dirname(path))
for folder in folders:
    for name in ("reference.py", "checks.py", "referee.py", "test_amp_step.py", "solution.py"):
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                f.read(1)
            found.append("read " + path)
        except OSError:
            pass
        try:
            spec = importlib.util.spec_from_file_location("stolen_" + name[:-3], path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            found.append("loaded " + path)
        except BaseException:
            pass
    try:
        found.extend("listed " + os.path.join(folder, n) for n in os.listdir(folder))
    except OSError:
        pass
# Plant modules named like the grading side's wherever the import system looks, and in the places a next process
# might look (the working directory, /tmp, /dev/shm, the home folder).
PLANT = "raise SystemExit('planted by a learner')\n"
places = set(folders) | {p or "." for p in sys.path} | {os.getcwd(), "/tmp", "/dev/shm", os.path.expanduser("~")}
for folder in sorted(places):
    for name in ("courselib.py", "scenario.py", "reference.py", "json.py", "red_team_52_marker.py"):
        path = os.path.join(folder, name)
        try:
            with open(path, "x") as f:
                f.write(PLANT)
            wrote.append(path)
        except OSError:
            pass
print("REACH " + repr(sorted(found)), flush=True)
print("WROTE " + repr(sorted(wrote)), flush=True)
'''


def reached(output: str, label: str) -> list[str]:
    line = next((ln for ln in output.splitlines() if ln.startswith(label + " ")), None)
    assert line is not None, output[-2000:]
    return eval(line[len(label) + 1:])  # noqa: S307 - a repr of a list of str the test's own code printed


@pytest.mark.parametrize("kind", ["local", "docker"])
def test_courselibs_grading_modules_are_out_of_the_learners_reach(warm_sandbox, kind):
    """Neither imported, nor read, nor listed, nor loaded from courselib.__path__, nor anything planted where an
    import would find it: the learner's view has no exercises folder (local) or it is root's alone (docker)."""
    result = run_submission(AMP_STEP, REACH_COURSELIB + SOLUTION, sandbox=warm_sandbox(kind))
    assert reached(result["output"], "REACH") == [], result["output"][-2000:]
    # The learner's own private /tmp (and nothing else) may take files; nothing on any import path but that.
    assert [p for p in reached(result["output"], "WROTE") if not p.startswith(("/tmp/", "/dev/shm/"))] == []
    assert result["status"] == "passed", result


def test_courselib_is_out_of_reach_of_a_run_too(local):
    """A Run loads the exercise's example (ExampleJob), not its probe: the same view, the same reach."""
    run = run_example(AMP_STEP, REACH_COURSELIB + SOLUTION, sandbox=local)
    assert run["status"] == "ran", run
    assert reached(run["output"], "REACH") == []
    assert [p for p in reached(run["output"], "WROTE") if not p.startswith(("/tmp/", "/dev/shm/"))] == []


def test_what_a_learner_planted_is_not_there_for_the_next_one(local):
    """The next learner's grading (same warm pool) passes as before and finds none of the planted files: each
    learner process has a /tmp of its own and an import path it cannot write."""
    first = run_submission(AMP_STEP, REACH_COURSELIB + SOLUTION, sandbox=local)
    assert first["status"] == "passed", first
    look = ("import os\nprint('SEEN ' + repr(sorted(os.path.join(d, n) for d in ('/tmp', '/dev/shm', os.getcwd())\n"
            "      if os.path.isdir(d) for n in os.listdir(d) if n.endswith('.py'))), flush=True)\n")
    second = run_submission(AMP_STEP, look + SOLUTION, sandbox=local)
    assert second["status"] == "passed", second
    assert reached(second["output"], "SEEN") == []
    for planted in reached(first["output"], "WROTE"):
        assert not Path(planted).exists() or planted.startswith(("/tmp/", "/dev/shm/")) and \
            "planted by a learner" not in Path(planted).read_text(errors="replace"), planted


# 2. The learner's process runs beside the probe, which now drives courselib.tasks.AmpStepTask: its underflowing
# call (call 5, a loss a millionth of the usual with the learning rate raised to match) is what makes a raw
# backward fail amp-step's outside check, matches-reference. The task is a frozen dataclass in the learner's
# process; object.__setattr__ changes it there, and the grading side's reference is computed on its own copy.
# With the underflow scaled away (underflow_loss_scale = 1: the same update in exact arithmetic), a raw backward
# whose gradients are multiplied by the scale by hand before scaler.step matches the reference at every call
# (the overflowing call's raw fp16 gradients hold inf, so scaler.step skips it and update backs off). The
# learner-evidence checks are forged as threat-model.md's rows say they can be (the backward's classification).
RAW_BACKWARD = '''
import sys
import torch

{tamper}


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        loss = loss_fn(model(x), y)
    scaler.scale(loss)  # a scaled loss made and never used
    loss.backward()  # the raw loss: float16 gradients underflow on call 5
    for p in model.parameters():
        if p.grad is not None:
            p.grad.mul_(scaler.get_scale())  # as if scaled: scaler.step divides it back
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
'''
FORGE_CLASSIFICATION = 'sys.modules["grader.learner.amp"].classify_backward_target = lambda t: ("scaled", None)'
SCALE_THE_UNDERFLOW_AWAY = 'object.__setattr__(sys.modules["scenario"].TASK, "underflow_loss_scale", 1.0)'


def test_a_raw_backward_fails_matches_reference_on_the_underflowing_call(local):
    """The control: the same raw backward, its classification forged, the task untouched."""
    result = run_submission(AMP_STEP, RAW_BACKWARD.format(tamper=FORGE_CLASSIFICATION), sandbox=local)
    assert "matches-reference" in caught_by(result), result["checks"]
    message = next(c["message"] for c in result["checks"] if c["id"] == "matches-reference")
    assert "millionth" in message, message


@pytest.mark.xfail(strict=True, reason="open (red team 52): the shared task (courselib.tasks.AmpStepTask) the probe "
                   "drives is the learner's process's object; scaling call 5's underflow away there lets a raw "
                   "backward pass matches-reference, the outside check that was to catch it. Closing it needs the "
                   "underflowing call's loss scale from the grading side (told by a referee) or checked in its "
                   "numbers, not a probe-side copy (docs/threat-model.md, amp-step's matches-reference row)")
def test_the_shared_task_changed_in_the_learners_process_does_not_pass_a_raw_backward(local):
    tamper = FORGE_CLASSIFICATION + "\n" + SCALE_THE_UNDERFLOW_AWAY
    result = run_submission(AMP_STEP, RAW_BACKWARD.format(tamper=tamper), sandbox=local)
    assert "matches-reference" in caught_by(result), result["checks"]


# 3. The frame's `emulated`: the learner's process says whether the run used the CUDA emulation. Whatever it
# sends, the device is one of the two CPU wordings on this host (no GPU here), never a GPU's name or free text,
# and no note but the emulation's; a frame that says its load failed while it says it ran is not believed
# (the device was left out: a passed verdict with no device).
def ended(frame: dict) -> Outcome:
    payload = io.BytesIO()
    torch.save(frame, payload)
    return Outcome(payload=payload.getvalue(), exit_code=0, signal=None, timed_out=False, output="",
                   output_truncated=False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU wordings: a CUDA host states its GPU's name")
@pytest.mark.parametrize("emulated", [True, False, 1, "yes", "cuda (NVIDIA H100)", {"x": 1}, [True], None])
@pytest.mark.parametrize("stage", ["run", "load", "nonsense", None])
def test_the_emulated_field_only_chooses_between_two_cpu_wordings(emulated, stage):
    frame = {"ok": True, "observations": {}, "emulated": emulated, "device": "cuda (NVIDIA H100)",
             "notes": ["forged"]}
    if stage is not None:
        frame["stage"] = stage
    verdict, observations = interpret(ended(frame), Limits(time_s=20))
    assert observations == {}
    assert verdict.device == (EMULATED_DEVICE if emulated is True else CPU_DEVICE)
    assert all("forged" not in note for note in verdict.notes)
    assert len(verdict.notes) == (1 if emulated is True else 0), verdict.notes
    assert json.loads(verdict.encode())["verdict"]["device"] in (CPU_DEVICE, EMULATED_DEVICE)


def test_a_load_failure_states_no_device():
    """The honest case the `stage` field is for: code that failed while it loaded never reached a device."""
    frame = {"ok": False, "stage": "load", "emulated": True,
             "error": {"kind": "exception", "message": "boom", "line": None}}
    verdict, _ = interpret(ended(frame), Limits(time_s=20))
    assert verdict.status is Status.ERROR and verdict.device is None



# 4. fix-underflow's task (courselib.tasks.UnderflowTask) is built in the learner's process too. Its targets made
# 2000 times larger there (target_scale 1.0) keep fp16 gradients from underflowing without any scaling; a raw
# backward (its classification forged, its gradients passed through the scaler by hand so the step checks see
# scaler.step and update) then trains, but on targets that are not the task's: underflow-fixed judges the final
# weights on the grading side's own data and model (final_loss_of), so the changed task fails it.
UNSCALED_TRAINING = '''
import sys
import torch

sys.modules["grader.learner.amp"].classify_backward_target = lambda t: ("scaled", None)
object.__setattr__(sys.modules["scenario"].TASK, "target_scale", 1.0)


def train(model, optimizer, loss_fn, x, y, steps):
    scaler = torch.amp.GradScaler("cuda")
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss)
        loss.backward()
        for p in model.parameters():
            if p.grad is not None:
                p.grad.mul_(scaler.get_scale())
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses
'''


def test_fix_underflows_task_changed_in_the_learners_process_fails_the_outcome(local):
    result = run_submission("mixed-precision/fix-underflow", UNSCALED_TRAINING, sandbox=local)
    statuses = {c["id"]: c["status"] for c in result["checks"]}
    assert statuses.get("underflow-fixed") == "failed", result["checks"]

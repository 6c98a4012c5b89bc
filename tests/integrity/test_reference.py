"""Nothing of the answer in the learner's process (issue 48, findings 1 and 6), in both sandboxes.

Finding 1: skipped-steps' checks/scenario.py held the grading side's correct loop, `reference(seed, device)`,
and the probe imports scenario: a submission ran the starter's loop, then called
`sys.modules["scenario"].reference(...)` with the recorder switched off and copied the outcome into the
weights, the EMA, the learning rate and the scheduler, and passed all 6 checks; the shared AMP step's
reference (`grader.checks.scenarios.AmpStepTask.reference`, `amp_step`) was reachable the same way.
The correct runs now live where no learner process can import, read or reach them: each exercise's
checks/reference.py and grader/reference/ (grader/reference/__init__.py says how).

Finding 6: a Run printed every check's hint: the zygote was forked inside `run_for`/`verdict_for`, so their
frame (`exercise`, `code`, `seed`) was on every learner process's stack. The zygote is now forked before
the request is read (grader/harness/serve.py).

To add an exercise: one entry in REFERENCES, the names of its grading-only callables (each exercise's entry
function and hints are read from its exercise.yaml).
"""
from __future__ import annotations

import pytest
import yaml

from grader.host.grading import run_example, run_submission
from tests.support.paths import EXERCISES

# exercise -> names of the grading side's callables that computed its right answer where a learner's
# process could reach them (on the code before issue 48); the scan also looks for anything defined in a
# grading-only file (a checks/reference.py, checks/test_*.py, checks/referee.py, grader/reference/).
SHARED = ["amp_step", "amp_step_run", "fp32_run"]
REFERENCES = {
    "mixed-precision/amp-step": ["reference", *SHARED],
    "mixed-precision/amp-clip-step": ["reference", *SHARED],
    "mixed-precision/fix-underflow": ["correct_scaled_zero_fractions", *SHARED],
    "mixed-precision/bf16-train": SHARED,
    "mixed-precision/skipped-steps": ["reference", *SHARED],
    "gradient-accumulation/accumulate-amp": ["reference_run", "_correct_run", *SHARED],
    "gradient-accumulation/token-weighted": ["reference_run", "summed_loss", "micro_batch_gradients", *SHARED],
    "gpu-memory/fit-the-budget": ["reference", *SHARED],
    "mixed-precision/fused-skip": ["reference", *SHARED],
    "profiling/feed-the-model": ["original_train", "batches_of", "decoded", "RecordFinder", *SHARED],
    "profiling/graph-breaks": ["reference", "original_compute_loss", "z_losses"],
    "gradient-accumulation/ddp-accumulate": ["accumulate_windows", "reference_params", "_reference_params"],
    "gradient-accumulation/ddp-clip": ["accumulate_windows", "reference"],
    "gradient-accumulation/fsdp2-accumulate": ["reference", "_norm"],
    "profiling/stop-recompiling": ["reference", "original_compute_loss"],
}

# The learner's function (any signature): once, it looks through its whole process for the grading side's
# code and the exercise's hints, by every way a submission has, and prints what it found; then it ends the
# process. {names} and {entry} are filled in per exercise.
SCAN = r'''
import gc, os, sys

NAMES = set({names})
FILES = {files}  # every exercise's grading-only files, from the course's folder
GRADING_FILES = ("/reference.py", "/grader/reference/", "/referee.py", "/grader_rank.py")


def _grading_file(path):
    path = str(path or "")
    if "-packages/" in path:  # torch's own torch/utils/_sympy/reference.py, which dynamo imports
        return False
    return path.endswith((GRADING_FILES[0], GRADING_FILES[2], GRADING_FILES[3])) or GRADING_FILES[1] in path \
        or ("/checks/" in path and os.path.basename(path).startswith("test_"))


def _ours(path):
    path = str(path or "")
    return ("/grader/" in path or "/exercises/" in path or "/checks/" in path) and "site-packages" not in path


def _has_content(module):
    """Whether a module holds anything: the view shows grader/reference/ as an empty folder, which Python
    imports as an empty namespace package (no file, no name of its own)."""
    return bool(getattr(module, "__file__", None)) or any(not k.startswith("__") for k in vars(module))


def _what(o, found):
    try:
        kind = type(o)
        if kind.__name__ == "function":
            code = o.__code__
            if _grading_file(code.co_filename) or (o.__name__ in NAMES and _ours(code.co_filename)):
                found.add(f"function {{o.__qualname__}} ({{code.co_filename}})")
        elif kind.__name__ == "module":
            name = getattr(o, "__name__", "")
            if (name in ("reference", "exercise_referee") or name.startswith("grader.reference")
                    or _grading_file(getattr(o, "__file__", ""))) and _has_content(o):
                found.add(f"module {{name}}")
        elif isinstance(o, type) and _grading_file(getattr(sys.modules.get(o.__module__), "__file__", "")):
            found.add(f"class {{o.__qualname__}}")
        # The course's objects (an exercise, its checks) and a check as the course file reads (a dict).
        if not isinstance(o, type) and kind.__module__.startswith("grader."):
            for check in [o, *(getattr(o, "checks", None) or ())]:
                if isinstance(getattr(check, "hint", None), str):
                    found.add(f"hint {{check.hint}}")
        if isinstance(o, dict) and isinstance(o.get("hint"), str) and "id" in o:
            found.add(f"hint {{o['hint']}}")
    except Exception:
        pass


def _scan():
    import warnings
    warnings.simplefilter("ignore")
    found, frames, probe_seen = set(), 0, False
    for name in ("reference", "grader.reference", "grader.reference.amp", "courselib.reference", "courselib.checks"):
        try:
            __import__(name)
            if _has_content(sys.modules[name]):
                found.add(f"import {{name}}")
        except BaseException:
            pass
    for name, module in list(sys.modules.items()):
        _what(module, found)
    folders, course = set(), None
    for name, up in (("scenario", 3), ("exercise_probe", 3), ("exercise_example", 2)):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            folders.add(os.path.dirname(path))
            course = path
            for _ in range(up + 1):
                course = os.path.dirname(course)
    import grader
    shared = os.path.join(os.path.dirname(grader.__file__), "reference")
    paths = [os.path.join(folder, "reference.py") for folder in folders]
    paths += [os.path.join(course, name) for name in FILES] if course else []
    paths += [os.path.join(shared, name) for name in ("__init__.py", "amp.py", "underflow.py")]
    for folder in [*folders, shared]:
        try:
            paths += [os.path.join(folder, name) for name in os.listdir(folder)]
        except OSError:
            pass
    for path in paths:
        if _grading_file(path):
            try:
                with open(path) as f:
                    f.read(1)
                found.add(f"read {{path}}")
            except OSError:
                pass
    stacks = list(sys._current_frames().values()) + [sys._getframe()]
    for frame in stacks:
        while frame is not None:
            frames += 1
            probe_seen = probe_seen or frame.f_code.co_filename.endswith(("/probe.py", "/probes.py"))
            _what(frame.f_code, found)
            for value in [*frame.f_locals.values(), *frame.f_globals.values()]:
                _what(value, found)
                for cell in getattr(value, "__closure__", None) or ():
                    try:
                        _what(cell.cell_contents, found)
                    except ValueError:
                        pass
                for inner in (getattr(value, "__globals__", None) or {{}}).values():
                    _what(inner, found)
            frame = frame.f_back
    gc.unfreeze()  # what the grading process froze before forking is the learner's to look through too
    objects = gc.get_objects()
    for o in objects:
        _what(o, found)
    print(f"REACH found {{len(found)}}: {{sorted(found)[:20]}}", flush=True)
    print(f"REACH walked {{frames}} frames and {{len(objects)}} objects; probe frame seen: {{probe_seen}}", flush=True)
    os._exit(3)


def {entry}(*args, **kwargs):
    _scan()
'''


def exercise_yaml(exercise: str) -> dict:
    return yaml.safe_load((EXERCISES / exercise / "exercise.yaml").read_text())


def grading_only_files() -> list[str]:
    """Every exercise's grading-only files, relative to the course's folder."""
    return sorted(path.relative_to(EXERCISES).as_posix()
                  for path in [*EXERCISES.glob("*/*/checks/*.py"), *EXERCISES.glob("_library/*.py")]  # courselib's too
                  if path.name == "reference.py" or path.name == "referee.py" or path.name.startswith("test_"))


def scan(exercise: str) -> str:
    return SCAN.format(names=sorted(REFERENCES.get(exercise, [])), entry=exercise_yaml(exercise)["entry"],
                       files=grading_only_files())


def hints(exercise: str) -> list[str]:
    return [check["hint"] for check in exercise_yaml(exercise)["checks"] if check.get("hint")]


# Every exercise in the local sandbox; in docker one, whose scan also tries to read every exercise's grading-only
# files: a learner process is made the same way for every exercise (the zygote, the image's permissions), and
# each container grading costs seconds of CI.
IN_BOTH = "mixed-precision/amp-step"


@pytest.mark.parametrize("kind, exercise", [*(("local", e) for e in sorted(REFERENCES)), ("docker", IN_BOTH)])
def test_the_submission_cannot_reach_the_reference_or_a_hint(warm_sandbox, kind, exercise):
    """By import, in sys.modules, by reading the file, through frames, closures and __globals__, and in gc."""
    output = run_submission(exercise, scan(exercise), sandbox=warm_sandbox(kind))["output"]
    assert "REACH found 0: []" in output, output
    assert "probe frame seen: True" in output, output  # it ran inside the probe's call, with the probe's frames
    assert not [hint for hint in hints(exercise) if hint[:60] in output]


def test_a_run_finds_no_hint_in_its_process(sandbox):
    """Finding 6: a Run's learner process holds no frame or object of the grading (the exercise, its hints)."""
    exercise = "mixed-precision/amp-step"
    output = run_example(exercise, scan(exercise), sandbox=sandbox)["output"]
    assert "REACH found 0: []" in output, output
    assert not [hint for hint in hints(exercise) if hint[:60] in output]


# Finding 1's attack as it was found: the starter's loop (advancing on every batch), then the grader's own
# correct loop, called with the recorder off, and its outcome copied into the model, the EMA, the learning
# rate and the scheduler.
STARTER = (EXERCISES / "mixed-precision/skipped-steps/starter.py").read_text()
COPIES_THE_REFERENCE = "import sys\n" + STARTER.replace("    return steps\n", r'''
    reference = getattr(sys.modules.get("scenario"), "reference", None)
    print(f"REFERENCE reachable: {reference is not None}", flush=True)
    if reference is None:
        return steps
    api = sys._getframe(1).f_locals["self"]  # ProbeAPI.call's frame
    recorder = sys.modules["grader.learner.recorder"].RECORDER
    recorder.recording = False
    want = reference(api.seed, batches[0][0].device.type)
    recorder.recording = True
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(want["params"][name])
        for name, p in ema.module.named_parameters():
            p.copy_(want["ema_params"][name])
        ema.n_averaged.fill_(want["ema_updates"])
    optimizer.param_groups[0]["lr"] = want["lr"]
    scheduler.last_epoch = want["scheduler_steps"]
    return want["real_steps"]
''')


def test_the_skipped_steps_reference_cannot_be_called_and_copied(sandbox):
    assert "REFERENCE reachable" in COPIES_THE_REFERENCE  # the starter still ends with `return steps`
    result = run_submission("mixed-precision/skipped-steps", COPIES_THE_REFERENCE, sandbox=sandbox)
    assert "REFERENCE reachable: False" in result["output"], result["output"]
    assert result["status"] == "failed", result


# Finding 3's way in (issue 48): a module whose class is a ModuleType subclass answers the grader's reads of its
# functions with code of its own (a __getattribute__). The grader reads functions only from a plain module.
CLASS_CHANGED = (EXERCISES / "mixed-precision/amp-step/solution.py").read_text() + '''

import sys, types


class Answering(types.ModuleType):
    def __getattribute__(self, name):
        return types.ModuleType.__getattribute__(self, name)


sys.modules[__name__].__class__ = Answering
'''


def test_a_module_whose_class_was_changed_is_refused(warm_sandbox):
    result = run_submission("mixed-precision/amp-step", CLASS_CHANGED, sandbox=warm_sandbox("local"))
    assert result["status"] == "error", result
    assert result["error"]["kind"] == "module-class", result["error"]
    assert "changed the class of its own module" in result["error"]["message"]

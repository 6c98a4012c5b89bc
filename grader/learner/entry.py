"""The learner's side of a grading run: load the submission and let the exercise's probe drive it.

`ProbeJob` and `ExampleJob` are the jail's jobs (sandbox.jail.Job): data the jail sends to its zygote,
whose `prepare()` runs in the forked child before it is confined and whose `run()` runs confined. They
send back observations, never a verdict: the checks that judge them run in the grading process, which
the learner's code cannot reach.

A probe is an exercise's `checks/probe.py`:

    def prepare() -> None            # optional: patch torch before the submission is loaded
    def probe(api: ProbeAPI) -> dict # call the learner's function, return what was observed; it runs
                                     # in every process that loads the learner's code (api.run names
                                     # the run: channel.Referee.memory_runs), and what each returns is
                                     # checked
    def measure(api, name) -> dict   # optional: the grading side's own reference process `name`, whose
                                     # peak memory the grading side reads; no learner code is loaded
                                     # (api.entry is None)
"""
from __future__ import annotations

import importlib.util
import inspect
import io
import linecache
import sys
import traceback
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

import torch

from grader.core.protocol import ErrorInfo
from grader.learner.emulation import amp_device, emulated
from grader.learner.recorder import RECORDER, SUBMISSION_FILENAME, submission_line


class LearnerError(Exception):
    """The learner's code could not be loaded or raised: carries the learner-facing message."""

    def __init__(self, kind: str, message: str, line: int | None = None):
        super().__init__(message)
        self.kind, self.message, self.line = kind, message, line

    def frame(self) -> dict[str, Any]:
        """What the learner's process sends back for this error (the harness makes it a verdict)."""
        return asdict(ErrorInfo(self.kind, self.message, self.line))


def submission_frame_line(tb: types.TracebackType | None) -> int | None:
    line = None
    for frame in traceback.extract_tb(tb):
        if frame.filename == SUBMISSION_FILENAME:
            line = frame.lineno
    return line


# PyTorch's own errors that the lessons explain: (text in the error, kind, what it means in the lessons'
# words). The kind lets a check say which other check's failure explains the error (checking.explained_by).
KNOWN_ERRORS: tuple[tuple[str, str, str], ...] = (
    ("Attempted step but _scale is None", "step-without-scaled-backward",
     "scaler.step(optimizer) found no scaled gradients to unscale: backward ran on the loss itself, not on "
     "scaler.scale(loss)."),
    ("No inf checks were recorded for this optimizer", "step-without-scaled-backward",
     "scaler.step(optimizer) found no gradients from scaler.scale(loss).backward() for this optimizer."),
    ("step() has already been called since the last update()", "update-missing",
     "scaler.step(optimizer) ran again before scaler.update(): call scaler.update() once after every "
     "scaler.step(optimizer)."),
    ("unscale_() has already been called on this optimizer since the last update()", "unscale-twice",
     "scaler.unscale_(optimizer) ran twice before scaler.update(): unscale once per step, then step and update."),
    ("does not require grad and does not have a grad_fn", "backward-without-graph",
     "backward() ran on a tensor with no autograd graph: it was computed under torch.no_grad() or "
     "torch.inference_mode(), or detached."),
    ("Trying to backward through the graph a second time", "backward-twice",
     "backward() ran a second time through the same graph: compute the loss again for each backward."),
    ("Attempting to unscale FP16 gradients", "fp16-weights",
     "scaler.step(optimizer) refused float16 gradients: the model's weights were cast to float16{cast}, so their "
     "gradients are float16 too, and tiny updates round to zero. Keep the weights in float32: autocast casts "
     "16-bit copies per operation, and the GradScaler unscales float32 gradients."),
)


def describe_exception(exc: BaseException, memory_mb: int, during: str = "") -> LearnerError:
    line = submission_frame_line(exc.__traceback__)
    where = f" on line {line}" if line else ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "DefaultCPUAllocator" in text:
        return LearnerError("memory", f"Your code ran out of memory{where} (limit {memory_mb} MB).", line)
    for known, kind, meaning in KNOWN_ERRORS:
        if known in str(exc):
            cast = ""
            if kind == "fp16-weights" and RECORDER.weights_cast is not None:
                line, call, _dtype = RECORDER.weights_cast  # mark the cause, not scaler.step that noticed it
                cast = f" on line {line} (.{call})"
            raised = f"PyTorch raised {type(exc).__name__}{where}{during}"
            return LearnerError(kind, f"{meaning.format(cast=cast)} ({raised}: \"{known}\".)", line)
    detail = f": {text}" if text else ""
    return LearnerError("exception", f"Your code raised {type(exc).__name__}{where}{during}{detail}", line)


class ProbeAPI:
    """What a probe gets: the learner's entry function, the run's seed and device, the run's name (`run`:
    channel.Referee.main_run, or one of its memory_runs), and `call`."""

    def __init__(self, entry: Callable[..., Any] | None, seed: int, memory_mb: int, run: str = "main"):
        self.entry = entry
        self.seed = seed
        self.memory_mb = memory_mb
        self.run = run
        self.device = amp_device()  # "cuda" on a GPU host, else "cpu" (CUDA code emulated)
        self.emulated = self.device != "cuda"

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Call the learner's function; an exception in it becomes the run's learner-facing error."""
        try:
            if self.entry is None:  # a reference run (a probe's measure): no learner code was loaded
                raise TypeError("there is no learner function to call in a reference run")
            return self.entry(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - anything the learner's code raises is the learner's error
            raise describe_exception(exc, self.memory_mb) from None

    def try_call(self, *args: Any, **kwargs: Any) -> tuple[Any, dict[str, Any] | None]:
        """Call the learner's function; on an exception return (None, {kind, message, line}) so the
        probe can go on and the checks can say which call failed and how."""
        try:
            if self.entry is None:  # a reference run (a probe's measure): no learner code was loaded
                raise TypeError("there is no learner function to call in a reference run")
            return self.entry(*args, **kwargs), None
        except Exception as exc:  # noqa: BLE001 - anything the learner's code raises is the learner's error
            return None, describe_exception(exc, self.memory_mb).frame()


COURSE_LIBRARY = "courselib"  # the name the course's shared code (its `_library/` folder) is imported under


def import_checks(checks_dir: Path) -> None:
    """Make an exercise's checks importable in this process: the one place that does, called wherever they are
    loaded (the learner's process: the probe, the example; the grading process: the checks, the referee).
    The checks folder goes first on sys.path, so its modules import one another by name (`import scenario`);
    the course's shared code, the `_library` folder beside the lessons (`checks_dir` is COURSE/LESSON/EXERCISE/
    checks; for a folder outside any course, the configured course's), is the package `courselib`. Both are
    imported when the probe is loaded, before the learner's process is confined (its view holds neither)."""
    if str(checks_dir) not in sys.path:
        sys.path.insert(0, str(checks_dir))
    library = checks_dir.parents[2] / "_library"
    if not library.is_dir():  # an exercise folder copied out of its course (`grader validate FOLDER`): the course's
        from grader.core.settings import exercises_root

        library = exercises_root() / "_library"
    loaded = sys.modules.get(COURSE_LIBRARY)
    if not (library / "__init__.py").is_file() or list(getattr(loaded, "__path__", [])) == [str(library)]:
        return
    for name in [n for n in sys.modules if n == COURSE_LIBRARY or n.startswith(COURSE_LIBRARY + ".")]:
        del sys.modules[name]  # another course's, loaded before in this process
    spec = importlib.util.spec_from_file_location(COURSE_LIBRARY, library / "__init__.py",
                                                  submodule_search_locations=[str(library)])
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{library}: cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    sys.modules[COURSE_LIBRARY] = module
    spec.loader.exec_module(module)


def load_probe(checks_dir: Path) -> types.ModuleType:
    import_checks(checks_dir)
    spec = importlib.util.spec_from_file_location("exercise_probe", checks_dir / "probe.py")
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{checks_dir}/probe.py: cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The learner's module as load_submission made it (sys.modules["submission"] is the learner's to replace).
_LOADED: dict[str, types.ModuleType] = {}


def plain_module_dict(module: types.ModuleType) -> dict[str, Any]:
    """The learner's module's own namespace, refused when the module is not a plain module any more: a
    module whose class was changed (`sys.modules[__name__].__class__ = Subclass`) answers attribute reads
    with code of its own (a `__getattribute__` that runs when the grader reads a function), so the grader
    reads functions only from a plain module's `__dict__`."""
    if type(module) is not types.ModuleType:
        raise LearnerError("module-class", "Your code changed the class of its own module (to "
                                           f"{type(module).__name__!r}): the grader reads your functions from a plain "
                                           "module. Define them at the top level and leave the module as it is.")
    return module.__dict__


def submission_attribute(name: str) -> Any:
    """`name` of the learner's module, read from its plain `__dict__` (None when it has no such name)."""
    module = _LOADED.get("submission")
    if module is None:
        raise RuntimeError("no submission was loaded in this process")
    return plain_module_dict(module).get(name)


def load_submission(code: str, entry: str, params: list[str], memory_mb: int) -> Callable[..., Any]:
    module = types.ModuleType("submission")
    _LOADED["submission"] = module
    module.__file__ = SUBMISSION_FILENAME
    sys.modules["submission"] = module
    linecache.cache[SUBMISSION_FILENAME] = (len(code), None, code.splitlines(True), SUBMISSION_FILENAME)
    compiled = compile(code, SUBMISSION_FILENAME, "exec")
    try:
        exec(compiled, module.__dict__)
    except SystemExit as exc:
        line = submission_frame_line(exc.__traceback__)
        raise LearnerError("exit", f"Your code called exit() while it was being loaded"
                                   f"{f' (line {line})' if line else ''}.", line) from None
    except Exception as exc:  # noqa: BLE001 - anything the learner's code raises is the learner's error
        raise describe_exception(exc, memory_mb, " while it was being loaded") from None
    function = plain_module_dict(module).get(entry)
    if function is None:
        raise LearnerError("missing", f"Your code does not define `{entry}`.")
    if not callable(function):
        raise LearnerError("missing", f"`{entry}` in your code is a {type(function).__name__}, not a function.")
    if params:
        try:
            signature = inspect.signature(function)
            signature.bind(*params)
        except TypeError:
            wanted = ", ".join(params)
            raise LearnerError("signature", f"`{entry}` must accept ({wanted}); yours is "
                                            f"`{entry}{signature}`.",
                               function.__code__.co_firstlineno if hasattr(function, "__code__") else None) from None
        except ValueError:
            pass
    learner_function: Callable[..., Any] = function
    return learner_function


@dataclass
class ProbeJob:
    """The exercise's probe driving the learner's `code` (sandbox.jail.Job): its `probe(api)`, `api.run`
    being `run`; without code (None), its `measure(api, run)`, a grading-side reference process that loads
    no learner code. `prepare` loads the probe before the child is confined (its folder is not in the
    learner's view); a probe that fails to load is the exercise's failure, reported as such."""
    checks_dir: Path
    code: str | None
    entry: str
    params: tuple[str, ...]
    seed: int
    memory_mb: int
    run_name: str = "main"
    _probe: types.ModuleType | None = field(default=None, repr=False, compare=False)

    def prepare(self, fds: Mapping[str, int]) -> None:
        self._probe = load_probe(self.checks_dir)

    def run(self, fds: Mapping[str, int]) -> bytes:
        """Observations or the learner-facing error, nothing else: device, notes and infrastructure
        failures are the grading side's to state (a frame that claims them is ignored there)."""
        from grader.learner import channel

        channel.connect(fds.get("channel"), fds.get("helper"))
        probe: Any = self._probe  # the exercise's probe module, loaded by prepare(): its functions are the course's
        stage = "load"  # until the learner's module has run and its function was found
        attribute_warnings_to_submission()
        # The probe's functions are taken now: the learner's module, loaded below, can reach the probe module
        # (through any of its functions' __globals__) and replace `probe.probe` there.
        # None for a probe without measure() asked for a reference run: calling it fails below, and is reported.
        observe: Any = probe.probe if self.code is not None else getattr(probe, "measure", None)
        try:
            if hasattr(probe, "prepare"):
                probe.prepare()
            channel.drop_helper()  # a helper forked by prepare() keeps its own end; the learner's code gets none
            function = load_submission(self.code, self.entry, list(self.params), self.memory_mb) \
                if self.code is not None else None
            stage = "run"
            api = ProbeAPI(function, self.seed, self.memory_mb, self.run_name)
            observations = observe(api) if self.code is not None else observe(api, self.run_name)
            message = {"ok": True, "observations": observations}
        except LearnerError as err:
            message = {"ok": False, "error": err.frame(), "stage": stage}
        except BaseException as exc:  # noqa: BLE001 - the learner's code reached beyond api.call (e.g. a patched probe)
            message = {"ok": False, "error": describe_exception(exc, self.memory_mb).frame(), "stage": stage}
        message["emulated"] = emulated()  # "cpu (cuda emulated)" only where the run used it
        buffer = io.BytesIO()
        torch.save(message, buffer)
        return buffer.getvalue()


def attribute_warnings_to_submission() -> None:
    """Show a warning that names a file of the grader (a spy between the learner's call and PyTorch: its
    `stacklevel` counts one frame too few) at the learner's innermost line instead, as it would read
    without the spy (`submission.py:12: UserWarning: ...`)."""
    import warnings

    grader_dir = str(Path(__file__).resolve().parents[1])
    shown = warnings.showwarning

    def showwarning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    file: TextIO | None = None, line: str | None = None) -> None:
        if str(filename).startswith(grader_dir):
            learner_line = submission_line()
            if learner_line is not None:
                filename, lineno, line = SUBMISSION_FILENAME, learner_line, None
        shown(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning


RETURNED_CAP = 2000  # characters of the repr of what a Run's call returned


def load_example(exercise_dir: Path) -> types.ModuleType:
    """The exercise's `example.py`: `example(device)` returns the arguments of one call of the learner's function
    (a tuple, in the order of `params`), small enough to print."""
    import_checks(exercise_dir / "checks")  # an example may build on the checks' scenario
    spec = importlib.util.spec_from_file_location("exercise_example", exercise_dir / "example.py")
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{exercise_dir}/example.py: cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class ExampleJob:
    """A Run (sandbox.jail.Job): the learner's function called once on the exercise's `example.py`,
    confined like a grading. Sends back the repr of what the call returned (capped) or the learner-facing
    error; what the code printed is the confined process's output, which the jail captures."""
    exercise_dir: Path
    code: str
    entry: str
    params: tuple[str, ...]
    seed: int
    memory_mb: int
    _example: Any = field(default=None, repr=False, compare=False)  # the example module, once prepare() loaded it

    def prepare(self, fds: Mapping[str, int]) -> None:
        self._example = load_example(self.exercise_dir)

    def run(self, fds: Mapping[str, int]) -> bytes:
        from grader.learner.emulation import install_cuda_emulation

        stage = "load"
        attribute_warnings_to_submission()
        try:
            install_cuda_emulation()  # the lesson's CUDA code runs on a CPU-only host, as when graded
            function = load_submission(self.code, self.entry, list(self.params), self.memory_mb)
            stage = "run"
            torch.manual_seed(self.seed)
            args = self._example.example(amp_device())
            value = ProbeAPI(function, self.seed, self.memory_mb).call(*args)
            try:
                text = repr(value)
            except Exception as exc:  # noqa: BLE001 - a __repr__ of the learner's that raises
                text = f"<{type(value).__name__} whose repr() raised {type(exc).__name__}>"
            message = {"ok": True, "observations": {"returned": text[:RETURNED_CAP],
                                                    "returned_truncated": len(text) > RETURNED_CAP}}
        except LearnerError as err:
            message = {"ok": False, "error": err.frame(), "stage": stage}
        except BaseException as exc:  # noqa: BLE001 - e.g. SystemExit from the learner's function
            message = {"ok": False, "error": describe_exception(exc, self.memory_mb).frame(), "stage": stage}
        message["emulated"] = emulated()  # "cpu (cuda emulated)" only where the run used it
        buffer = io.BytesIO()
        torch.save(message, buffer)
        return buffer.getvalue()

"""Runs in the learner's process: compile the learner's compute_loss with torch.compile on a backend that
runs each captured graph as it is (no C++ compiler), train a few steps with it, and record what dynamo did:
every graph it captured (its operators), every graph break (dynamo's reason and the learner's line), every
recompilation (the guard that failed), and every change of torch._dynamo.config seen while compute_loss was
compiled or ran (dynamo compiles with its defaults).

Each graph and each break is streamed to the grading process as dynamo makes it (a RECORDER mark, `_stream`),
and the checks read the grading side's copy: the lists kept here are the learner's code's to rewrite (`gc`
finds them) once the break that let its code run in Python has been logged, but by then the mark is sent.
The path a mark takes (the recorder's and the channel's functions) is compared with what it was in prepare(),
before the learner's code loaded, when compiling starts and after every call; only a run whose path stayed
intact ends with scenario.DONE_MARK, without which the checks judge nothing."""
import copy
import logging
import re
import traceback

import torch
import torch._dynamo
from torch._dynamo import symbolic_convert
from torch._dynamo.exc import InternalTorchDynamoError
from torch._dynamo.utils import guard_failures
from torch._dynamo.variables.misc import ComptimeVariable

import scenario
from grader.checks.learner.probing import RECORDER, SUBMISSION_FILENAME, describe_exception
from grader.checks.learner.probing import learner_channel as channel

MOST = 20  # graphs, breaks and guard failures kept (the starter has 3 breaks, 4 graphs)
CONFIG = torch._dynamo.config
# Read through the class's own function, taken before the learner's code loads (a patched method on the
# config module cannot answer for it).
CONFIG_COPY = type(CONFIG).get_config_copy
DEFAULTS: dict = {}
GRAPHS: list[dict] = []
BREAKS: list[dict] = []
# Each change of torch._dynamo.config seen while compute_loss ran or was compiled: {"call", "keys"}.
CONFIG_CHANGES: list[dict] = []
SPY: dict = {}  # the break spy installed by prepare()
PATH: list = []  # what `_path()` was in prepare(), before the learner's code loaded
STATE: dict = {"call": 0, "seq": 0, "dynamo_error": None, "in_call": False, "tampered": False}  # the call of compute_loss being compiled; the order of graphs and breaks


def _path() -> list:
    """The functions and objects a streamed mark passes through in this process."""
    learner, recorder = channel._learner, type(RECORDER)
    return [channel.emit, learner, getattr(learner, "_sock", None), getattr(type(learner), "emit", None),
            getattr(type(learner), "_send", None), recorder._record, recorder.mark, recorder]


def _stream_intact() -> bool:
    """Whether a mark still reaches the grading process as it did before the learner's code loaded."""
    learner = channel._learner
    return (learner is not None and len(PATH) == len(_path()) and all(a is b for a, b in zip(_path(), PATH))
            and RECORDER.recording is True and learner.closed is False
            and not {"emit", "_send"} & vars(learner).keys() and not {"mark", "_record"} & vars(RECORDER).keys())


def _stream(label: str, item: dict) -> None:
    """Send one graph or break to the grading process now; a run whose path was changed sends no scenario.DONE_MARK."""
    if not _stream_intact():
        STATE["tampered"] = True
    recording, RECORDER.recording = RECORDER.recording, True  # the learner's code may have switched it off
    try:
        RECORDER.mark(label, record=item)
    finally:
        RECORDER.recording = recording


def _learner_lines(frames) -> list[int]:
    """The learner's lines in a stack of frame summaries, outermost first."""
    return [f.lineno for f in frames
            if getattr(f, "filename", None) == SUBMISSION_FILENAME and type(f.lineno) is int]


def _record_break(translator, code_options, reason, exc):
    if getattr(exc, "logged", False) or len(BREAKS) >= MOST:
        return
    stack = getattr(exc, "real_stack", None)
    if stack is None:
        stack = torch._guards.TracingContext.extract_stack()
    lines = _learner_lines(stack)
    if not lines and getattr(translator, "f_code", None) is not None \
            and translator.f_code.co_filename == SUBMISSION_FILENAME and type(translator.lineno) is int:
        lines = [translator.lineno]
    kind = getattr(exc, "gb_type", None) or type(exc).__name__
    STATE["seq"] += 1
    BREAKS.append({"seq": STATE["seq"], "call": STATE["call"], "kind": str(kind)[:200],
                   "reason": " ".join(str(reason).split())[:400],
                   "line": lines[-1] if lines else None, "lines": lines[-4:]})
    _stream(scenario.BREAK_MARK, BREAKS[-1])


def _backend(gm, example_inputs):
    """Record the captured graph's operators, then run it as it is (what backend="eager" does). A graph
    compiled under settings other than dynamo's defaults is noted (the learner's code changed them while
    dynamo traced it)."""
    _note_config_change()
    if len(GRAPHS) < MOST:
        ops, foreign = [], []
        for node in gm.graph.nodes:
            if node.op in ("call_function", "call_method", "call_module"):
                target = node.target
                name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
                ops.append(str(name)[:60])
                module = "" if isinstance(target, str) else (getattr(target, "__module__", None) or "")
                if node.op == "call_function" and module and module.split(".")[0] not in (
                        "torch", "_operator", "operator", "builtins", "math"):
                    foreign.append(f"{module}.{name}"[:100])
        STATE["seq"] += 1
        GRAPHS.append({"seq": STATE["seq"], "call": STATE["call"], "ops": ops[:200], "op_count": len(ops),
                       "foreign": foreign[:10]})
        _stream(scenario.GRAPH_MARK, GRAPHS[-1])
    return gm.forward


def prepare():
    """Before the learner's code loads: dynamo's settings as they are by default, and the break spy. Dynamo's own
    warnings are silenced: the verdict lists every break with its line, and the warning for `.item()` advises
    the config change this exercise undoes."""
    torch._logging.set_logs(dynamo=logging.ERROR)
    DEFAULTS.update(CONFIG_COPY(CONFIG))
    original = symbolic_convert.InstructionTranslatorBase.log_graph_break

    def log_graph_break(self, code_options, reason, exc):
        try:
            _record_break(self, code_options, reason, exc)
        finally:
            original(self, code_options, reason, exc)

    PATH[:] = _path()
    SPY["log_graph_break"] = log_graph_break
    symbolic_convert.InstructionTranslatorBase.log_graph_break = log_graph_break
    _watch_comptime()
    _watch_config_reads()


def _watch_comptime() -> None:
    """Stream each torch._dynamo.comptime call dynamo meets, before the learner's function runs in it: code that
    runs while dynamo traces, with no break before it, could swap the break spy out and back (red team, issue 48)."""
    original = ComptimeVariable.call_function

    def call_function(self, tx, args, kwargs):
        line = tx.lineno if getattr(tx, "f_code", None) is not None and \
            tx.f_code.co_filename == SUBMISSION_FILENAME and type(tx.lineno) is int else None
        _stream(scenario.TRACE_TIME_MARK, {"call": STATE["call"], "line": line})
        return original(self, tx, args, kwargs)

    SPY["comptime"] = call_function
    ComptimeVariable.call_function = call_function


def _watch_config_reads() -> None:
    """Note each read of a torch._dynamo.config key, while compute_loss is compiled or runs, whose value is not
    the default: a setting changed for the trace and put back before it ends (from code dynamo runs while
    tracing, torch._dynamo.comptime) is seen when dynamo reads it, not only before and after."""
    config_class = type(CONFIG)  # this config module's own class (torch.utils._config_module makes one each)
    read = config_class.__getattr__

    def read_noting_changes(self, name):
        value = read(self, name)
        if STATE["in_call"] and self is CONFIG and name in DEFAULTS:
            try:
                differs = bool(value != DEFAULTS[name])
            except Exception:  # noqa: BLE001 - a value that cannot be compared is not the default
                differs = True
            if differs:
                _note_change(sorted({name}))
        return value

    config_class.__getattr__ = read_noting_changes


def _spy_replaced() -> bool:
    """Whether the learner's module replaced the break spy; it is put back either way, before compiling."""
    replaced = symbolic_convert.InstructionTranslatorBase.__dict__.get("log_graph_break") is not SPY["log_graph_break"] \
        or ComptimeVariable.__dict__.get("call_function") is not SPY["comptime"]
    symbolic_convert.InstructionTranslatorBase.log_graph_break = SPY["log_graph_break"]
    ComptimeVariable.call_function = SPY["comptime"]
    return replaced


def _changed_keys() -> list[str]:
    """The keys of torch._dynamo.config whose values differ from the defaults copied in prepare()."""
    now = CONFIG_COPY(CONFIG)
    return sorted(k for k in DEFAULTS if k in now and now[k] != DEFAULTS[k])


def _restore_defaults() -> list[str]:
    """Undo what the learner's code changed in torch._dynamo.config; say what it was. Each value put back is a
    copy, so that mutating it in place (a set's `add`) cannot reach the defaults kept here."""
    changed = _changed_keys()
    for key in changed:
        setattr(CONFIG, key, copy.deepcopy(DEFAULTS[key]))
    return changed


def _note_change(keys: list[str]) -> None:
    """Record the keys found changed during the current call of compute_loss (merged per call)."""
    for change in CONFIG_CHANGES:
        if change["call"] == STATE["call"]:
            change["keys"] = sorted(set(change["keys"]) | set(keys))[:MOST]
            return
    if len(CONFIG_CHANGES) < MOST:
        CONFIG_CHANGES.append({"call": STATE["call"], "keys": keys[:MOST]})


def _note_config_change() -> None:
    """Record that the config differs from the defaults now, while compute_loss is compiled or runs, and put
    the defaults back."""
    changed = _restore_defaults()
    if changed:
        _note_change(changed)


def _recompiles() -> list[dict]:
    """The guards that failed, as dynamo keeps them (one text per recompilation): the guard and the line."""
    name = SUBMISSION_FILENAME
    found = []
    for code, failures in guard_failures.items():
        if getattr(code, "co_filename", None) != name:
            continue
        for text in failures[:MOST]:
            first = str(text).split("\n")[0]
            guard = re.sub(r"^\d+/\d+:\s*", "", first.split("#")[0]).strip()
            line = re.search(rf'File "{re.escape(name)}", line (\d+)', str(text))
            found.append({"guard": guard[:200], "line": int(line.group(1)) if line else None})
    return found[:MOST]


def probe(api):
    # The learner's compute_loss as the loader read it from the module's __dict__, right after the module ran
    # (api.entry): the module is not asked again, so nothing it defines (a __getattribute__ on a module class
    # of its own) runs after the defaults are put back.
    compute_loss = api.entry
    changed = _restore_defaults()
    spy_replaced = _spy_replaced()
    STATE["tampered"] = not _stream_intact()
    torch._dynamo.reset()
    compiled = torch.compile(compute_loss, backend=_backend)

    def call(model, x, y):
        STATE["call"] += 1
        STATE["in_call"] = True
        try:
            return compiled(model, x, y)
        except InternalTorchDynamoError as exc:
            # Dynamo itself failed (torch 2.13: an f-string of `loss.item() * k` on a second call, after its
            # breaks): the run stops there and the checks say so, next to the breaks that led to it.
            lines = re.findall(rf'File "{re.escape(SUBMISSION_FILENAME)}", line (\d+)', str(exc)) or \
                _learner_lines(traceback.extract_tb(exc.__traceback__))  # dynamo's "from user code" first
            STATE["dynamo_error"] = {"call": STATE["call"], "line": int(lines[-1]) if lines else None,
                                     "message": " ".join(str(exc).split("from user code")[0].split())[:300]}
            return None
        except Exception as exc:  # noqa: BLE001 - anything the learner's code raises is the learner's error
            raise describe_exception(exc, api.memory_mb) from None
        finally:
            STATE["in_call"] = False
            _note_config_change()  # a change the call made, even one the compiled graph did not see
            STATE["tampered"] = STATE["tampered"] or not _stream_intact()

    model, optimizer, data = scenario.build(api.seed, api.device)
    weights: list = []
    losses = scenario.train(call, model, optimizer, data, api.device, weights)
    if not STATE["tampered"] and _stream_intact():
        RECORDER.mark(scenario.DONE_MARK, graphs=len(GRAPHS), breaks=len(BREAKS))
    return {"losses": losses, "weights": weights, "graphs": GRAPHS, "breaks": BREAKS,
            "recompiles": _recompiles(), "config_changed": changed[:MOST], "config_changed_while_compiling": CONFIG_CHANGES,
            "spy_replaced": spy_replaced, "calls": STATE["call"], "dynamo_error": STATE["dynamo_error"]}

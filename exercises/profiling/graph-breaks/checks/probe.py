"""Runs in the learner's process: compile the learner's compute_loss with torch.compile on a backend that
runs each captured graph as it is (no C++ compiler), train a few steps with it, and record what dynamo did:
every graph it captured (its operators), every graph break (dynamo's reason and the learner's line), and
every recompilation (the guard that failed)."""
import logging
import re
import sys
import traceback

import torch
import torch._dynamo
from torch._dynamo import symbolic_convert
from torch._dynamo.exc import InternalTorchDynamoError
from torch._dynamo.utils import guard_failures

import scenario
from grader.checks.probing import describe_exception
from grader.checks.probes import submission_function

MOST = 20  # graphs, breaks and guard failures kept (the starter has 3 breaks, 4 graphs)
CONFIG = torch._dynamo.config
DEFAULTS: dict = {}
GRAPHS: list[dict] = []
BREAKS: list[dict] = []
STATE: dict = {"call": 0, "seq": 0, "dynamo_error": None}  # the call of compute_loss being compiled; the order of graphs and breaks


def _submission_file() -> str:
    module = sys.modules.get("submission")
    return getattr(module, "__file__", None) or "submission.py"


def _learner_lines(frames) -> list[int]:
    """The learner's lines in a stack of frame summaries, outermost first."""
    name = _submission_file()
    return [f.lineno for f in frames if getattr(f, "filename", None) == name and isinstance(f.lineno, int)]


def _record_break(translator, code_options, reason, exc):
    if getattr(exc, "logged", False) or len(BREAKS) >= MOST:
        return
    stack = getattr(exc, "real_stack", None)
    if stack is None:
        stack = torch._guards.TracingContext.extract_stack()
    lines = _learner_lines(stack)
    if not lines and getattr(translator, "f_code", None) is not None \
            and translator.f_code.co_filename == _submission_file():
        lines = [translator.lineno]
    kind = getattr(exc, "gb_type", None) or type(exc).__name__
    STATE["seq"] += 1
    BREAKS.append({"seq": STATE["seq"], "call": STATE["call"], "kind": str(kind)[:200],
                   "reason": " ".join(str(reason).split())[:400],
                   "line": lines[-1] if lines else None, "lines": lines[-4:]})


def _backend(gm, example_inputs):
    """Record the captured graph's operators, then run it as it is (what backend="eager" does)."""
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
    return gm.forward


def prepare():
    """Before the learner's code loads: dynamo's settings as they are by default, and the break spy. Dynamo's own
    warnings are silenced: the verdict lists every break with its line, and the warning for `.item()` advises
    the config change this exercise undoes."""
    torch._logging.set_logs(dynamo=logging.ERROR)
    DEFAULTS.update(CONFIG.get_config_copy())
    original = symbolic_convert.InstructionTranslatorBase.log_graph_break

    def log_graph_break(self, code_options, reason, exc):
        try:
            _record_break(self, code_options, reason, exc)
        finally:
            original(self, code_options, reason, exc)

    symbolic_convert.InstructionTranslatorBase.log_graph_break = log_graph_break


def _restore_defaults() -> list[str]:
    """Undo what the learner's module changed in torch._dynamo.config; say what it was."""
    now = CONFIG.get_config_copy()
    changed = sorted(k for k in DEFAULTS if k in now and now[k] != DEFAULTS[k])
    for key in changed:
        setattr(CONFIG, key, DEFAULTS[key])
    return changed


def _recompiles() -> list[dict]:
    """The guards that failed, as dynamo keeps them (one text per recompilation): the guard and the line."""
    name = _submission_file()
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
    changed = _restore_defaults()
    torch._dynamo.reset()
    compute_loss = submission_function("compute_loss")
    compiled = torch.compile(compute_loss, backend=_backend)

    def call(model, x, y):
        STATE["call"] += 1
        try:
            return compiled(model, x, y)
        except InternalTorchDynamoError as exc:
            # Dynamo itself failed (torch 2.13: an f-string of `loss.item() * k` on a second call, after its
            # breaks): the run stops there and the checks say so, next to the breaks that led to it.
            lines = re.findall(rf'File "{re.escape(_submission_file())}", line (\d+)', str(exc)) or \
                _learner_lines(traceback.extract_tb(exc.__traceback__))  # dynamo's "from user code" first
            STATE["dynamo_error"] = {"call": STATE["call"], "line": int(lines[-1]) if lines else None,
                                     "message": " ".join(str(exc).split("from user code")[0].split())[:300]}
            return None
        except Exception as exc:  # noqa: BLE001 - anything the learner's code raises is the learner's error
            raise describe_exception(exc, api.memory_mb) from None

    model, optimizer, batches = scenario.build(api.seed, api.device)
    weights: list = []
    losses = scenario.train(call, model, optimizer, batches, weights)
    return {"losses": losses, "weights": weights, "graphs": GRAPHS, "breaks": BREAKS,
            "recompiles": _recompiles(), "config_changed": changed[:MOST], "calls": STATE["call"],
            "dynamo_error": STATE["dynamo_error"]}

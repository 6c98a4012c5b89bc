"""Runs in the learner's process: compile the learner's compute_loss with torch.compile on a backend that runs
each captured graph as it is (no C++ compiler), train on batches whose length changes every step, and record
what dynamo did: every graph it handed the backend (and whether its sizes were symbolic), which compiled graphs
each call ran (none: the call ran in eager), every recompilation (the guard that failed), and every change of
torch._dynamo.config seen while compute_loss was compiled or ran (dynamo compiles with its defaults)."""
import copy
import logging
import re

import torch
import torch._dynamo
from torch._dynamo import eval_frame
from torch._dynamo.utils import guard_failures

import scenario
from grader.checks.learner.probing import SUBMISSION_FILENAME, describe_exception

MOST = 40  # graphs and guard failures kept (the starter compiles 8 graphs, one per length up to the limit)
CONFIG = torch._dynamo.config
# Read through the class's own function, taken before the learner's code loads (a patched method on the config
# module cannot answer for it).
CONFIG_COPY = type(CONFIG).get_config_copy
DEFAULTS: dict = {}
# torch.compiler.set_stance's setting ("eager_on_recompile" runs every recompile in eager) lives beside the config,
# in eval_frame's module global; its default is kept here and put back like a config key.
STANCE_KEY = "torch.compiler.set_stance"
GRAPHS: list[dict] = []
RAN: list[int] = []  # per call of compute_loss: how many compiled graphs of at least one operation ran in it
CONFIG_CHANGES: list[dict] = []  # each change of the config seen during a call: {"call", "keys"}
STATE = {"call": 0}


def _backend(gm, example_inputs):
    """Record the captured graph (the call that compiled it, whether dynamo made any size or number symbolic),
    then run it as it is, counting each run against the call it runs in."""
    _note_config_change()
    symbolic = [type(a).__name__ for a in example_inputs if isinstance(a, (torch.SymInt, torch.SymFloat))]
    for a in example_inputs:
        if isinstance(a, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in a.shape):
            symbolic.append("size")
    op_count = sum(n.op.startswith("call_") for n in gm.graph.nodes)
    if len(GRAPHS) < MOST:
        GRAPHS.append({"call": STATE["call"], "symbolic": sorted(set(symbolic)), "op_count": op_count})
    forward = gm.forward

    def run(*args):
        # A graph of no operation (dynamo compiles one around a call it leaves to Python) computes nothing.
        if op_count and 0 < STATE["call"] <= len(RAN):
            RAN[STATE["call"] - 1] += 1
        return forward(*args)

    return run


def prepare():
    """Before the learner's code loads: dynamo's settings as they are by default. Dynamo's own warnings are
    silenced: the verdict says when the recompile limit was hit, with the guards that failed."""
    torch._logging.set_logs(dynamo=logging.ERROR)
    DEFAULTS.update(CONFIG_COPY(CONFIG))
    DEFAULTS[STANCE_KEY] = copy.deepcopy(eval_frame._stance)


def _changed_keys() -> list[str]:
    now = CONFIG_COPY(CONFIG)
    now[STANCE_KEY] = eval_frame._stance
    return sorted(k for k in DEFAULTS if k in now and now[k] != DEFAULTS[k])


def _restore_defaults() -> list[str]:
    """Undo what the learner's code changed in torch._dynamo.config and the compile stance (copies, so in-place
    changes cannot reach the defaults kept here); say what it was."""
    changed = _changed_keys()
    for key in changed:
        if key == STANCE_KEY:
            eval_frame._stance = copy.deepcopy(DEFAULTS[key])
        else:
            setattr(CONFIG, key, copy.deepcopy(DEFAULTS[key]))
    return changed


def _note_config_change() -> None:
    changed = _restore_defaults()
    if changed and len(CONFIG_CHANGES) < MOST:
        CONFIG_CHANGES.append({"call": STATE["call"], "keys": changed[:MOST]})


def _submission_line(text: str) -> int | None:
    """The learner's line a guard's text names ("# <source>  # <path>:<line> in <function>"; dynamo shortens
    the path from the left), or None."""
    for path, line in re.findall(r"(\S+):(\d+) in \w", text):
        if SUBMISSION_FILENAME.endswith(path.lstrip(".")):
            return int(line)
    return None


def _recompiles() -> list[dict]:
    """The guards that failed, as dynamo keeps them (one text per failed cache entry): the guard, the line, and
    which of the function's graphs it guarded."""
    found = []
    for code, failures in guard_failures.items():
        if getattr(code, "co_filename", None) != SUBMISSION_FILENAME:
            continue
        for text in failures[:MOST]:
            first = str(text).split("\n")[0]
            entry = re.match(r"\d+/(\d+):", first)  # "<frame>/<cache entry>: <guard>"; entry 0 is the first graph
            guard = re.sub(r"^\d+/\d+:\s*", "", first.split("#")[0]).strip()
            found.append({"guard": guard[:200], "line": _submission_line(str(text)),
                          "entry": int(entry.group(1)) if entry else None})
    return found[:MOST]


def probe(api):
    # The learner's compute_loss as the loader read it from the module's namespace right after it ran.
    compute_loss = api.entry
    changed = _restore_defaults()
    torch._dynamo.reset()
    compiled = torch.compile(compute_loss, backend=_backend)

    def call(model, tokens, smoothing):
        STATE["call"] += 1
        RAN.append(0)
        try:
            return compiled(model, tokens, smoothing)
        except Exception as exc:  # noqa: BLE001 - anything the learner's code raises is the learner's error
            raise describe_exception(exc, api.memory_mb) from None
        finally:
            _note_config_change()  # a change the call made, even one no compiled graph saw

    model, optimizer, batches = scenario.build(api.seed, api.device)
    weights: list = []
    losses = scenario.train(call, model, optimizer, batches, weights)
    return {"losses": losses, "weights": weights, "graphs": GRAPHS, "ran": RAN, "recompiles": _recompiles(),
            "config_changed": changed[:MOST], "config_changed_while_compiling": CONFIG_CHANGES,
            "recompile_limit": DEFAULTS.get("recompile_limit"), "calls": STATE["call"]}

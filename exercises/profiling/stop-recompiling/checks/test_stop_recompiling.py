"""Checks for profiling/stop-recompiling, run in the grading process."""
import math
import re

import pytest
import torch

import reference
import scenario
from grader.checks.grading.judging import check, fail, figure, show, table_figure

MOST_GRAPHS = 2  # the first length compiled static, then once with the length (and smoothing) symbolic


def _count(v) -> bool:
    return type(v) is int and 0 <= v <= 10**6


def _line(v) -> bool:
    return v is None or _count(v)


def _all(items, item) -> bool:
    return type(items) is list and all(item(v) for v in items)


def _strs(v) -> bool:
    return _all(v, lambda s: type(s) is str)


# What probe.py writes, field by field. The record is made in the learner's process, where the learner's code
# can reach it: a field of another form is refused before a check reads it.
FORMS = {
    "losses": lambda v: _all(v, lambda x: x is None or type(x) is float),
    "weights": lambda v: _all(v, lambda w: type(w) is dict and all(
        type(k) is str and isinstance(t, torch.Tensor) for k, t in w.items())),
    "graphs": lambda v: _all(v, lambda g: type(g) is dict and _count(g.get("call")) and _count(g.get("op_count"))
                             and _strs(g.get("symbolic"))),
    "ran": lambda v: _all(v, _count),
    "recompiles": lambda v: _all(v, lambda r: type(r) is dict and type(r.get("guard")) is str
                                 and _line(r.get("line")) and _line(r.get("entry"))),
    "config_changed": _strs,
    "config_changed_while_compiling": lambda v: _all(v, lambda c: type(c) is dict and _count(c.get("call"))
                                                     and _strs(c.get("keys"))),
    "recompile_limit": _count,
    "calls": _count,
}


def computing(graphs: list[dict]) -> list[dict]:
    """The graphs that compute something: dynamo also compiles graphs of no operation around a call it leaves
    to Python."""
    return [g for g in graphs if g["op_count"]]


def record(observed, *keys: str) -> dict:
    """The probe's record with its fields `keys` checked, or a failure saying they were changed."""
    bad = [k for k in keys if k not in observed or not FORMS[k](observed[k])]
    if bad:
        fail(f"The grader's record of your run ({', '.join(bad)}) is not what the grader writes in your process: "
             "your code changed it, so it cannot be judged.")
    return observed


def reason(guard: str) -> str:
    """A failed guard in the learner's words."""
    size = re.search(r"tensor '(\w+)' size mismatch at index (\d+)\. expected (\d+), actual (\d+)", guard)
    if size:
        return (f"`{size[1]}.shape[{size[2]}]` was {size[3]} when the graph was compiled and {size[4]} now: the "
                "graph holds that size as a constant")
    if guard.startswith("___"):
        return (f"dynamo's guard `{guard}` failed, on a value it carried over a graph break: the Python number "
                "computed before the break is a constant of the graph after it")
    value = re.match(r"L?\[?'?(\w+)'?\]? == (.+)", guard)
    if value:
        return (f"the graph was compiled for `{value[1]} == {value[2].strip()}`: it holds that Python value as a "
                "constant, so a new value needs a new graph")
    return f"dynamo's guard `{guard}` failed"


def why_recompiled(observed) -> str:
    """The distinct reasons dynamo gave for compiling again, and the first learner's line they name. The first
    graph's guards fail by design (it is compiled static; automatic dynamic recompiles once): the guards of the
    graphs after it say what kept the function recompiling, where there are any."""
    later = [f for f in observed["recompiles"] if f["entry"] != 0]
    seen, reasons, line = set(), [], None
    for failure in later or observed["recompiles"]:
        text = reason(failure["guard"])
        key = re.sub(r"\d+", "N", text)
        if key not in seen:
            seen.add(key)
            reasons.append(text + (f" (line {failure['line']})" if failure["line"] else ""))
            line = line or failure["line"]
    return "; ".join(reasons[:3]), line


@pytest.fixture(scope="module")
def original(run):
    """The original compute_loss's run on the same batches, in eager, in the grading process."""
    return reference.reference(run["seed"], run["device"])


@check("bounded-compiles")
def test_compiles_at_most_twice(observed):
    observed = record(observed, "graphs", "calls", "recompiles", "config_changed", "config_changed_while_compiling")
    graphs, calls = computing(observed["graphs"]), observed["calls"]
    note = (f" (Your code changed dynamo's settings: {', '.join(observed['config_changed'])}; the grader undid "
            "that and compiled with dynamo's defaults.)" if observed["config_changed"] else "")
    during = observed["config_changed_while_compiling"]
    if during:
        keys = sorted({k for c in during for k in c["keys"]})
        fail(f"Your code changed dynamo's settings ({', '.join(keys)}) while dynamo compiled or ran your "
             f"compute_loss (on call {during[0]['call']}). The grader compiles with dynamo's defaults: a setting "
             f"that hides recompiles or raises the limit does not stop them.{note}")
    if len(graphs) > MOST_GRAPHS:
        again = sorted({g["call"] for g in graphs[1:]})
        because, line = why_recompiled(observed)
        fail(f"Dynamo compiled {len(graphs)} graphs for compute_loss over {calls} steps of different lengths and "
             f"smoothings (it compiled on call{'s' if len(again) > 1 else ''} {', '.join(map(str, again[:12]))}): "
             f"{because or 'each call needed a graph of its own'}. A function that holds no size or Python number "
             f"as a constant compiles twice: for the first shape, then once with the length symbolic.{note}",
             line=line)


@check("runs-compiled")
def test_every_call_runs_one_compiled_graph(observed):
    observed = record(observed, "graphs", "ran", "calls", "recompile_limit", "recompiles")
    ran, graphs, limit = observed["ran"], computing(observed["graphs"]), observed["recompile_limit"]
    if not graphs:
        fail(f"Dynamo captured no graph of compute_loss in its {observed['calls']} calls: all of it ran as plain "
             "Python (a function under `torch.compiler.disable` runs that way).")
    eager = [i + 1 for i, n in enumerate(ran) if n == 0]
    if eager:
        _, line = why_recompiled(observed)
        calls = f"call{'s' if len(eager) > 1 else ''} {', '.join(map(str, eager))} of {len(ran)}"
        if len(graphs) >= limit:
            fail(f"Dynamo compiled {len(graphs)} graphs, hit its recompile limit (torch._dynamo.config."
                 f"recompile_limit = {limit}) and stopped compiling compute_loss: {calls} ran no compiled graph, in "
                 "plain eager PyTorch, as would every later new length. Remove what makes each length or smoothing "
                 "need a graph of its own (bounded-compiles lists it).", line=line)
        fail(f"{calls.capitalize()} ran no compiled graph of compute_loss's work: it ran in plain Python, outside "
             "any graph (code under `torch.compiler.disable` runs that way). Let dynamo compile it.")
    split = [i + 1 for i, n in enumerate(ran) if n > 1]
    if split:
        fail(f"Call {split[0]} ran {ran[split[0] - 1]} compiled graphs with Python between them: a graph break split "
             "compute_loss. Keep the loss one graph (the graph-breaks exercise shows how).")


@check("same-result")
def test_same_losses_and_weights_as_eager(observed, original):
    """Step by step: the loss, then the weights after the step, against the original's eager run on the same data."""
    observed = record(observed, "losses", "weights")
    losses, weights = observed["losses"], observed["weights"]
    for i, expected in enumerate(original["losses"]):
        got = losses[i] if i < len(losses) else None
        what = f"step {i + 1} (length {original['lengths'][i]}, smoothing {scenario.smoothing(i):.4g})"
        if got is None:
            fail(f"On {what} your compiled compute_loss returned something other than a one-number loss tensor "
                 "with a gradient; return the loss tensor.")
        if not math.isclose(got, expected, rel_tol=1e-5, abs_tol=1e-6):
            fail(f"On {what} your compiled compute_loss returned {got:.6g}; the original, run in eager on the same "
                 f"batch, returns {expected:.6g}. Stop the recompiles without changing the loss: the causal mask "
                 "and the label smoothing as F.cross_entropy applies them.")
        for name, w in original["weights"][i].items():
            g = weights[i].get(name) if i < len(weights) else None
            if g is None or g.shape != w.shape:
                fail(f"After {what} the parameter '{name}' was missing or had another shape.")
            diff = float((g - w).abs().max())
            if not diff <= 1e-5 * max(1.0, float(w.abs().max())):
                fail(f"On {what} your loss had the original's value, {got:.6g}, but the weights after the step are "
                     f"up to {diff:.3g} away from the original's (in '{name}'): its gradients are not the original's.")


@figure
def test_show_what_dynamo_compiled(observed, original):
    """Each call: its length, whether dynamo compiled on it (and how), whether a compiled graph ran."""
    try:
        record(observed, "graphs", "ran")
    except Exception:  # noqa: BLE001 - no picture of a record the learner's code changed (a check says so)
        return
    by_call, graphs = {}, computing(observed["graphs"])
    for g in graphs:
        by_call.setdefault(g["call"], []).append(g)
    rows, marked = [], []
    for i, n in enumerate(observed["ran"]):
        compiled = by_call.get(i + 1, [])
        how = ", ".join("symbolic sizes" if g["symbolic"] else "static" for g in compiled)
        if n == 0 or len(compiled) and len(graphs) > MOST_GRAPHS:
            marked.append(len(rows))
        rows.append([i + 1, original["lengths"][i] if i < len(original["lengths"]) else "",
                     f"{scenario.smoothing(i):.4g}", f"yes ({how})" if compiled else "no",
                     "eager" if n == 0 else f"{n} graph{'s' if n > 1 else ''}"])
    show(figure=table_figure(
        "compiles", "What dynamo did on each call of your compute_loss",
        ["call", "length", "smoothing", "compiled on this call", "ran"], rows,
        f"{len(graphs)} graph(s) compiled over {len(rows)} calls. A fix compiles on calls 1 and 2 only "
        "(the second one with symbolic sizes) and runs one compiled graph on every call.",
        f"Table of {len(rows)} calls: the batch's length, the smoothing, whether dynamo compiled a graph on that "
        "call, and whether a compiled graph ran or the call ran in eager (marked: a recompile or an eager call).",
        marked_rows=marked))

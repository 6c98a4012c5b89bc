"""Checks for profiling/graph-breaks, run in the grading process."""
import math

import pytest
import torch

import reference
import scenario
from grader.checks.grading.judging import check, explained_by, fail, figure, show, table_figure

# What each kind of break means, in the learner's words (dynamo's gb_type and reason, matched in order).
MEANINGS = (
    ("Tensor.item()", "`.item()` turns a tensor into a Python number, which dynamo cannot keep in a graph"),
    ("BUILD_STRING", "formatting a Python number into an f-string is string work dynamo does not trace"),
    ("logging.Logger", "a logging call is a Python side effect dynamo cannot put in a graph"),
    ("`print`", "`print` is a Python side effect dynamo cannot put in a graph"),
    ("Data-dependent branching", "an `if` on a tensor needs its value in Python, and which way it goes depends "
                                 "on the data"),
    ("disable()", "it calls a function under `torch.compiler.disable`, which dynamo runs in plain Python, outside any graph"),
    ("setattr() on unsupported type", "dynamo cannot record setting an attribute on that object (a function, "
                                      "a module of Python code)"),
    ("graph_break()", "`torch._dynamo.graph_break()` breaks the graph on purpose"),
)


def count(value) -> bool:
    """A count or a line number as the probe writes it: an int (not a bool), 0 to a million."""
    return type(value) is int and 0 <= value <= 10**6


# The form of what probe.py returns, value by value (a type, a predicate, None, a tuple of alternatives,
# [item form] for a list, {key: form} for a dict, {key type: value form} for a mapping). The record is made in
# the learner's process, where the learner's code can reach it: anything else is refused before a check reads
# it, so that nothing of another type reaches a message or a marked line.
RECORD = {
    "losses": [(float, None)], "weights": [{str: torch.Tensor}], "calls": count, "spy_replaced": bool,
    "breaks": [{"seq": count, "call": count, "kind": str, "reason": str, "line": (count, None), "lines": [count]}],
    "graphs": [{"seq": count, "call": count, "ops": [str], "op_count": count, "foreign": [str]}],
    "recompiles": [{"guard": str, "line": (count, None)}],
    "config_changed": [str], "config_changed_while_compiling": [{"call": count, "keys": [str]}],
    "dynamo_error": ({"call": count, "line": (count, None), "message": str}, None),
    "trace_time": [{"call": count, "line": (count, None)}],
}


def conforms(value, form) -> bool:
    """Whether `value` has the form `form` (RECORD's notation); bool is not an int here."""
    if callable(form) and not isinstance(form, type):
        return form(value)
    if isinstance(form, tuple):
        return any(conforms(value, f) for f in form)
    if form is None:
        return value is None
    if isinstance(form, list):
        return type(value) is list and all(conforms(v, form[0]) for v in value)
    if isinstance(form, dict):
        if type(value) is not dict:
            return False
        if len(form) == 1 and isinstance(next(iter(form)), type):  # {key type: value form}
            (key, item), = form.items()
            return all(type(k) is key and conforms(v, item) for k, v in value.items())
        return all(k in value and conforms(value[k], f) for k, f in form.items())
    if form is float:
        return type(value) is float
    return type(value) is form if form in (int, bool, str) else isinstance(value, form)


def malformed(observed, keys) -> list[str]:
    """The fields among `keys` of the probe's record that are missing or not of RECORD's form."""
    return [key for key in keys if key not in observed or not conforms(observed[key], RECORD[key])]


def streamed(observed) -> dict | None:
    """The probe's record with its graphs and breaks as they were streamed while dynamo made them (the grading
    side's copy of the marks, probe.py's `_stream`), not as the learner's process kept them until the end: code
    that ran in Python after a break could rewrite those lists. None when the run did not end with DONE_MARK:
    the path the marks take was changed, so what arrived cannot be the whole record."""
    marks = [e for e in observed.get("events") or [] if isinstance(e, dict) and e.get("event") == "mark"]
    if not any(m.get("label") == scenario.DONE_MARK for m in marks):
        return None
    return {**observed, **{key: [m.get("record") for m in marks if m.get("label") == label]
                           for key, label in (("breaks", scenario.BREAK_MARK), ("graphs", scenario.GRAPH_MARK),
                                              ("trace_time", scenario.TRACE_TIME_MARK))}}


def record(observed, *keys: str) -> dict:
    """The probe's record (`streamed`), its fields `keys` checked, or a failure saying they were not what the
    probe writes."""
    if {"breaks", "graphs"} & set(keys):
        observed = streamed(observed)
        if observed is None:
            fail("The grader's record of what dynamo did (each graph and graph break, sent to the grader as dynamo "
                 "made it) did not arrive whole: your code changed how your process sends it, so it cannot be "
                 "judged.")
    bad = malformed(observed, keys)
    if bad:
        fail(f"The grader's record of your run ({', '.join(bad)}) is not what the grader writes in your process: "
             "your code changed it, so it cannot be judged.")
    return observed


def meaning(brk: dict) -> str:
    text = f"{brk['kind']} {brk['reason']}"
    for key, words in MEANINGS:
        if key in text:
            return words
    return f"dynamo: \"{brk['kind']}\""


def distinct_breaks(observed) -> list[dict]:
    """One per line and kind (a recompiled function logs its breaks again), in the order dynamo met them."""
    seen, kept = set(), []
    for brk in sorted(observed["breaks"], key=lambda b: b["seq"]):
        key = (brk["line"], brk["kind"])
        if key not in seen:
            seen.add(key)
            kept.append(brk)
    return kept


def _where(brk: dict) -> str:
    return f"line {brk['line']}" if brk.get("line") else "outside your file"


@pytest.fixture(scope="module")
def original(run):
    """The original compute_loss's run on the same data, in the grading process."""
    return reference.reference(run["seed"], run["device"])


@check("no-graph-breaks")
def test_dynamo_compiles_without_a_graph_break(observed):
    observed = record(observed, "breaks", "config_changed", "spy_replaced", "config_changed_while_compiling",
                      "dynamo_error", "trace_time")
    found = distinct_breaks(observed)
    changed = observed["config_changed"]
    note = (f" (Your code changed torch._dynamo.config: {', '.join(changed)}; the grader undid that and compiled "
            "with dynamo's defaults.)" if changed else "")
    if observed["spy_replaced"]:
        note += " (Your code replaced dynamo's graph-break log; the grader put it back before compiling.)"
    during = observed["config_changed_while_compiling"]
    if during:
        calls = ", ".join(str(c["call"]) for c in during)
        keys = sorted({k for c in during for k in c["keys"]})
        fail(f"Your code changed torch._dynamo.config ({', '.join(keys)}) while dynamo compiled or ran your "
             f"compute_loss (seen on call{'s' if len(during) > 1 else ''} {calls}). The grader compiles with "
             "dynamo's defaults: a setting that hides a break does not remove it, so no absence of breaks can "
             f"be read from this run.{note}")
    if observed["trace_time"]:  # after the settings: a setting it changed is the more precise message
        first = observed["trace_time"][0]
        at = f" on line {first['line']}" if first.get("line") else ""
        fail(f"Your compute_loss ran code of its own while dynamo traced it (torch._dynamo.comptime{at}): such code "
             "can change what dynamo records of your function, its graph breaks included, so no absence of breaks "
             "can be read from this run. Remove it.", first.get("line"))
    # A break with none of the learner's lines on its stack is in a frame dynamo compiled on its own, library
    # code that ran in Python after an earlier break (logging's internals after a logger call): said, not listed.
    crash = observed["dynamo_error"]
    if crash:
        at = f" on line {crash['line']}" if crash.get("line") else ""
        note += (f" Dynamo itself then failed{at} on call {crash['call']} ({crash['message']}), so the grader's "
                 "training stopped there.")
    yours = [b for b in found if b.get("line")]
    others = len(found) - len(yours)
    if yours:
        listing = "; ".join(f"line {b['line']}: {meaning(b)}" for b in yours)
        times = "once" if len(yours) == 1 else f"{len(yours)} times"
        more = (f" (and {others} more time{'s' if others > 1 else ''} in library code run after a break)"
                if others else "")
        fail(f"Dynamo broke compute_loss's graph {times} while compiling it ({listing}){more}. At a break dynamo "
             "stops tracing, runs that line in plain Python and starts a new trace after it: the function is split "
             f"into separate graphs with Python in between.{note}", line=yours[0]["line"])
    if found:
        fail(f"Dynamo broke a graph {len(found)} time(s) in code compute_loss ran, outside your file "
             f"({'; '.join(meaning(b) for b in found)}).{note}")


@check("one-graph")
def test_one_graph_compiled_once(observed):
    observed = record(observed, "graphs", "calls", "breaks", "dynamo_error", "config_changed_while_compiling",
                      "recompiles")
    graphs, calls = observed["graphs"], observed["calls"]
    breaks = distinct_breaks(observed)
    # Reported skipped below: no-graph-breaks failed and says why.
    if observed["config_changed_while_compiling"]:
        fail(f"Dynamo captured {len(graphs)} graph(s) of compute_loss in its {calls} calls under settings your code "
             "changed while it compiled: what the graphs show is not what dynamo's defaults make of your code.")
    if breaks or observed["dynamo_error"]:
        fail(f"Dynamo captured {len(graphs)} graph(s) of compute_loss in its {calls} calls, and what lay between "
             f"its {len(breaks)} graph break(s) ran in plain Python: the loss was not one graph.")
    if not graphs:
        fail(f"Dynamo captured no graph of compute_loss in its {calls} calls: nothing of it was compiled, so it "
             "ran as plain Python (a function under `torch.compiler.disable` runs that way).")
    foreign = sorted({name for g in graphs for name in g["foreign"]})
    if foreign:
        fail(f"The captured graph calls {', '.join(foreign)} as one opaque operation: dynamo put the call in the "
             "graph without tracing what it does (torch._dynamo.allow_in_graph). Let dynamo trace it.")
    if len(graphs) > 1:
        new = sorted({g["call"] for g in graphs[1:]})
        guards = observed["recompiles"]
        because = ""
        if guards:
            at = f" (line {guards[0]['line']})" if guards[0].get("line") else ""
            because = (f" because a guard dynamo put on the first graph failed: `{guards[0]['guard']}`{at}: "
                       "something the function reads from Python changed between calls, so the graph compiled "
                       "for one value could not be reused")
        fail(f"Dynamo compiled {len(graphs)} graphs for compute_loss in its {calls} calls, with no graph break: "
             f"it compiled again on call{'s' if len(new) > 1 else ''} {', '.join(map(str, new))}{because}. "
             "Compute from tensors only, so one graph serves every step.",
             line=guards[0].get("line") if guards else None)


@check("same-result")
def test_same_losses_and_weights_as_the_original(observed, original):
    """Step by step: the loss, then the weights after the step, against the original's run on the same data."""
    observed = record(observed, "losses", "weights", "dynamo_error")
    losses, weights = observed["losses"], observed["weights"]
    for i, expected in enumerate(original["losses"]):
        got = losses[i] if i < len(losses) else None
        z, over = original["z_losses"][i], original["rows_over"][i]
        rows = f"{over} of its {scenario.BATCH} rows' z-losses are over Z_MAX on their own"
        side = (f"its z-loss, the batch mean, {z:.3g} is over Z_MAX = {scenario.Z_MAX:g}, so the original adds "
                f"{scenario.Z_WEIGHT:g} x z-loss; {rows}" if z > scenario.Z_MAX else
                f"its z-loss, the batch mean, {z:.3g} is under Z_MAX = {scenario.Z_MAX:g}, so the original adds "
                f"nothing; {rows}")
        crash = observed["dynamo_error"]
        if got is None and crash and crash["call"] == i + 1:
            at = f" on line {crash['line']}" if crash.get("line") else ""
            explained_by("no-graph-breaks", f"On step {i + 1} dynamo itself failed{at} while running your compiled "
                         f"compute_loss ({crash['message']}), so the step did not run.", crash.get("line"))
        if got is None:
            fail(f"On step {i + 1} your compiled compute_loss returned something other than a one-number loss "
                 "tensor with a gradient; return the loss tensor.")
        start = ("from the same starting weights" if i == 0 else
                 f"after {i} earlier step{'s whose losses' if i > 1 else ' whose loss'} and weights matched the "
                 "original's")
        if not math.isclose(got, expected, rel_tol=1e-5, abs_tol=1e-6):
            fail(f"On step {i + 1} ({side}), your compiled compute_loss returned {got:.6g}; the original returns "
                 f"{expected:.6g} on the same batch, {start}. Remove the breaks without changing the loss.")
        for name, w in original["weights"][i].items():
            g = weights[i].get(name) if i < len(weights) else None
            if g is None or g.shape != w.shape:
                fail(f"After step {i + 1} the parameter '{name}' was missing or had another shape.")
            diff = float((g - w).abs().max())
            if not diff <= 1e-5 * max(1.0, float(w.abs().max())):
                fail(f"On step {i + 1} ({side}) your loss had the original's value, {got:.6g}, but the weights "
                     f"after the step are up to {diff:.3g} away from the original's (in '{name}'): its gradients "
                     "are not the original's. Every term must reach the weights as it does in the original.")


# -- what the verdict shows (grader/core/display.py) ------------------------------------------------------------

@figure
def test_show_what_dynamo_did(observed):
    """Every graph dynamo captured and every break, in the order dynamo met them."""
    observed = streamed(observed)
    if observed is None or malformed(observed, ("graphs", "breaks", "calls")):
        return  # no picture of a record the learner's code changed (no-graph-breaks says so)
    rows, marked, number = [], [], 0
    items = sorted([("graph", g) for g in observed["graphs"]] + [("break", b) for b in observed["breaks"]],
                   key=lambda item: item[1]["seq"])
    for kind, item in items:
        if kind == "graph":
            ops = ", ".join(item["ops"][:6]) + (", ..." if item["op_count"] > 6 else "")
            number += 1
            rows.append([f"graph {number}", item["call"], "",
                         f"{item['op_count']} operators: {ops}"])
        else:
            marked.append(len(rows))
            rows.append(["graph break", item["call"], item.get("line") or "", meaning(item)])
    graphs = len(observed["graphs"])
    show(figure=table_figure(
        "dynamo", "What dynamo did with your compute_loss", ["what", "call", "your line", "detail"], rows,
        f"{graphs} graph{'s' if graphs != 1 else ''} and {len(distinct_breaks(observed))} graph break(s) over "
        f"{observed['calls']} calls. A correct fix shows one graph, captured on call 1 and reused for every "
        "other, and no break.",
        f"Table of {len(rows)} rows, in the order dynamo met them: each captured graph with the call that compiled "
        "it and its operators, and each graph break (marked) with your line and its reason.",
        marked_rows=marked))

"""Checks for gradient-accumulation/fsdp2-accumulate, run in the grading process.

Both ranks of the gloo group ran the learner's train (probe.py); each reported its layout, what
make_optimizer was given, the dtypes its layers computed in and reduce-scattered in, and its own shards
after every optimizer step. Here the two ranks' shards are put back together and compared, window by
window, with a one-process run computed in this process (reference.py)."""
import pytest
import torch

import scenario
from grader.checks.grading.judging import bar_figure, check, fail, figure, show
from reference import reference as correct_run

# FSDP2 and the reference compute the same bfloat16 products and float32 sums, in another order: they differ
# by 2e-8 or less (measured); a float32 forward moves a weight by 1e-4, a bfloat16 reduce-scatter by 5e-6 or
# more, a wrong window by 1e-3 or more.
WEIGHT_TOLERANCE = 1e-6
RANK_NAMES = ("rank 0 (the copy of your process)", "rank 1 (your process)")


@pytest.fixture
def reference(run):
    return correct_run(run["seed"])


def _ranks(observed):
    return observed["ranks"]


def _window_text(j: int) -> str:
    window = scenario.windows()[j]
    return f"window {j + 1} (micro-batch{'es' if len(window) > 1 else ''} {'-'.join(str(i + 1) for i in window)})"


@check("runs")
def test_both_processes_complete(observed):
    for who, report in zip(RANK_NAMES, _ranks(observed)):
        if report.get("failed"):
            fail(f"{who[0].upper()}{who[1:]} could not run your function: {report['failed']}", hint="")
        error = report.get("error")
        if error:
            waited = (" A collective waited for the other process and never got it: both processes must make the "
                      "same fully_shard calls and the same forwards and backwards, in the same order, and clip alike: "
                      "clip_grad_norm_ over DTensor gradients is a collective too (it sums the shards' norms over "
                      "the processes), so a clip on one process only waits forever for the other."
                      if "gloo" in error["message"] or "Timed out" in error["message"] else
                      " The layers' weights and their inputs are in different dtypes: pass the same MixedPrecisionPolicy "
                      "to every fully_shard call, the layers' and the root's." if "dtype" in error["message"] else "")
            fail(f"train failed on {who}. {error['message']}{waited}", error["line"])


@check("shards-each-layer")
def test_each_layer_is_a_unit(observed):
    for who, report in zip(RANK_NAMES, _ranks(observed)):
        units, placements = report["layout"]["units"], report["layout"]["placements"]
        plain = [name for name, p in placements.items() if p is None]
        if plain:
            fail(f"On {who}, after train the parameter{'s' if len(plain) > 1 else ''} {', '.join(plain)} "
                 f"{'are' if len(plain) > 1 else 'is'} a plain tensor, not a DTensor: fully_shard never took "
                 "that layer. fully_shard replaces each parameter of the modules it is called on with a DTensor "
                 "shard over the mesh.")
        wrong = {name: p for name, p in placements.items() if list(p) != [["S(0)"], scenario.WORLD]}
        if wrong:
            name, (how, size) = next(iter(wrong.items()))
            fail(f"On {who}, '{name}' is placed as {how} on a mesh of {size}: FSDP2 shards each parameter's rows "
                 f"over the {scenario.WORLD} ranks (Shard(dim=0), written S(0)). Pass the mesh you were given.")
        missing = [name for name, is_unit in units.items() if not is_unit]
        if missing:
            names = ", ".join("the whole model" if n == "model" else f"layer '{n}'" for n in missing)
            fail(f"On {who}, {names} {'are' if len(missing) > 1 else 'is'} not an FSDP unit of its own. "
                 "Calling fully_shard on each Linear makes it a unit whose weights are gathered just before it "
                 "runs and freed after, so only one layer is whole at a time; the root call on the whole model "
                 "comes last and drives them.")


@check("optimizer-after-sharding")
def test_optimizer_over_the_shards(observed):
    for who, report in zip(RANK_NAMES, _ranks(observed)):
        made = report["optimizers"]
        if not made:
            fail(f"On {who}, make_optimizer was never called: build the optimizer with it, after sharding.")
        if len(made) > 1:
            fail(f"On {who}, make_optimizer was called {len(made)} times: build one optimizer, once, after the "
                 "last fully_shard, and step it every window.")
        if not made[0]["model's"]:
            shards = "DTensor shards" if made[0]["dtensors"] else "plain tensors"
            fail(f"On {who}, make_optimizer was given {made[0]['count']} {shards} that are not the model's "
                 "parameters after train: fully_shard replaces each parameter with a new DTensor, so an optimizer "
                 "built before it holds the old tensors, which no backward fills and no forward reads. Call "
                 "make_optimizer(model.parameters()) after the last fully_shard.")


@check("mixed-precision")
def test_bfloat16_compute_float32_reduce(observed):
    for who, report in zip(RANK_NAMES, _ranks(observed)):
        computed = set(report["dtypes"])
        if computed != {"torch.bfloat16"}:
            fail(f"On {who}, the Linear layers computed in {', '.join(sorted(computed)) or 'nothing'}: with "
                 "MixedPrecisionPolicy(param_dtype=torch.bfloat16) FSDP2 gathers each layer's weights in bfloat16 "
                 "and casts the inputs, so every layer computes in bfloat16. Pass the policy to every fully_shard "
                 "call (a unit without it computes in float32).")
        reduced = {r["dtype"] for r in report["reduces"]}
        if reduced - {"torch.float32"}:
            fail(f"On {who}, gradients were reduce-scattered in {', '.join(sorted(reduced))}: without reduce_dtype "
                 "FSDP2 reduces in param_dtype, bfloat16, whose 8 bits of mantissa round the sum of both ranks' "
                 "gradients. Set reduce_dtype=torch.float32 in the MixedPrecisionPolicy.")


@check("syncs-once-per-window")
def test_reduce_scatter_at_window_ends(observed):
    last = {w[-1] for w in scenario.windows()}
    for who, report in zip(RANK_NAMES, _ranks(observed)):
        units = sum(1 for name, is_unit in report["layout"]["units"].items() if is_unit and name != "model")
        where = [r["micro_batch"] for r in report["reduces"]]
        early = sorted({i + 1 for i in where if i not in last})
        if early:
            fail(f"On {who}, the backward of micro-batch{'es' if len(early) > 1 else ''} "
                 f"{', '.join(map(str, early))} reduce-scattered the gradients, though "
                 f"{'they do' if len(early) > 1 else 'it does'} not end a window: only the window's last backward "
                 "needs the sum over both processes. Call model.set_requires_gradient_sync(False) before the "
                 "other micro-batches (their backward then only adds to this process's unsharded gradients) and "
                 "set it back to True before the window's last.")
        missing = sorted(i + 1 for i in last if where.count(i) < max(units, 1))
        if missing:
            fail(f"On {who}, the backward of micro-batch{'es' if len(missing) > 1 else ''} "
                 f"{', '.join(map(str, missing))}, which ends a window, did not reduce-scatter every layer's "
                 "gradients: with gradient sync off the sum over both processes never happens and the sharded "
                 "gradients stay empty. Call model.set_requires_gradient_sync(True) before each window's last "
                 "micro-batch.")


def _assembled(ranks, j):
    return {name: torch.cat([ranks[0]["steps"][j][name], ranks[1]["steps"][j][name]]) for name in ranks[1]["steps"][j]}


@check("matches-reference")
def test_shards_match_a_one_process_run(observed, reference):
    ranks, windows = _ranks(observed), scenario.windows()
    for who, report in zip(RANK_NAMES, ranks):
        if len(report["steps"]) != len(windows):
            fail(f"On {who}, the optimizer stepped {len(report['steps'])} times; a correct run steps once per "
                 f"window, {len(windows)} times (windows of micro-batches "
                 f"{', '.join('-'.join(str(i + 1) for i in w) for w in windows)}).")
    quiet = len(windows) - 1
    for j, want in enumerate(reference["weights"]):
        got = _assembled(ranks, j)
        diffs = {name: float((got[name] - w).abs().max()) if got[name].shape == w.shape else float("inf")
                 for name, w in want.items()}
        name = max(diffs, key=diffs.get)
        if diffs[name] <= WEIGHT_TOLERANCE:
            continue
        why = (f"That window is the short last one ({len(windows[quiet])} micro-batch) and its gradient norm "
               f"({reference['norm_before'][quiet]:.3g}) is below max_norm, so a correct step leaves it unclipped and "
               "its size counts: divide its loss by its own size, not accum_steps."
               if j == quiet else
               f"That window's gradient, averaged over both processes, has a norm of "
               f"{reference['norm_before'][j]:.3g}, so a correct step clips it to max_norm ({scenario.MAX_NORM:g}) "
               "at that norm: the losses divided by the window's size, one reduce-scatter at its end, then "
               "clip_grad_norm_ over the DTensor gradients (which computes the norm over both processes' shards: "
               "a norm of this process's shards alone scales each process differently), step and clear.")
        fail(f"After {_window_text(j)}, the two ranks' shards put together differ from a one-process run of the same "
             f"windows by up to {diffs[name]:.3g} (in '{name}'). {why}")


@figure
def test_show_the_norms_per_window(run):
    want = correct_run(run["seed"])
    bars = []
    for j in range(len(scenario.windows())):
        bars.append((f"window {j + 1}: before clipping", want["norm_before"][j], "reference"))
        bars.append((f"window {j + 1}: after clipping", want["norm_after"][j], "reference"))
    bars.append(("max_norm", scenario.MAX_NORM, "limit"))
    show(figure=bar_figure(
        "norms", "A correct run's gradient norm per window, over both processes' shards",
        "total 2-norm of the window's gradient",
        f"The full windows are clipped to max_norm ({scenario.MAX_NORM:g}); the quiet last window is under it and a "
        "correct step leaves it as it is. clip_grad_norm_ on the DTensor gradients computes this global norm on "
        "each process.",
        "Bar chart: for each window, the norm of the gradient averaged over both processes before and after "
        "clipping in a correct run, and a line at max_norm.",
        bars))

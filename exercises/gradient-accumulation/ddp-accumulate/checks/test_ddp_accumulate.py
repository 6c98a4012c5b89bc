"""Checks for gradient-accumulation/ddp-accumulate, run in the grading process."""
import pytest

import scenario
from grader.checks.judging import check, fail




def _reference_params(seed: int) -> dict:
    model, optimizer, loss_fn = scenario.build_model(seed)
    shares = [scenario.micro_batches(seed, rank) for rank in range(scenario.WORLD)]
    optimizer.zero_grad()
    for i in range(scenario.MICRO_BATCHES):
        for share in shares:
            x, y = share[i]
            (loss_fn(model(x), y) / scenario.ACCUM_STEPS / scenario.WORLD).backward()
        if scenario.ends_window(i):
            optimizer.step()
            optimizer.zero_grad()
    return scenario.params(model)


@check("runs")
def test_both_processes_complete(observed):
    for report in observed["ranks"]:
        if report.get("failed"):
            fail(f"Process {report['rank']} could not run your function: {report['failed']}", hint="")
        if report["error"]:
            fail(f"In process {report['rank']}, train failed. {report['error']['message']}",
                 report["error"]["line"])


@check("syncs-once-per-window")
def test_all_reduce_only_at_window_ends(observed):
    for report in observed["ranks"]:
        counts, rank = report["allreduces"], report["rank"]
        if report["forwards"] != scenario.MICRO_BATCHES:
            fail(f"Process {rank} ran the model's forward pass {report['forwards']} times for "
                 f"{scenario.MICRO_BATCHES} micro-batches; run it once per micro-batch, through `model`.")
        for i, count in enumerate(counts):
            if scenario.ends_window(i) and count == 0:
                fail(f"In process {rank}, the backward of micro-batch {i + 1}, the last of its window, did not "
                     "all-reduce the gradients: each process stepped on its own gradients only, and their "
                     "weights drift apart. Run the window's last micro-batch outside `model.no_sync()` "
                     "(and through `model`, not `model.module`).")
            if not scenario.ends_window(i) and count:
                fail(f"In process {rank}, micro-batch {i + 1} does not end a window, but its backward "
                     f"all-reduced the gradients ({count} bucket(s)): wasted communication, the window's last "
                     "backward sends the sum anyway. Run its forward, loss and backward inside `with "
                     "model.no_sync():` (DDP decides at forward time whether backward syncs, so wrapping "
                     "only backward() is not enough).")


@check("matches-reference")
def test_both_processes_match_a_large_batch_run(observed, run):
    want = _reference_params(run["seed"])
    tolerance = 1e-4 * max(1.0, max(float(w.abs().max()) for w in want.values()))
    for report in observed["ranks"]:
        got = report["params_after"]
        name, diff = max(((n, float((got[n] - w).abs().max())) for n, w in want.items()), key=lambda t: t[1])
        if not diff <= tolerance:
            fail(f"After training, process {report['rank']}'s weights differ from a correct large-batch run by "
                 f"up to {diff:.3g} (in '{name}'). Each window's update should use the mean gradient of all its "
                 "samples on both processes: loss / accum_steps on every micro-batch, one all-reduce at the "
                 "window's end (DDP averages over the processes itself), then step and clear.")

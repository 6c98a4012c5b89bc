"""fit-the-budget's memory budget on CUDA, modelled on a CPU (no GPU was lent to set it by measurement).

    .venv/bin/python benchmarks/fit_the_budget.py [--batch 4096] [--seeds 7 14 21]

On CUDA the check compares `torch.cuda.max_memory_allocated()` above the start of the step (the learner's
step against the original). That counter is the sum of the live blocks of the caching allocator, each
tensor's storage rounded up to 512 bytes. `torch.distributed._tools.mem_tracker.MemTracker` follows every
storage a step creates and frees through the dispatcher, so with that rounding it gives the same count
on a CPU. What it cannot see: allocations that bypass the dispatcher (cuBLAS workspaces, which the
check's warm-up step keeps out of both measurements, and kernels' internal scratch buffers, small next to
a step's activations here). Prints each expert variant's and mistake's share of the original step, for
the CUDA batch, next to the budget.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import math
from pathlib import Path
from types import ModuleType
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
EXERCISE = REPO / "exercises" / "gpu-memory" / "fit-the-budget"
CORPUS = REPO / "tests" / "corpus" / "gpu-memory" / "fit-the-budget"
# Expert variants (must pass) and mistakes (must fail the budget), as learners submit them.
EXPERT = {
    "a checkpoint per block (solution)": EXERCISE / "solution.py",
    "checkpoint_sequential, 6 segments": CORPUS / "checkpoint_sequential.py",
    "checkpoint_sequential, 2 segments": CORPUS / "checkpoint_sequential_sqrt_segments.py",
    "checkpoint_sequential, 4 segments": CORPUS / "checkpoint_sequential_four_segments.py",
}
OVER_BUDGET = {
    "every other block (mistake)": EXERCISE / "mistakes" / "every-other-block.py",
    "no checkpointing (mistake)": EXERCISE / "mistakes" / "no-checkpointing.py",
}
CUDA_BLOCK = 512  # the caching allocator's smallest block: every allocation is rounded up to it


def load(path: Path, name: str | None = None) -> ModuleType:
    """A module from its file, under a name of its own (other exercises have a `scenario` module too)."""
    spec = importlib.util.spec_from_file_location(name or f"variant_{path.stem.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def scenario() -> ModuleType:
    return load(EXERCISE / "checks" / "scenario.py", "fit_the_budget_scenario")


def modelled_cuda_peak(step: Callable, seed: int, batch: int) -> int:
    """Bytes CUDA's `max_memory_allocated` would rise by during one `step` on the scenario's batch."""
    from torch.distributed._tools import mem_tracker

    def cuda_rounding(info: mem_tracker._WeakRefInfo) -> int:
        return math.ceil(info.size * info.element_size / CUDA_BLOCK) * CUDA_BLOCK

    original_rounding = mem_tracker._WeakRefInfo._calculate_mem_consumed
    mem_tracker._WeakRefInfo._calculate_mem_consumed = cuda_rounding
    try:
        model, optimizer, loss_fn, x, y = scenario().build(seed, "cpu", batch=batch)
        tracker = mem_tracker.MemTracker()
        tracker.track_external(model, optimizer, x, y)
        with tracker:
            start = sum(device["Total"] for device in tracker.get_tracker_snapshot("current").values())
            step(model, optimizer, loss_fn, x, y)
            peak = sum(device["Total"] for device in tracker.get_tracker_snapshot("peak").values())
    finally:
        mem_tracker._WeakRefInfo._calculate_mem_consumed = original_rounding
    return peak - start


@functools.cache
def _original_peak(seed: int, batch: int) -> int:
    return modelled_cuda_peak(scenario().original_train_step, seed, batch)


def modelled_share(path: Path, seed: int, batch: int) -> float:
    return modelled_cuda_peak(load(path).train_step, seed, batch) / _original_peak(seed, batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=None, help="default: the check's CUDA batch")
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 14, 21])
    args = parser.parse_args()
    module = scenario()
    batch = args.batch or module.BATCH["cuda"]
    print(f"CUDA allocator model, batch {batch}; budget {module.BUDGET:.0%} of the original step")
    print(f"| {'variant':38} | {'expected':8} | " + " | ".join(f"seed {s:>3}" for s in args.seeds) + " |")
    for expected, variants in (("pass", EXPERT), ("over", OVER_BUDGET)):
        for name, path in variants.items():
            shares = [modelled_share(path, seed, batch) for seed in args.seeds]
            print(f"| {name:38} | {expected:8} | " + " | ".join(f"{s:8.1%}" for s in shares) + " |")


if __name__ == "__main__":
    main()

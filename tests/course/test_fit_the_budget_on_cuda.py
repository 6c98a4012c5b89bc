"""fit-the-budget's budget on CUDA, without a GPU: the check compares `torch.cuda.max_memory_allocated`,
which benchmarks/fit_the_budget.py models on a CPU (every storage the step holds, rounded up to the
caching allocator's 512-byte blocks). The same budget must pass the expert variants there too, and fail
the mistake the CPU meter fails, each with a margin."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import fit_the_budget as model  # noqa: E402

MARGIN = 0.03  # the modelled shares are deterministic; this keeps the bar off a variant's edge


@pytest.fixture(scope="module")
def budget() -> float:
    return model.scenario().BUDGET


@pytest.mark.parametrize("name", sorted(model.EXPERT))
def test_expert_variants_fit_the_cuda_budget(name: str, budget: float) -> None:
    share = model.modelled_share(model.EXPERT[name], seed=7, batch=model.scenario().BATCH["cuda"])
    assert share <= budget - MARGIN, f"{name}: {share:.1%} of the original step, budget {budget:.0%}"


@pytest.mark.parametrize("name", sorted(model.OVER_BUDGET))
def test_mistakes_miss_the_cuda_budget(name: str, budget: float) -> None:
    share = model.modelled_share(model.OVER_BUDGET[name], seed=7, batch=model.scenario().BATCH["cuda"])
    assert share >= budget + MARGIN, f"{name}: {share:.1%} of the original step, budget {budget:.0%}"


def test_the_model_counts_what_a_step_holds() -> None:
    """The model itself: a step that keeps a 64 MB tensor alive during the step rises by at least that."""
    import torch

    def hoarding_step(model_, optimizer, loss_fn, x, y):  # noqa: ANN001, ANN202
        kept = torch.empty(16 * 2**20)  # 64 MB of float32, alive until the step returns
        model.scenario().original_train_step(model_, optimizer, loss_fn, x, y)
        return kept

    plain = model.modelled_cuda_peak(model.scenario().original_train_step, seed=7, batch=256)
    hoarding = model.modelled_cuda_peak(hoarding_step, seed=7, batch=256)
    assert hoarding - plain >= 64 * 2**20

"""The fsdp2-accumulate task: two ranks of one gloo group on the CPU train one small model with FSDP2,
each on micro-batches of its own; windows of ACCUM_STEPS micro-batches, the last one shorter, each
window's gradient clipped at its global norm.

Loaded in both learner ranks (probe.py) and in the grading process (the checks, reference.py). The run's
seed gives both ranks the same initial model; each rank's micro-batches come from the seed and the rank.
What a correct run ends with is computed in the grading process only (reference.py), never here.

Why the windows are shaped so: the two full windows are loud (inputs of scale LOUD: their global gradient
norm is several times MAX_NORM, so they are clipped) and the last, one-micro-batch window is quiet (inputs
of scale QUIET: under MAX_NORM, left as it is). Clipping to a fixed norm erases how a gradient was scaled,
so a loss divided by the wrong window size shows only on the quiet window. The model has no biases, so a
window's gradient scales with its inputs (a ReLU network without biases is positively homogeneous).
Every dimension is even: each weight's rows split evenly over the two ranks (Shard(0)).
"""
from datetime import timedelta

import torch
from torch import nn
from torch.nn import functional

from grader.checks import seeded
from grader.checks.learner.scenarios import params

__all__ = ["params"]

WORLD = 2
MICRO_BATCHES, ACCUM_STEPS, MICRO_BATCH_SIZE = 5, 2, 8  # windows [0, 1], [2, 3], [4]
LOUD, QUIET = 2.0, 0.2
MAX_NORM = 0.1
LR, MOMENTUM = 0.1, 0.9
TIMEOUT_S = 10  # a collective one rank never joins fails after this, instead of hanging the run
LAYERS = ("0", "2")  # the Linear layers' names in the Sequential


def build_model(seed: int) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16, bias=False), nn.ReLU(), nn.Linear(16, 4, bias=False))


def make_optimizer(parameters) -> torch.optim.Optimizer:
    """What `make_optimizer` builds: SGD with momentum over the parameters it is given."""
    return torch.optim.SGD(list(parameters), lr=LR, momentum=MOMENTUM)


def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy computed in float32 whatever dtype the logits come in (bfloat16 under the policy)."""
    return functional.cross_entropy(logits.float(), target)


def windows() -> list[list[int]]:
    return [list(range(start, min(start + ACCUM_STEPS, MICRO_BATCHES)))
            for start in range(0, MICRO_BATCHES, ACCUM_STEPS)]


def micro_batches(seed: int, rank: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One rank's micro-batches: loud in the full windows, quiet in the last."""
    data, quiet = seeded(seed * WORLD + rank + 1), set(windows()[-1])
    return [(torch.randn(MICRO_BATCH_SIZE, 8, generator=data) * (QUIET if i in quiet else LOUD),
             torch.randint(0, 4, (MICRO_BATCH_SIZE,), generator=data)) for i in range(MICRO_BATCHES)]


def join(store: str, rank: int) -> None:
    """Join the two-rank gloo group through a file:// store, over the loopback (the sandbox's only interface)."""
    import os

    import torch.distributed as dist

    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD,
                            timeout=timedelta(seconds=TIMEOUT_S))

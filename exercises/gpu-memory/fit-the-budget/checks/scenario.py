"""The fit-the-budget task: a deep MLP whose training step is dominated by stored activations.

Built identically in the learner's processes (probe) and the grader's (checks), on data the grading side
draws (referee.py). The batch is large enough that the activations dominate what a process allocates
anyway: on a CPU the peak memory of the whole process is what the grading side reads.
"""
import torch
from torch import nn

from grader.checks.learner.scenarios import plain_step

WIDTH, DEPTH, CLASSES = 128, 6, 10
# The one batch of every run, the checked and measured ones alike (referee.py).
BATCH = {"cpu": 16384, "cuda": 4096}
LR = 0.05
# Allowed fraction of the original step's memory, the same on both devices (docs/course.md). On CPU:
# the peak of a process that runs only the step on BATCH, above building the model and batch,
# read by the grading side from the kernel (referee.py); measured, 3 runs each (seeds 7, 14, 21): a
# checkpoint per block 45.1-45.3%; checkpoint_sequential(model.blocks, k, x, use_reentrant=False) with
# k = 6: 44.8-44.9%, 5: 56.7-56.8%, 3: 48.8-48.9%, 2: 60.7-60.8%, 4: 68.5% (checkpoint_sequential runs
# its last segment without checkpointing, and 6 // 4 = 1 leaves three blocks there); mistakes: every
# other block 80.5-80.7%, none 100.1-100.3%. On CUDA, torch.cuda.max_memory_allocated above the start,
# modelled on a CPU by benchmarks/fit_the_budget.py (no GPU was lent to measure it): per block and k = 6
# 43.0%, k = 2 59.2%, k = 4 67.3%; every other block 79.4%, none 100%. 75% passes every expert variant
# (6.5 points above the largest on CPU, 7.7 modelled on CUDA) and fails every other block (by 5.5 and 4.4).
BUDGET = 0.75


class DeepMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU())
            for _ in range(DEPTH))
        self.head = nn.Linear(WIDTH, CLASSES)
        # He initialisation keeps the signal alive through 12 layers; PyTorch's default init shrinks it
        # so much that the first block's gradients are ~1e-8.
        for block in self.blocks:
            for layer in block[0], block[2]:
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
                nn.init.zeros_(layer.bias)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def build(seed: int, device: str, batch: int | None = None):
    """The model, optimizer, loss and a batch (BATCH[device] rows unless `batch` says otherwise: the CUDA
    model of benchmarks/fit_the_budget.py builds it on a CPU)."""
    torch.manual_seed(seed)
    model = DeepMLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    g = torch.Generator().manual_seed(seed + 1)
    n = batch or BATCH[device]
    x = torch.randn(n, WIDTH, generator=g).to(device)
    y = torch.randint(0, CLASSES, (n,), generator=g).to(device)
    # Gradients left over from "a previous step": a step that forgets zero_grad adds to them.
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=g).to(device)
    return model, optimizer, nn.CrossEntropyLoss(), x, y


# The starter's step (a plain float32 step): correct, but it stores every activation for backward.
original_train_step = plain_step


def named_parameters(model):
    """The model's parameters by the names they had when it was built. A learner's code may wrap blocks
    (torch.distributed's checkpoint_wrapper, torchtune's apply_activation_checkpointing rename them
    `blocks.0._checkpoint_wrapped_module.0.weight`): the tensors stay the same objects, so the checks
    follow the tensors, under the built names."""
    return list(model.named_parameters())


def grads(named):
    """Each parameter's gradient (None where it has none), by its built name (`named_parameters`)."""
    return {n: None if p.grad is None else p.grad.detach().float().cpu().clone() for n, p in named}

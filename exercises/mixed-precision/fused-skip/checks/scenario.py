"""The fused-skip task, built identically in the learner's process (probe) and the grader's (checks); the
grading side's correct loop is in reference.py, which no learner process can import, read or reach.

A classifier trained for `BATCHES` batches by the learner's whole loop,
`train(model, optimizer, scheduler, scaler, loss_fn, batches)`, with a fused AdamW (`fused=True`: GradScaler
hands it the scale and the inf flag and calls its `step()` on every batch, and the kernel skips the update
itself), a linear warm-up over `WARMUP` steps (LambdaLR, so the learning rate counts the scheduler's steps for
the whole run) and a GradScaler that starts at 2**24 with a growth interval of 3. Measured on the CPU
(seeds 0-7, torch 2.13): the first 5-6 steps overflow while the scale backs off from 2**24 (the
calibration), the two outlier batches `outliers` (drawn by referee.py; inputs 1000 times larger: finite loss, overflowing scaled
float16 gradients) overflow at any scale the run reaches, and of 16 steps 8-9 are real whatever the schedule."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from grader.checks.learner.scenarios import params

BATCHES = 16
OUTLIER = 1e3  # how much larger those batches' inputs are
LR = 0.01
WEIGHT_DECAY = 0.01
WARMUP = 16  # the warm-up's length in scheduler steps: the whole run is warm-up
INIT_SCALE = 2.0 ** 24
GROWTH_INTERVAL = 3


def warmup(step: int) -> float:
    """LambdaLR's factor after `step` scheduler steps: linear from 1/WARMUP to 1."""
    return min(1.0, (step + 1) / WARMUP)


def build(seed: int, device: str, outliers: tuple[int, ...]) -> tuple[Any, ...]:
    """(model, optimizer, scheduler, scaler, loss_fn, batches) for the run's seed. The scaler is created here
    too: in the learner's process after the spies are installed, so it is the recording GradScaler."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY, fused=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup)
    scaler = torch.amp.GradScaler(device, init_scale=INIT_SCALE, growth_interval=GROWTH_INTERVAL)
    g = torch.Generator().manual_seed(seed + 1)
    batches = []
    for i in range(BATCHES):
        x = torch.randn(64, 16, generator=g)
        y = torch.randint(0, 4, (64,), generator=g)
        batches.append(((x * OUTLIER if i in outliers else x).to(device), y.to(device)))
    return model, optimizer, scheduler, scaler, nn.CrossEntropyLoss(), batches


def adam_steps(optimizer: torch.optim.Optimizer) -> int:
    """The updates the fused kernel really applied: its `state['step']` does not move on a skipped step."""
    steps = [int(state["step"]) for state in optimizer.state.values() if "step" in state]
    return max(steps, default=0)


def outcome(model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any) -> dict[str, Any]:
    """What the run ended with: the weights, the learning rate, the scheduler's step count and AdamW's own."""
    return {"params": params(model), "lr": float(optimizer.param_groups[0]["lr"]),
            "scheduler_steps": int(scheduler.last_epoch), "adam_steps": adam_steps(optimizer)}

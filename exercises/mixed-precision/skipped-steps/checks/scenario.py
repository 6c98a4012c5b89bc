"""The skipped-steps task, built identically in the learner's process (probe) and the grader's (checks); the
grading side's correct loop is in reference.py, which no learner process can import, read or reach.

A classifier trained for `BATCHES` batches by the learner's whole loop,
`train(model, optimizer, scheduler, ema, scaler, loss_fn, batches)`, with an ExponentialLR scheduler (every
real step multiplies the learning rate by `GAMMA`, so the final learning rate counts the scheduler's steps), an
EMA of the weights (torch.optim.swa_utils.AveragedModel, whose `n_averaged` counts its updates) and a
GradScaler that starts at 2**24 with a growth interval of 3. Measured on the CPU (seeds 0-7): the scaled
float16 gradients overflow in the first 4-6 steps while the scale backs off from 2**24 to 2**19-2**20 (the
calibration), and sometimes once more right after a growth; the scale grows after every 3 real steps in a
row (at least twice a run); the two batches `outliers` (drawn by referee.py) hold inputs 1000 times larger
(outliers): their loss stays finite (about 200, against 1.4) while their scaled float16 gradients overflow at
any scale the run reaches. Of 16 steps, 8-9 are real."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from grader.checks.learner.scenarios import params

BATCHES = 16
OUTLIER = 1e3  # how much larger those batches' inputs are
LR = 0.05
MOMENTUM = 0.9
GAMMA = 0.9  # ExponentialLR: the learning rate after k real steps is LR * GAMMA**k
EMA_DECAY = 0.9
INIT_SCALE = 2.0 ** 24
GROWTH_INTERVAL = 3


def build(seed: int, device: str, outliers: tuple[int, ...]) -> tuple[Any, ...]:
    """(model, optimizer, scheduler, ema, scaler, loss_fn, batches) for the run's seed. The scaler is created
    here too: in the learner's process after the spies are installed, so it is the recording GradScaler."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=GAMMA)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(EMA_DECAY))
    scaler = torch.amp.GradScaler(device, init_scale=INIT_SCALE, growth_interval=GROWTH_INTERVAL)
    g = torch.Generator().manual_seed(seed + 1)
    batches = []
    for i in range(BATCHES):
        x = torch.randn(64, 16, generator=g)
        y = torch.randint(0, 4, (64,), generator=g)
        batches.append(((x * OUTLIER if i in outliers else x).to(device), y.to(device)))
    return model, optimizer, scheduler, ema, scaler, nn.CrossEntropyLoss(), batches


def ema_params(ema: AveragedModel) -> dict[str, torch.Tensor]:
    """The EMA's weights as float32 CPU copies, by the model's parameter names."""
    return params(ema.module)


def outcome(model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, ema: AveragedModel) -> dict[str, Any]:
    """What the run ended with: the weights, the EMA's weights and update count, the learning rate and the
    scheduler's step count."""
    return {"params": params(model), "ema_params": ema_params(ema), "ema_updates": int(ema.n_averaged),
            "lr": float(optimizer.param_groups[0]["lr"]), "scheduler_steps": int(scheduler.last_epoch)}

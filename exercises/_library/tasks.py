"""The tasks several exercises of the mixed-precision lesson share: the same model and data from the same seed,
on both sides (checks/scenario.py: the probe in the learner's process, the checks in the grading process).
Nothing here computes a right answer: the correct runs on these tasks are courselib.reference's.

    AmpStepTask     mixed-precision/amp-step and amp-clip-step: a classifier called once per batch, a
                    call whose scaled fp16 gradients overflow, one whose fp16 gradients underflow unless scaled
    UnderflowTask   mixed-precision/fix-underflow and bf16-train: a regression whose fp16 gradients
                    underflow
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from grader.checks.learner.scenarios import Batch, LossFn, scaled_loss

__all__ = ["AmpStepTask", "UnderflowTask"]


@dataclass(frozen=True)
class AmpStepTask:
    """One AMP training step, `train_step(model, optimizer, scaler, loss_fn, x, y[, max_norm])`, called once
    per batch on one model, optimizer and GradScaler:

    * `calls` ordinary calls, then one whose loss is `overflow_loss_scale` (1e8) times the usual: the loss
      stays finite, as in real fp16 training, but its scaled float16 gradients overflow at any scale (a
      correct step is skipped and the scale backs off; code that skips a batch on a non-finite loss, as
      fairseq does, has no reason to);
    * then one call (index `underflow_call`) that starts the optimizer afresh and uses a loss a millionth
      of the usual size (`underflow_loss_scale`), with the learning rate raised to match: its float16
      gradients (~4e-9 at the logits) underflow to zero unless the loss is scaled first, so a raw backward
      leaves the weights where they were while a correct step moves them by a normal step's amount.

    `build` also returns gradients "left over from a previous step", which the probe plants: a step that
    forgets zero_grad adds to them. `max_norm`: a clipping threshold passed as the last argument, and used
    by the correct step after unscale_ (amp-clip-step; courselib.reference); None, no clipping (amp-step)."""

    calls: int = 3
    lr: float = 0.05
    momentum: float = 0.9
    underflow_loss_scale: float = 1e-6
    overflow_loss_scale: float = 1e8
    max_norm: float | None = None

    @property
    def underflow_call(self) -> int:
        """The index of the call whose float16 gradients underflow unless the loss is scaled."""
        return self.calls + 1

    def build(self, seed: int, device: str) -> tuple[nn.Module, torch.optim.Optimizer, nn.Module,
                                                     list[Batch], list[torch.Tensor]]:
        """(model, optimizer, loss_fn, batches, stale): `calls` batches and the overflowing call's, and the
        stale gradients, one per parameter."""
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=self.lr, momentum=self.momentum)
        g = torch.Generator().manual_seed(seed + 1)
        # `calls` ordinary batches, then the overflowing call's: an ordinary batch too, whose loss function makes
        # its gradients overflow (calls_of).
        batches = [(torch.randn(64, 16, generator=g).to(device), torch.randint(0, 4, (64,), generator=g).to(device))
                   for _ in range(self.calls + 1)]
        stale = [torch.randn(p.shape, generator=g).to(device) for p in model.parameters()]
        return model, optimizer, nn.CrossEntropyLoss(), batches, stale

    def tiny(self, loss_fn: LossFn) -> LossFn:
        """The underflowing call's loss."""
        return scaled_loss(loss_fn, self.underflow_loss_scale)

    def huge(self, loss_fn: LossFn) -> LossFn:
        """The overflowing call's loss."""
        return scaled_loss(loss_fn, self.overflow_loss_scale)

    def calls_of(self, batches: list[Batch], loss_fn: LossFn,
                 watch: Callable[[LossFn], LossFn] = lambda f: f) -> list[tuple[Any, Any, LossFn]]:
        """Every call's (x, y, loss function): the ordinary batches with `watch(loss_fn)`, the overflowing
        call's batch with a loss `overflow_loss_scale` times larger, then the first batch again with a loss
        `underflow_loss_scale` times smaller (the underflowing call). `watch` wraps each loss function the
        learner is handed (the probe's watch_loss)."""
        ordinary = watch(loss_fn)
        return ([(x, y, ordinary) for x, y in batches[:self.calls]]
                + [(*batches[self.calls], watch(self.huge(loss_fn))), (*batches[0], watch(self.tiny(loss_fn)))])

    def start_underflow_call(self, optimizer: torch.optim.Optimizer) -> None:
        """Fresh momentum (the update is then the gradient alone) and a learning rate to match the loss."""
        optimizer.state.clear()
        for group in optimizer.param_groups:
            group["lr"] = self.lr / self.underflow_loss_scale


@dataclass(frozen=True)
class UnderflowTask:
    """A regression task whose fp16 gradients underflow (measured: see shared notes), trained by the
    learner's `train(model, optimizer, loss_fn, x, y, steps)` for `steps` steps.

    Targets are 5e-4 * tanh(X W1) W2 and the head starts 100x smaller than usual, so the MSE gradients
    are ~1e-8..1e-6: below float16's smallest normal (6e-5) and mostly below its smallest subnormal;
    bfloat16, with float32's exponent range, keeps them."""

    steps: int = 200
    samples: int = 256
    target_scale: float = 5e-4

    def build(self, seed: int, device: str) -> tuple[nn.Module, torch.optim.Optimizer, nn.Module,
                                                     torch.Tensor, torch.Tensor]:
        """(model, optimizer, loss_fn, x, y): the data from `seed`, the model's initial weights from
        `seed + 1`."""
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(self.samples, 32, generator=g)
        w1 = torch.randn(32, 64, generator=g) / math.sqrt(32)
        w2 = torch.randn(64, 64, generator=g) / math.sqrt(64)
        y = self.target_scale * torch.tanh(x @ w1) @ w2
        torch.manual_seed(seed + 1)
        model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64))
        with torch.no_grad():
            model[4].weight.mul_(1e-2)
            model[4].bias.zero_()
        model = model.to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        return model, optimizer, nn.MSELoss(), x.to(device), y.to(device)

    @staticmethod
    def final_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
        """The fp32 loss of a trained model: computed by the checks, not taken from the learner's word."""
        with torch.no_grad():
            return float(nn.functional.mse_loss(model.float()(x.float()), y.float()))

    def final_loss_of(self, state: dict[str, torch.Tensor], seed: int) -> float:
        """The fp32 loss, on the CPU, of the weights the learner's training ended with (`state`, the
        model's state_dict as the probe returned it)."""
        model, _, _, x, y = self.build(seed, "cpu")
        model.load_state_dict(state)
        return self.final_loss(model, x, y)

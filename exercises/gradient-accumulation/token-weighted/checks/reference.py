"""The grading side's token mean and correct run for gradient-accumulation/token-weighted (grading process
only: never imported by probe.py or scenario.py, so no learner process can import, read or reach them;
grader/reference/__init__.py)."""
from __future__ import annotations

import torch
from torch import nn

import scenario
from scenario import IGNORE_INDEX


def valid_tokens(micro_batch) -> int:
    """The micro-batch's valid tokens: the labels that are not IGNORE_INDEX."""
    return int((micro_batch[1] != IGNORE_INDEX).sum())


def padded_tokens(micro_batch) -> int:
    """Every position of the micro-batch, padding included."""
    return micro_batch[1].numel()


def summed_loss(model: nn.Module, micro_batch) -> torch.Tensor:
    """The cross-entropy summed over the micro-batch's valid tokens."""
    tokens, labels = micro_batch
    logits = model(tokens)
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                       ignore_index=IGNORE_INDEX, reduction="sum")


def run(seed: int, device: str) -> list[dict[str, torch.Tensor]]:
    """A correct run here in the grading process: the initial weights, and the weights after each window."""
    model, optimizer, micro_batches = scenario.build(seed, device)
    after = [scenario.params(model)]
    for window in scenario.windows():
        optimizer.zero_grad()
        total = sum(valid_tokens(micro_batches[i]) for i in window)
        for i in window:
            (summed_loss(model, micro_batches[i]) / total).backward()
        optimizer.step()
        after.append(scenario.params(model))
    return after

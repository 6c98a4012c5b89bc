"""What each update of the learner's loop used, judged on the grading side (shared by the checks and the
figure of gradient-accumulation/token-weighted).

For every real optimizer step the spies recorded the gradients it was about to use and the weights it
saw (`optimizer.grads`). The window an update closes is the one holding the last micro-batch
backpropagated before it. At those weights the grading side computes, from its own copy of the data,
each of the window's micro-batches' gradient of the cross-entropy *summed* over its valid tokens, S_i.
The token mean over the window, what one large batch with reduction="mean" gives, is sum(S_i) / T, T the
window's valid tokens. Any loss made of the window's micro-batches gives sum(c_i S_i) for some weights
c_i (each valid token of micro-batch i weighed c_i): a least-squares fit of the learner's gradient on the
S_i recovers them, and says how the loss was normalised (a micro-batch's mean divided by accum_steps
weighs each of its tokens 1/(3 n_i)), or, when no such weights explain the gradient, that it holds
something else (the previous window's gradients, never cleared)."""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

import torch

import reference
import scenario
from grader.checks.grading.judging import of_kind

GRAD_TOLERANCE = 1e-3  # of the token mean's largest entry: float32 on both sides, the solution at most 5.9e-7 (scenario.py)
FIT_RESIDUAL = 1e-3  # the share of the learner's gradient the window's micro-batches may leave unexplained
SAME = 0.01  # two token weights within 1% are the same weight
DROPPED = 0.01  # a micro-batch whose tokens weigh under 1% of 1/T contributed nothing


@dataclass
class Update:
    number: int  # 1-based, in the order the steps ran
    event: dict[str, Any]  # the optimizer.grads event
    done: int  # how many backwards ran before it
    window: range | None  # the window it closes (None: no backward before it, or more than the micro-batches)
    got: torch.Tensor | None = None  # the learner's gradient, flattened (float64); None: a parameter had none
    want: torch.Tensor | None = None  # the window's token-mean gradient at the same weights, flattened
    weights: list[float] | None = None  # the fitted weight of each valid token, per micro-batch of the window
    residual: float = 0.0  # the share of |got| the fit leaves unexplained
    previous: float | None = None  # with the previous update's gradient in the fit: its coefficient
    error: float = 0.0  # max |got - want| over the token mean's largest entry


def _flat(grads: dict[str, torch.Tensor | None], names: list[str]) -> torch.Tensor | None:
    if any(grads.get(n) is None for n in names):
        return None
    return torch.cat([grads[n].reshape(-1).double() for n in names])


def micro_batch_gradients(seed: int, device: str, params: dict[str, torch.Tensor], window: range) -> list[torch.Tensor]:
    """S_i: the gradient of each micro-batch's summed cross-entropy at `params`, flattened, float64."""
    model, _, micro_batches = scenario.build(seed, device)
    model.load_state_dict(params)
    names = [n for n, _ in model.named_parameters()]
    out = []
    for i in window:
        model.zero_grad()
        reference.summed_loss(model, micro_batches[i]).backward()
        out.append(_flat({n: p.grad.detach().float().cpu() for n, p in model.named_parameters()}, names))
    return out


def counts(seed: int) -> tuple[list[int], list[int]]:
    """Each micro-batch's valid tokens and its positions, padding included (the same on every device)."""
    _, _, micro_batches = scenario.build(seed, "cpu")
    return [reference.valid_tokens(b) for b in micro_batches], [reference.padded_tokens(b) for b in micro_batches]


def window_of(i: int) -> range:
    return next(w for w in scenario.windows() if i in w)


def analyse(events: list[dict[str, Any]], run: dict[str, Any]) -> list[Update]:
    """Every real update the instance's step saw (one more than the windows at most: each costs backwards
    here, and the stream is the learner's to fill), with its window, its gradient against the token mean,
    and the fitted token weights."""
    valid, _ = counts(run["seed"])
    backward_indices = [e["index"] for e in of_kind(events, "backward")]
    names: list[str] | None = None
    updates: list[Update] = []
    previous_got: torch.Tensor | None = None
    for number, event in enumerate(of_kind(events, "optimizer.grads")[:len(scenario.windows()) + 1], 1):
        done = bisect.bisect_left(backward_indices, event["index"])
        window = window_of(done - 1) if 0 < done <= scenario.MICRO_BATCHES else None
        update = Update(number, event, done, window)
        updates.append(update)
        names = names or list(event["params"])
        update.got = _flat(event["grads"], names)
        if window is None or update.got is None:
            previous_got = update.got
            continue
        basis = micro_batch_gradients(run["seed"], run["device"], event["params"], window)
        total = sum(valid[i] for i in window)
        update.want = sum(basis) / total
        scale = float(update.want.abs().max())
        update.error = float((update.got - update.want).abs().max()) / scale if scale else math.inf
        update.weights, update.residual = _fit(basis, update.got)
        if update.residual > FIT_RESIDUAL and previous_got is not None:
            # Gradients left from the previous update (no zero_grad after its step) are its whole gradient.
            coefficients, residual = _fit([*basis, previous_got], update.got)
            if residual <= FIT_RESIDUAL:
                update.previous = coefficients[-1]
        previous_got = update.got
    return updates


def _fit(basis: list[torch.Tensor], got: torch.Tensor) -> tuple[list[float], float]:
    a = torch.stack(basis, dim=1)
    solution = torch.linalg.lstsq(a, got[:, None]).solution[:, 0]
    norm = float(got.norm())
    residual = float((a @ solution - got).norm()) / norm if norm else 0.0
    return [float(c) for c in solution], residual


def same(a: float, b: float) -> bool:
    return abs(a - b) <= SAME * max(abs(a), abs(b))


def one_over(weight: float) -> str:
    """A token's weight as 1/D (D to one decimal when not whole)."""
    if weight == 0:
        return "0"
    d = 1 / weight
    return f"1/{d:.0f}" if abs(d - round(d)) < 0.05 else f"1/{d:.1f}"


def span(window: range) -> str:
    return f"micro-batch {window[0] + 1}" if len(window) == 1 else f"micro-batches {window[0] + 1}-{window[-1] + 1}"


__all__ = ["Update", "analyse", "counts", "window_of", "same", "one_over", "span", "GRAD_TOLERANCE",
           "FIT_RESIDUAL", "DROPPED", "micro_batch_gradients"]

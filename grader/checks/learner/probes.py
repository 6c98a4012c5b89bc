"""Probe skeletons that several exercises share: what a `checks/probe.py` would otherwise copy. They run
in the learner's (confined) process, like the probe that calls them, and return observations, never a
verdict:

    training_probe(api, model, ...)    call a whole training loop, train(model, optimizer, loss_fn, x, y,
                                       steps), recording the AMP calls and each step's zero gradients
                                       (fix-underflow, bf16-train); install_amp_spies() first
    learner_function(api, name)        another function of the submission, its exceptions made the
                                       learner's (LearnerError), as api.call does for the entry
    submission_function(name)          that function itself, unwrapped (to swap it in and out)
    loss_number(value)                 a returned loss as a float, or None when it is not one number
    timed_rounds(run_round)            the learner's side of grader.checks.referee.timing.TimedRounds: ask for each
                                       timing round, run it, report, until the referee has decided
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from grader.checks.learner.probing import (
    RECORDER,
    LearnerError,
    ProbeAPI,
    ask,
    describe_exception,
    watch_loss,
    watch_model,
    watch_optimizer,
)
from grader.learner.entry import submission_attribute

__all__ = ["training_probe", "learner_function", "submission_function", "loss_number",
           "timed_rounds"]


def loss_number(value: Any) -> float | None:
    """`value` as a float when it is a Python number or a one-element tensor, else None."""
    if isinstance(value, (int, float)) or (isinstance(value, torch.Tensor) and value.numel() == 1):
        return float(value)
    return None


def submission_function(name: str) -> Callable[..., Any]:
    """The submission's function `name`, read from its plain module's `__dict__` (never through an attribute
    read the learner's module could answer itself); a LearnerError (one message to the learner) when it has
    none or its module is no plain module any more."""
    function = submission_attribute(name)
    if not callable(function):
        raise LearnerError("missing", f"Your code must define `{name}`: the grader calls it.")
    learner_function: Callable[..., Any] = function
    return learner_function


def learner_function(api: ProbeAPI, name: str) -> Callable[..., Any]:
    """The submission's function `name`, wrapped so that whatever it raises becomes the learner's error
    (`describe_exception`, with the line of their code), as `api.call` does for the entry function."""
    function = submission_function(name)

    def call(*args: Any) -> Any:
        try:
            return function(*args)
        except Exception as exc:  # noqa: BLE001 - anything the learner's code raises is the learner's error
            raise describe_exception(exc, api.memory_mb) from None

    return call


def training_probe(api: ProbeAPI, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                   loss_fn: Callable[..., Any], x: torch.Tensor, y: torch.Tensor, steps: int) -> dict[str, Any]:
    """Call the learner's whole training loop once, `train(model, optimizer, loss_fn, x, y, steps)`, with the
    model, optimizer (measuring each step's share of exactly-zero gradients) and loss watched. Returns the
    events, the returned losses as numbers (`returned`: None unless a list or tuple; an entry None where it
    is not one number), the returned value's type's name, the weights it ended with as float32 (`final_state`)
    and their dtypes as they ended (`final_dtypes`: 'float32', 'bfloat16', ...)."""
    watch_model(model)
    watch_optimizer(optimizer, measure_zero_grads=True)
    losses = api.call(model, optimizer, watch_loss(loss_fn), x, y, steps)
    returned = [loss_number(v) for v in losses] if isinstance(losses, (list, tuple)) else None
    state = model.state_dict()
    return {"events": RECORDER.events, "returned": returned, "returned_type": type(losses).__name__,
            "final_state": {k: v.detach().float().cpu() for k, v in state.items()},
            "final_dtypes": {k: str(v.dtype).replace("torch.", "") for k, v in state.items()}}


def timed_rounds(run_round: Callable[[int], dict[str, Any]]) -> int:
    """Run the timing rounds the referee asks for (grader.checks.referee.timing.TimedRounds, on the grading side's
    clock): ask to start round i, get its data's seed, `run_round(seed)` (build the round's task from the
    seed, run the learner's code, synchronize the device; return the report the finish question carries:
    what the run computed, for the checks to compare with the original's), ask to finish it, until the
    referee answers that it has timed enough rounds to decide. Returns the number of rounds run."""
    index, done = 0, False
    while not done:
        seed = ask({"op": "start", "index": index})["seed"]
        report = run_round(seed)
        done = ask({"op": "finish", "index": index, **report}).get("done") is True
        index += 1
    return index

"""Runs in the learner's process: profile with the original preprocess, replay the fixed step, time it."""
import sys

import torch

import scenario
from grader.harness import profiling
from grader.harness.emulation import install_cuda_emulation
from grader.harness.learner import LearnerError, describe_exception

ROUNDS = 11  # timing rounds per side; each round is one pass over the batches


def prepare():
    install_cuda_emulation()  # torch.cuda.synchronize() and .to('cuda') work on a CPU-only host
    profiling.install()


def _learner_function(module, name, api):
    function = getattr(module, name, None)
    if not callable(function):
        raise LearnerError("missing", f"Your code must define `{name}`: the grader calls it.")

    def call(*args):
        try:
            return function(*args)
        except Exception as exc:
            raise describe_exception(exc, api.memory_mb) from None

    return function, call


def probe(api):
    module = sys.modules["submission"]
    learner_preprocess, _ = _learner_function(module, "preprocess", api)
    _, train_step = _learner_function(module, "train_step", api)

    # 1. The learner's profiling, run on the original step: the slow preprocess swapped back in.
    module.preprocess = profiling.watch_calls(scenario.slow_preprocess, "preprocess")
    model, optimizer, loss_fn, batches = scenario.build(api.seed, api.device)
    named = api.call(model, optimizer, loss_fn, batches)
    module.preprocess = learner_preprocess
    profiling.LOG.recording = False

    # 2. The fixed step, replayed on a fresh copy of the same model and data.
    model, optimizer, loss_fn, batches = scenario.build(api.seed, api.device)
    losses = []
    for x, y in batches:
        loss = train_step(model, optimizer, loss_fn, x, y)
        losses.append(float(loss) if isinstance(loss, torch.Tensor) and loss.numel() == 1
                      else loss if isinstance(loss, (int, float)) else None)
    params_after = scenario.params(model)

    # 3. The grader's own timing: the original step and the learner's, alternating.
    slow = scenario.build(api.seed, api.device)
    fast = scenario.build(api.seed, api.device)

    def run_slow():
        for x, y in slow[3]:
            scenario.slow_train_step(slow[0], slow[1], slow[2], x, y)

    def run_fast():
        for x, y in fast[3]:
            train_step(fast[0], fast[1], fast[2], x, y)

    slow_s, fast_s = profiling.time_interleaved(run_slow, run_fast, rounds=ROUNDS, device=api.device)
    return {"named": named if isinstance(named, str) else None, "named_type": type(named).__name__,
            "events": profiling.LOG.events, "losses": losses, "params_after": params_after,
            "slow_s": slow_s, "fast_s": fast_s}

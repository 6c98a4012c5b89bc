"""Runs in the learner's process: profile with the original preprocess, replay the fixed step, and run
the timing rounds the grading side asks for (referee.py times them on its own clock)."""
import sys

import torch

import scenario
from grader.checks.learner import probing
from grader.checks.learner.probes import learner_function, loss_number, submission_function, timed_rounds
from grader.checks.learner.probing import install_cuda_emulation


def prepare():
    install_cuda_emulation()  # torch.cuda.synchronize() and .to('cuda') work on a CPU-only host
    probing.install_profiler_spies()


def probe(api):
    module = sys.modules["submission"]
    learner_preprocess = submission_function("preprocess")
    train_step = learner_function(api, "train_step")

    # 1. The learner's profiling, run twice, in an order the grading side draws and tells only as each run
    #    starts (referee.py): on the original step (the slow preprocess swapped back in, inside the
    #    learner's own labels), and with a fast preprocess and the time moved into the model's forward.
    named = []
    for index in range(len(scenario.SLOW_SPOTS)):
        spot = probing.ask({"op": "profiled", "index": index})["spot"]
        probing.RECORDER.profiled_run = index
        model, optimizer, loss_fn, batches = scenario.build(api.seed, api.device)
        if spot == "preprocess":
            module.preprocess = probing.swap_in(learner_preprocess, scenario.slow_preprocess, "preprocess")
        else:
            module.preprocess = probing.swap_in(learner_preprocess, scenario.fast_preprocess, "preprocess")
            probing.slow_forward(model, scenario.slow_forward_work, "forward")
        named.append(api.call(model, optimizer, loss_fn, batches))
    module.preprocess = learner_preprocess
    probing.RECORDER.recording = False

    # 2. The fixed step, replayed on data the grading side draws now.
    model, optimizer, loss_fn, batches = scenario.build(probing.ask({"op": "replay"})["seed"], api.device)
    losses = [loss_number(train_step(model, optimizer, loss_fn, x, y)) for x, y in batches]
    params_after = scenario.params(model)

    # 3. The grader's timing, on its own clock (referee.py, grader.checks.referee.timing): each round's data is chosen
    #    by the grading side when the round starts, and the losses and weights after the timed steps go back
    #    to it to be checked. The grading side says when it has timed enough rounds to decide.
    def timed_round(seed):
        model, optimizer, loss_fn, batches = scenario.build_timed(seed, api.device)
        timed = [loss_number(train_step(model, optimizer, loss_fn, x, y)) for x, y in batches]
        scenario.synchronize(api.device)
        return scenario.report(timed, model)

    timed_rounds(timed_round)
    return {"named": [n if isinstance(n, str) else None for n in named],
            "named_type": [type(n).__name__ for n in named], "losses": losses, "params_after": params_after}

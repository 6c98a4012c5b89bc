"""Runs in the learner's process: call train on the scenario and record every AMP call it makes."""
import torch

import scenario
from grader.checks.learner.probing import (
    RECORDER,
    install_accumulation_spies,
    watch_loss,
    watch_model,
    watch_optimizer,
    watch_step_gradients,
)


def prepare():
    install_accumulation_spies()


def _watched(model, optimizer):
    watch_model(model)
    watch_optimizer(optimizer)
    watch_step_gradients(optimizer, model)


def probe(api):
    model, optimizer, loss_fn, micro_batches = scenario.build(api.seed, api.device)
    _watched(model, optimizer)
    RECORDER.mark("call")
    api.call(model, optimizer, torch.amp.GradScaler(api.device), watch_loss(loss_fn), micro_batches,
             scenario.ACCUM_STEPS)
    # The whole run's outcome: the grading side compares it with a correct run of its own. Then a second
    # run whose outcome only a scaled, cleared loop gets right (scenario.build_signature_run).
    final = scenario.params(model)
    model, optimizer, loss_fn, micro_batches = scenario.build_signature_run(api.seed, api.device)
    _watched(model, optimizer)
    RECORDER.mark("call")
    _, error = api.try_call(model, optimizer, torch.amp.GradScaler(api.device), watch_loss(loss_fn),
                            micro_batches, scenario.ACCUM_STEPS)
    return {"final_params": final, "signature_final_params": scenario.params(model), "signature_error": error}

"""Runs in the learner's process: call train on the scenario and record every AMP call it makes."""
import torch

import scenario
from grader.harness import accumulation, amp


def prepare():
    accumulation.install()


def probe(api):
    model, optimizer, loss_fn, micro_batches = scenario.build(api.seed, api.device)
    amp.watch_model(model)
    amp.watch_optimizer(optimizer)
    accumulation.watch_step_gradients(optimizer, model)
    scaler = torch.amp.GradScaler(api.device)
    amp.RECORDER.mark("call")
    api.call(model, optimizer, scaler, amp.watch_loss(loss_fn), micro_batches, scenario.ACCUM_STEPS)
    # The whole run's outcome: the grading side compares it with a correct run of its own.
    final = {name: p.detach().float().cpu().clone() for name, p in model.named_parameters()}
    return {"events": amp.RECORDER.events, "final_params": final}

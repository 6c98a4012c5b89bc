"""Runs in the learner's process: call train once on the scenario and record every backward, every real
optimizer step and the gradients and weights each step saw; then read out the weights the run ended
with. The grading side compares them with its own token-mean gradients and its own correct run."""
import scenario
from grader.checks.learner.probing import (
    RECORDER,
    install_amp_spies,
    watch_model,
    watch_optimizer,
    watch_step_gradients,
)


def prepare():
    install_amp_spies()  # backward events (with whether the gradients were clear just before)


def probe(api):
    model, optimizer, micro_batches = scenario.build(api.seed, api.device)
    watch_model(model)
    watch_optimizer(optimizer)  # optimizer.step, zero_grad and, for every real step, optimizer.class_step
    watch_step_gradients(optimizer, model)  # optimizer.grads: what each step is about to use
    RECORDER.mark("call")
    api.call(model, optimizer, micro_batches, scenario.ACCUM_STEPS)
    return {"final_params": scenario.params(model)}

"""Runs in the learner's process: call the learner's function on the scenario; return what came of it."""
import scenario
from grader.checks.learner.probing import ProbeAPI


def probe(api: ProbeAPI) -> dict:
    model, optimizer, loss_fn, x, y = scenario.build(api.seed, api.device)
    # try_call: an exception becomes data ({kind, message, line}) that a check can report.
    _, error = api.try_call(model, optimizer, loss_fn, x, y)
    return {"params_after": scenario.params(model), "error": error}

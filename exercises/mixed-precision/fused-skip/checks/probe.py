"""Runs in the learner's process: call train once on the scenario and record what it does.

Besides the AMP spies' events, the probe marks each call of scheduler.step() in the event stream
(`RECORDER.mark`), so the checks see in which batch each came, and keeps the learner's line of each
(`advances`, in the marks' order). After the loop it reads out what the run ended with (scenario.outcome),
which the checks compare with their own correct run."""
import warnings

import scenario
from grader.checks.learner.probes import loss_number
from grader.checks.learner.probing import (
    RECORDER,
    SUBMISSION_FILENAME,
    ask,
    install_amp_spies,
    submission_line,
    watch_loss,
    watch_model,
    watch_optimizer,
)


def prepare():
    install_amp_spies()


def probe(api):
    # The outlier batches' positions are the grading side's secret (referee.py), asked for only now, after
    # the learner's module loaded, and kept in no name here: the learner's code sees the batches, never where.
    model, optimizer, scheduler, scaler, loss_fn, batches = scenario.build(
        api.seed, api.device, tuple(ask({"op": "outliers"})["batches"]))
    watch_model(model)
    watch_optimizer(optimizer)
    # The scheduler wrapped optimizer.step to learn whether it ran before scheduler.step(); the spy's wrapper
    # calls that one, so say so, or the scheduler warns that the step was overridden.
    optimizer.step._wrapped_by_lr_sched = True
    advances = []
    step = scheduler.step

    def marked_step(*args, **kwargs):
        line = submission_line()
        advances.append({"line": line})
        RECORDER.mark("scheduler.step")
        # What PyTorch warns about here is shown at the learner's line, as it reads without this wrapper.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = step(*args, **kwargs)
        for warning in caught:
            warnings.warn_explicit(warning.message, warning.category,
                                   SUBMISSION_FILENAME if line else warning.filename, line or warning.lineno)
        return result

    scheduler.step = marked_step
    returned = api.call(model, optimizer, scheduler, scaler, watch_loss(loss_fn), batches)
    number = loss_number(returned) if not isinstance(returned, bool) else None
    return {**scenario.outcome(model, optimizer, scheduler), "returned": number,
            "returned_type": type(returned).__name__, "advances": advances}

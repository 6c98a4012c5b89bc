"""Runs in the learner's process: call train once on the scenario and record what it does.

Besides the AMP spies' events, the probe marks each call of scheduler.step() and ema.update_parameters()
in the event stream (`RECORDER.mark`), so the checks see where each came among the scaler's calls, and
keeps the learner's line of each (`advances`, in the marks' order). After the loop it reads out what
the run ended with (scenario.outcome), which the checks compare with their own correct run."""
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
    model, optimizer, scheduler, ema, scaler, loss_fn, batches = scenario.build(
        api.seed, api.device, tuple(ask({"op": "outliers"})["batches"]))
    watch_model(model)
    watch_optimizer(optimizer)
    # The scheduler wrapped optimizer.step to learn whether it ran before scheduler.step(); the spy's wrapper
    # calls that one, so say so, or the scheduler warns that the step was overridden. Its own warning
    # (scheduler.step() before optimizer.step()) stays the learner's.
    optimizer.step._wrapped_by_lr_sched = True
    advances = []

    def marked(label, function):
        def call(*args, **kwargs):
            line = submission_line()
            advances.append({"what": label, "line": line})
            RECORDER.mark(label)
            # What PyTorch warns about here (scheduler.step() before optimizer.step()) is shown at the
            # learner's line, as it reads without this wrapper.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = function(*args, **kwargs)
            for warning in caught:
                warnings.warn_explicit(warning.message, warning.category,
                                       SUBMISSION_FILENAME if line else warning.filename, line or warning.lineno)
            return result
        return call

    scheduler.step = marked("scheduler.step", scheduler.step)
    ema.update_parameters = marked("ema.update", ema.update_parameters)
    returned = api.call(model, optimizer, scheduler, ema, scaler, watch_loss(loss_fn), batches)
    number = loss_number(returned) if not isinstance(returned, bool) else None
    return {**scenario.outcome(model, optimizer, scheduler, ema), "returned": number,
            "returned_type": type(returned).__name__, "advances": advances}

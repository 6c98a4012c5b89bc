"""The events the spies record, kind by kind, with their fields: what `observed["events"]` holds.

A probe that installs the AMP spies (`grader.checks.learner.probing.install_amp_spies`) and wraps the objects it
hands to the learner's function (`watch_model`, `watch_optimizer`, `watch_loss`) gets one event per call
the learner's code makes. Each event is a plain dict, streamed to the grading process as it happens; the
checks receive the grading side's copy as `observed["events"]`, in order. The profiler spies
(`install_profiler_spies`, `watch_calls`) record into the same stream with their own kinds.

Every AMP event has the `COMMON` fields; profiler events have `PROFILER_COMMON` instead. `EVENTS` maps
each kind to the fields it adds and what recorded it. tests/course/test_event_kinds.py runs the spies
and checks that every event they record is listed here with exactly these fields, so this table is the
spies' documentation and cannot drift from them.

The stream is written by the learner's process, so the grading side takes nothing on trust but the
order of arrival: `check_event` refuses an event of an unknown kind, with a field its kind does not
have, or with a value of the wrong type (`FIELD_TYPES`), and the grading side numbers the events itself
(`index` is the position in its copy, which every event there has, profiler events included). An
event is append-only: a later message may only add a field its kind lists in `AMENDABLE` to the most
recent event, one the spy fills in when the call returns.

This module imports nothing heavy: the web app and the docs can read it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

COMMON = {
    "event": "the kind, a key of EVENTS",
    "line": "the innermost line of the learner's file on the call stack when it was recorded (int), or None",
    "index": "its position in the learner process's log (int); compare indices to order events",
}
PROFILER_COMMON = {
    **COMMON,
    "profiling": "whether a torch.profiler.profile session was open at that moment (bool)",
    "run": "which of the probe's profiled runs it belongs to (RECORDER.profiled_run: an int, or None)",
}
AUTOCAST = {
    "autocast": "whether autocast was on for the AMP device at that moment (bool)",
    "autocast_dtype": "autocast's dtype then ('float16', 'bfloat16', ...), None when autocast was off",
}


@dataclass(frozen=True)
class EventKind:
    recorded_by: str  # the probing helper that makes these events appear
    meaning: str
    fields: dict[str, str] = field(default_factory=dict)  # added to COMMON (or PROFILER_COMMON)
    optional: dict[str, str] = field(default_factory=dict)  # present only when the helper was asked for them
    profiler: bool = False


EVENTS: dict[str, EventKind] = {
    "mark": EventKind(
        "RECORDER.mark(label, **data)", "the probe's own marker; `calls(events)` splits the log at label 'call'",
        {"label": "the probe's label (str)"}, {"...": "any keyword data the probe passed to mark()"}),
    "forward": EventKind(
        "watch_model(model)", "model(x) started (a forward pre-hook)",
        {**AUTOCAST, "weights_dtype": "the dtype of the model's first floating-point parameter then ('float32', "
                                      "'float16', ...), None without one"},
        {"output_dtype": "the output's dtype, added when the forward returned a tensor",
         "inner_autocast": "autocast's dtype when the model's first layer started, None when it was off there: "
                           "added when autocast was off at model(x), to tell a forward that enters autocast itself "
                           "(a patched forward, as accelerate's prepare makes) from one that never does"}),
    "loss": EventKind(
        "watch_loss(loss_fn)", "the loss function you handed the learner was called",
        {**AUTOCAST}, {"output_dtype": "the loss's dtype, added when it returned a tensor",
                       "value": "its value when it returned one finite number (float), else None"}),
    "backward": EventKind(
        "install_amp_spies()", "a top-level tensor.backward() or torch.autograd.backward() call",
        {"on": "what it ran on: 'scaled' (scaler.scale's output), 'raw' (the loss itself), 'twice' (scaled "
               "twice) or 'other'",
         "ratio": "the backward target's value over the last loss's (float), None when not comparable",
         **AUTOCAST,
         "grads_clear": "whether every watched parameter's gradient was None or zero just before (bool)"},
        {"value": "install_accumulation_spies(): the target's value (float or None)",
         "loss": "install_accumulation_spies(): the last loss's value when loss_fn returned it",
         "scale": "install_accumulation_spies(): the scaler's scale then (float), None without an enabled "
                  "scaler"}),
    "clip": EventKind(
        "install_amp_spies()", "torch.nn.utils.clip_grad_norm_ or clip_grad_value_ was called",
        {"function": "'clip_grad_norm_' or 'clip_grad_value_'",
         "after_unscale": "whether the learner called scaler.unscale_ since the last backward (bool)"}),
    "scaler.init": EventKind(
        "install_amp_spies()", "a GradScaler was created (the probe's own too)",
        {"enabled": "scaler.is_enabled() (bool)", "scale": "its initial scale, or None"}),
    "scaler.scale": EventKind("install_amp_spies()", "scaler.scale(...) was called"),
    "scaler.unscale_": EventKind(
        "install_amp_spies()", "scaler.unscale_(optimizer) was called",
        {"internal": "True when scaler.step made the call itself (bool)"}),
    "scaler.step": EventKind(
        "install_amp_spies()", "scaler.step(optimizer) was called",
        {"scale": "the scale at that moment (float), None for a disabled scaler"}),
    "scaler.update": EventKind(
        "install_amp_spies()", "scaler.update() returned",
        {"scale_before": "the scale before (float or None)", "scale_after": "the scale after (float or None)"}),
    "optimizer.step": EventKind(
        "watch_optimizer(optimizer)", "optimizer.step() was called on the instance",
        {"via_scaler": "True when scaler.step made the call (bool)"},
        {"zero_grad_fraction": "watch_optimizer(..., measure_zero_grads=True): the share of gradient values "
                               "exactly zero (float or None)"}),
    "optimizer.class_step": EventKind(
        "watch_optimizer(optimizer)", "the optimizer class's step ran (a step pre-hook): every real step, also "
                                      "type(optimizer).step(optimizer), which the instance attribute never sees",
        {"grad_norm": "the total 2-norm of the gradients that step used (float), None when there were none or "
                      "it was not finite"}),
    "optimizer.zero_grad": EventKind("watch_optimizer(optimizer)", "optimizer.zero_grad() was called"),
    "optimizer.grads": EventKind(
        "watch_step_gradients(optimizer, model)", "a real optimizer step is about to run",
        {"via_scaler": "True when scaler.step made the call (bool)",
         "grads": "{parameter name: its gradient as a float32 CPU tensor, or None}",
         "params": "{parameter name: its weights as a float32 CPU tensor}"}),
    "profile.enter": EventKind(
        "install_profiler_spies()", "a torch.profiler.profile session started",
        {"activities": "sorted activity names ('CPU', 'CUDA')", "schedule": "whether a schedule was given (bool)"},
        profiler=True),
    "profile.exit": EventKind("install_profiler_spies()", "a profiler session ended", profiler=True),
    "profile.key_averages": EventKind(
        "install_profiler_spies()", "prof.key_averages() was called",
        {"rows": "the learner's own regions in the table it returned, slowest first: [label, total CPU ms, calls] "
                 "(for the verdict's table; only that the call happened is judged)"}, profiler=True),
    "profile.events": EventKind("install_profiler_spies()", "prof.events() was called", profiler=True),
    "label.enter": EventKind(
        "install_profiler_spies()", "the learner's own record_function(label) region opened",
        {"label": "the region's name (str)", "depth": "how many of the learner's regions were already open (int)"},
        profiler=True),
    "call": EventKind(
        "watch_calls(function, name)", "a wrapped function returned (or raised)",
        {"name": "the name given to watch_calls", "labels": "the learner's regions open around the call (list)",
         "seconds": "its wall time in the learner's process (float)"},
        profiler=True),
}


# Fields a spy adds to the most recent event when the call it recorded returns (channel.amend): nothing else
# of an event can change after it was streamed.
AMENDABLE: dict[str, frozenset[str]] = {"forward": frozenset({"output_dtype", "inner_autocast"}),
                                        "loss": frozenset({"output_dtype", "value"})}

_NUMBER = (int, float)
_TENSORS = "tensors"  # {name: tensor}
_TENSORS_OR_NONE = "tensors or None"  # {name: tensor or None}
FIELD_TYPES: dict[str, Any] = {
    "event": str, "line": (int, None), "index": int, "label": str, "profiling": bool, "run": (int, None),
    "autocast": bool, "autocast_dtype": (str, None), "output_dtype": str, "on": str, "ratio": (*_NUMBER, None),
    "grads_clear": bool, "value": (*_NUMBER, None), "loss": (*_NUMBER, None), "scale": (*_NUMBER, None),
    "function": str, "after_unscale": bool, "enabled": bool, "internal": bool, "scale_before": (*_NUMBER, None),
    "scale_after": (*_NUMBER, None), "via_scaler": bool, "zero_grad_fraction": (*_NUMBER, None),
    "grads": _TENSORS_OR_NONE, "params": _TENSORS, "activities": list, "schedule": bool, "rows": list,
    "depth": int, "name": str, "labels": list, "seconds": _NUMBER, "grad_norm": (*_NUMBER, None),
    "weights_dtype": (str, None), "inner_autocast": (str, None),
}


class MalformedEvent(ValueError):
    """An event the grading side refuses: the learner's process sent it (a spy never does)."""


def check_event(event: Any) -> None:
    """Raise MalformedEvent unless `event` is a documented kind with its fields, each of its type. The
    `index` is the grading side's to set; a `mark` may carry any other plain data."""
    if not isinstance(event, dict) or not isinstance(event.get("event"), str) or event["event"] not in EVENTS:
        kind = event.get("event") if isinstance(event, dict) else type(event).__name__
        raise MalformedEvent(f"an event of unknown kind {str(kind)[:40]!r}")
    kind = event["event"]
    always, optional = fields_of(kind)
    missing = always - set(event) - {"index"}
    if missing:
        raise MalformedEvent(f"a '{kind}' event without {', '.join(sorted(missing))}")
    for name, value in event.items():
        if name not in always and name not in optional and kind != "mark":
            raise MalformedEvent(f"a '{kind}' event with a field '{str(name)[:40]}' it does not have")
        _check_type(kind, name, value)


def _check_type(kind: str, name: str, value: Any) -> None:
    import torch  # here: this module stays importable without torch

    wanted = FIELD_TYPES.get(name)
    if wanted is None:
        return  # a mark's own data
    if wanted in (_TENSORS, _TENSORS_OR_NONE):
        ok = isinstance(value, dict) and all(
            isinstance(k, str) and (isinstance(v, torch.Tensor) or v is None and wanted == _TENSORS_OR_NONE)
            for k, v in value.items())
    else:
        types = wanted if isinstance(wanted, tuple) else (wanted,)
        ok = (value is None and None in types) or any(
            isinstance(value, t) and not (isinstance(value, bool) and t is not bool) for t in types if t is not None)
    if not ok:
        raise MalformedEvent(f"a '{kind}' event whose '{name}' is a {type(value).__name__}")


def fields_of(kind: str) -> tuple[set[str], set[str]]:
    """(the fields every event of `kind` has, the ones it may have besides)."""
    spec = EVENTS[kind]
    common = PROFILER_COMMON if spec.profiler else COMMON
    return set(common) | set(spec.fields), set(spec.optional)


def table() -> str:
    """The kinds as a Markdown table (docs/authoring.md shows it)."""
    rows = ["| kind | recorded by | meaning | fields |", "|---|---|---|---|"]
    for kind, spec in EVENTS.items():
        fields = [f"`{name}`: {text}" for name, text in spec.fields.items()]
        fields += [f"`{name}` (optional): {text}" for name, text in spec.optional.items() if name != "..."]
        rows.append(f"| `{kind}` | `{spec.recorded_by}` | {spec.meaning} | {'; '.join(fields) or '-'} |")
    return "\n".join(rows)

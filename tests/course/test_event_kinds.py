"""grader.checks.grading.events documents every event the spies record, with exactly the fields they record: the
spies run (in a child interpreter: they patch torch globally) through every kind, and each recorded
event is compared with the table."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from grader.checks.grading.events import EVENTS, fields_of, table

RECORD_EVERY_KIND = """
    import json
    import torch
    from torch import nn
    from grader.checks.learner.probing import (RECORDER, install_accumulation_spies, install_profiler_spies,
                                       watch_calls, watch_loss, watch_model, watch_optimizer, watch_step_gradients)

    install_accumulation_spies()
    install_profiler_spies()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    watch_model(model)
    watch_optimizer(optimizer, measure_zero_grads=True)
    watch_step_gradients(optimizer, model)
    loss_fn = watch_loss(nn.CrossEntropyLoss())
    scaler = torch.amp.GradScaler("cpu")
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    RECORDER.mark("call")
    for clip_first in (True, False):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        if not clip_first:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
    type(optimizer).step(optimizer)
    # The profiler spies count a label only when the learner's file opens it: this part runs as that file.
    learner = (
        "with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:\\n"
        "    with torch.profiler.record_function('step'):\\n"
        "        preprocess()\\n"
        "prof.key_averages()\\n"
        "prof.events()\\n")
    exec(compile(learner, "submission.py", "exec"), {"torch": torch, "preprocess": watch_calls(lambda: None, "p")})
    events = RECORDER.events
    from grader.checks.grading.events import MalformedEvent, check_event
    refused = []
    for event in events:
        try:
            check_event(event)
        except MalformedEvent as exc:
            refused.append(str(exc))
    print(json.dumps({"events": [[e["event"], sorted(e)] for e in events], "refused": refused}))
"""


def test_every_recorded_event_is_documented_with_its_fields():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(RECORD_EVERY_KIND)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    found = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    recorded = found["events"]
    # What the spies record is what the grading side accepts from the stream (types included).
    assert found["refused"] == []
    seen = set()
    for kind, fields in recorded:
        assert kind in EVENTS, f"the spies record '{kind}', which grader/checks/grading/events.py does not list"
        always, optional = fields_of(kind)
        assert always <= set(fields), f"{kind}: documented fields {sorted(always - set(fields))} not recorded"
        undocumented = set(fields) - always - optional
        assert not undocumented, f"{kind}: recorded fields {sorted(undocumented)} are not documented"
        seen.add(kind)
    assert seen == set(EVENTS), f"documented but never recorded here: {sorted(set(EVENTS) - seen)}"


def test_the_authoring_guide_shows_the_current_table():
    guide = (Path(__file__).resolve().parents[2] / "docs" / "authoring.md").read_text()
    assert table() in guide, "docs/authoring.md: paste grader.checks.grading.events.table() between its markers"

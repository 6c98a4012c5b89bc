"""fix-the-bottleneck's "faster" is measured on the grading side's clock (checks/referee.py): the
reported attack (a clock that slows down while the learner's own step runs) and others in its spirit
fail, in both sandboxes. The step is the starter's, slow preprocess unchanged, in every attack."""
from __future__ import annotations

from pathlib import Path

from grader.host.grading import run_submission

EXERCISE = "profiling/fix-the-bottleneck"
FOLDER = Path(__file__).resolve().parents[2] / "exercises" / "profiling" / "fix-the-bottleneck"
# find_bottleneck and labels from the solution, the slow preprocess from the starter.
SOLUTION = (FOLDER / "solution.py").read_text()
SLOW = SOLUTION.replace('''def preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1."""
    return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)''', '''def preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1."""
    rows = []
    for row in x:
        rows.append((row - row.mean()) / (row.std() + 1e-5))
    return torch.stack(rows)''')

SLOW_CLOCK = '''
import time as _time
_real = _time.perf_counter
_lost = [0.0]
_time.perf_counter = lambda: _real() - _lost[0]
_original_step = train_step


def train_step(model, optimizer, loss_fn, x, y):
    started = _real()
    try:
        return _original_step(model, optimizer, loss_fn, x, y)
    finally:
        _lost[0] += 0.9 * (_real() - started)  # the clock runs at a tenth of its speed meanwhile
'''

BUSY_NEIGHBOUR = '''
import os as _os

if _os.fork() == 0:  # a process that only spins: it slows whatever shares the CPU with it
    while True:
        pass
'''

NO_OP_AFTER_CHECKED = '''
_original_step, _calls = train_step, [0]


def train_step(model, optimizer, loss_fn, x, y):
    _calls[0] += 1
    if _calls[0] > 12:  # past the profiling and the replay: the timed rounds
        return torch.tensor(0.0)
    return _original_step(model, optimizer, loss_fn, x, y)
'''


def checks(sandbox, code: str) -> dict[str, dict]:
    result = run_submission(EXERCISE, code, sandbox=sandbox)
    assert result["status"] in ("passed", "failed"), result["error"]
    return {c["id"]: c for c in result["checks"]}


def test_control_the_solution_is_faster_and_the_slow_step_is_not(sandbox):
    assert checks(sandbox, SOLUTION)["faster"]["passed"]
    assert not checks(sandbox, SLOW)["faster"]["passed"]


def test_a_clock_that_slows_during_the_learners_step_changes_nothing(sandbox):
    result = checks(sandbox, SLOW + SLOW_CLOCK)
    assert not result["faster"]["passed"]
    assert "x as long as yours" in result["faster"]["message"]


def test_a_busy_thread_cannot_slow_the_original_step_the_grader_times(sandbox):
    result = checks(sandbox, SLOW + BUSY_NEIGHBOUR)
    assert not result["faster"]["passed"]


def test_timed_steps_that_skip_the_work_are_caught_by_their_losses(sandbox):
    result = checks(sandbox, SLOW + NO_OP_AFTER_CHECKED)
    assert not result["same-result"]["passed"]
    assert "timing round" in result["same-result"]["message"]


# The rounds' data drawn from the run seed (readable in the learner's process, here through gc) could be
# computed ahead: every timed round's losses looked up, the slow step never run while timed.
PREDICTS_THE_ROUNDS = '''
import gc as _gc
import random as _random
import sys as _sys

_slow_step, _known, _calls = train_step, {}, [0]


def _learn_every_rounds_losses():
    api = next(o for o in _gc.get_objects() if type(o).__name__ == "ProbeAPI")
    scenario, rng = _sys.modules["scenario"], _random.Random(api.seed)
    for _ in range(12):
        model, optimizer, loss_fn, batches = scenario.build_timed(rng.randrange(1, 2**31), api.device)
        for x, y in batches:
            _known[float(x[0, 0])] = scenario.slow_train_step(model, optimizer, loss_fn, x, y)


def train_step(model, optimizer, loss_fn, x, y):
    _calls[0] += 1
    if _calls[0] == 9:
        _learn_every_rounds_losses()  # past the profiled runs: the replay, which the grader does not time
    known = _known.get(float(x[0, 0]))
    return known if known is not None else _slow_step(model, optimizer, loss_fn, x, y)
'''

# The fixed step, minus the last update of every timed round: no loss shows it, the weights do.
SKIPS_THE_LAST_UPDATE = '''
import sys as _sys

_fixed_step, _calls = train_step, [0]


def train_step(model, optimizer, loss_fn, x, y):
    _calls[0] += 1
    per_round = _sys.modules["scenario"].TIMED_BATCHES
    if _calls[0] > 12 and (_calls[0] - 12) % per_round == 0:  # a timed round's last step (past 12 calls)
        step, optimizer.step = optimizer.step, lambda *args, **kwargs: None
        try:
            return _fixed_step(model, optimizer, loss_fn, x, y)
        finally:
            optimizer.step = step
    return _fixed_step(model, optimizer, loss_fn, x, y)
'''

# A number no float holds, in the question that ends a timing round: the learner's error, said plainly.
HUGE_NUMBER = '''
import sys as _sys

_channel = _sys.modules["grader.learner.channel"]
_ask = _channel.LearnerChannel.ask


def _ask_with_a_huge_loss(self, request):
    if request.get("op") == "finish":
        request = {**request, "losses": [10**400] * len(request.get("losses", []))}
    return _ask(self, request)


_channel.LearnerChannel.ask = _ask_with_a_huge_loss
'''


# The finish question's 5-byte header written as soon as a round starts, its payload only after the slow
# step: a clock stopped when a message's header arrived (the audit's A3) timed none of the step, and
# "faster" passed with the per-row loop unchanged. The step's work is all done and checked (same-result).
HEADER_AHEAD = '''
import io as _io
import json as _json
import struct as _struct
import sys as _sys

import torch as _torch

_channel = _sys.modules["grader.learner.channel"]
_scenario = _sys.modules["scenario"]
_learner = _channel._learner
_plain_ask = _learner.ask
_header = _struct.Struct(">IB")
_ahead = set()


def _framed(request):
    buffer = _io.BytesIO()
    _torch.save({"op": "ask", "request": request}, buffer)
    return buffer.getvalue()


# Every finish question is framed alike (the same weights' shapes, the same number of losses): its size is
# known before the round's step has run.
_SIZE = len(_framed({"op": "finish", "index": 0, "losses": [0.5] * _scenario.TIMED_BATCHES,
                     "params": _scenario.params(_scenario.build(1, "cpu")[0])}))


def _ask(request):
    if request.get("op") == "finish" and request.get("index") in _ahead:
        _ahead.discard(request["index"])
        payload = _framed(request)
        if len(payload) != _SIZE:
            raise RuntimeError(f"the finish question is {len(payload)} bytes, not {_SIZE}")
        with _learner._lock:
            _learner._sock.sendall(payload)  # the rest of the message whose header went ahead
            _wire = _sys.modules["grader.core.wire"]
            size, _ = _header.unpack(_wire.recv_exactly(_learner._sock, _header.size))
            return _json.loads(_wire.recv_exactly(_learner._sock, size))
    reply = _plain_ask(request)
    if request.get("op") == "start":
        _ahead.add(request["index"])
        _learner._sock.sendall(_header.pack(_SIZE, ord("T")))  # the finish question's header, before the step
    return reply


_learner.ask = _ask
'''


def test_a_finish_header_sent_before_the_slow_step_stops_no_clock(sandbox):
    result = checks(sandbox, SLOW + HEADER_AHEAD)
    assert result["same-result"]["passed"], result["same-result"]  # the attack did the checked work
    assert not result["faster"]["passed"]
    assert "x as long as yours" in result["faster"]["message"]


def test_the_rounds_data_cannot_be_computed_ahead_from_the_run_seed(sandbox):
    result = checks(sandbox, SLOW + PREDICTS_THE_ROUNDS)
    assert not result["faster"]["passed"]


def test_a_timed_round_that_skips_its_last_update_is_caught_by_its_weights(sandbox):
    result = checks(sandbox, SOLUTION + SKIPS_THE_LAST_UPDATE)
    assert result["faster"]["passed"]
    assert not result["same-result"]["passed"]
    assert "weights" in result["same-result"]["message"] and "timing round" in result["same-result"]["message"]


# The learner's process forges the referee's "done" after its first timed round, so the probe stops asking
# for rounds before the verdict is decided: the referee, not the learner's process, knows how many it timed.
FORGES_DONE = '''
import sys as _sys

_learner = _sys.modules["grader.learner.channel"]._learner
_plain_ask = _learner.ask


def _ask(request):
    reply = _plain_ask(request)
    if request.get("op") == "finish":
        reply = {**reply, "done": True}
    return reply


_learner.ask = _ask
'''


def test_rounds_stopped_early_by_a_forged_done_are_too_few_to_pass(sandbox):
    result = checks(sandbox, SOLUTION + FORGES_DONE)
    assert result["same-result"]["passed"], result["same-result"]  # a correct, fast step: only the count is short
    assert not result["faster"]["passed"], result["faster"]
    assert "too few to decide" in result["faster"]["message"], result["faster"]["message"]


def test_a_number_too_large_for_a_float_is_the_learners_error(sandbox):
    result = run_submission(EXERCISE, SOLUTION + HUGE_NUMBER, sandbox=sandbox)
    assert result["status"] == "error", result
    assert "too large" in result["error"]["message"]

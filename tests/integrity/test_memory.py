"""fit-the-budget's memory is measured from outside the learner's process (checks/referee.py): the
kernel's peak for a process that ran only the step. The reported attacks (the starter's step wrapped in
the learner's own saved_tensors_hooks, or in save_on_cpu) and others in their spirit fail, in both
sandboxes."""
from __future__ import annotations

from pathlib import Path

from grader.host.grading import run_submission
from tests.support.grading import caught_by

EXERCISE = "gpu-memory/fit-the-budget"
FOLDER = Path(__file__).resolve().parents[2] / "exercises" / "gpu-memory" / "fit-the-budget"
SOLUTION = (FOLDER / "solution.py").read_text()
NO_GRAD_EVALUATE = '''

def evaluate(model, x):
    with torch.no_grad():
        return model(x)
'''
STARTER_STEP = '''
import torch


def _original(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()
'''


def wrapped(context: str, after: str = "") -> str:
    return STARTER_STEP + f'''

def train_step(model, optimizer, loss_fn, x, y):
    with {context}:
        loss = _original(model, optimizer, loss_fn, x, y)
    {after or "pass"}
    return loss
''' + NO_GRAD_EVALUATE


def failed_checks(sandbox, code: str) -> dict[str, str]:
    result = run_submission(EXERCISE, code, sandbox=sandbox)
    assert result["status"] in ("passed", "failed"), result["error"]
    return {c["id"]: c["message"] for c in result["checks"] if c["id"] in caught_by(result)}


def test_control_the_solution_passes(sandbox):
    assert failed_checks(sandbox, SOLUTION) == {}


def test_pass_through_saved_tensor_hooks_do_not_hide_the_activations(sandbox):
    failed = failed_checks(sandbox, wrapped("torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)"))
    assert set(failed) == {"under-budget"}
    assert "from outside" in failed["under-budget"]


def test_save_on_cpu_does_not_hide_the_activations_on_a_cpu(sandbox):
    failed = failed_checks(sandbox, wrapped("torch.autograd.graph.save_on_cpu()"))
    assert set(failed) == {"under-budget"}


def test_resetting_the_peak_through_clear_refs_changes_nothing(sandbox):
    reset = '''try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the process's peak resident set, where it is allowed
    except OSError:
        pass'''
    failed = failed_checks(sandbox, wrapped("torch.enable_grad()", after=reset))
    assert set(failed) == {"under-budget"}


def test_an_evaluate_that_builds_a_graph_and_hides_it_is_caught(sandbox):
    hidden = STARTER_STEP.replace("_original", "train_step") + '''

def evaluate(model, x):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        out = model(x)
    return out.detach()  # no graph left to see, but every activation was kept while it ran
'''
    failed = failed_checks(sandbox, hidden)
    assert "eval-without-graph" in failed


def test_a_step_and_an_evaluate_that_idle_when_measured_are_caught(sandbox):
    # Code that can tell a measurement from a checked run (here: probe.measure on the call stack) does
    # nothing when measured and the real work when checked. Every process that runs the learner's code
    # is now both measured and checked, on the same batch: there is nothing to tell apart.
    tells = STARTER_STEP + '''
import inspect


def _measured(x):
    return any(frame.function == "measure" for frame in inspect.stack())


def train_step(model, optimizer, loss_fn, x, y):
    if _measured(x):
        return torch.tensor(0.0)
    return _original(model, optimizer, loss_fn, x, y)


def evaluate(model, x):
    if _measured(x):
        with torch.no_grad():
            return model(x)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        out = model(x)
    return out.detach()
'''
    failed = failed_checks(sandbox, tells)
    assert {"under-budget", "eval-without-graph"} <= failed.keys(), failed


def test_an_extra_step_through_the_optimizers_class_is_caught_by_the_weights(sandbox):
    # The step count the learner's process reports sees optimizer.step() on the instance only; the weights
    # after the step show a second one.
    twice = SOLUTION.replace("    optimizer.step()\n", "    optimizer.step()\n    type(optimizer).step(optimizer)\n")
    assert twice != SOLUTION
    failed = failed_checks(sandbox, twice)
    assert set(failed) == {"same-loss-and-grads"}
    assert "exactly once" in failed["same-loss-and-grads"]


# Found by the review of issue 26: two ways to keep the activations where a process's resident set does not
# count them. Before the container meter sampled the container's cgroup, both passed every check in the docker
# sandbox (the local sandbox's cgroup counted both): the meter must count every process and the kernel's own
# buffers, as the threat model says.
UNREAPED_CHILD = """# no checkpointing: the original step runs in a forked child that is never waited for
import os, io, torch

def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        loss = loss_fn(model(x), y)
        loss.backward()
        buf = io.BytesIO()
        torch.save((loss.detach(), [p.grad for p in model.parameters()]), buf)
        data = buf.getvalue()
        os.write(w, len(data).to_bytes(8, "big"))
        view = memoryview(data)
        while view:
            n = os.write(w, view); view = view[n:]
        os._exit(0)
    os.close(w)
    size = int.from_bytes(os.read(r, 8), "big")
    chunks = []
    while size:
        c = os.read(r, min(size, 1 << 20)); chunks.append(c); size -= len(c)
    loss, grads = torch.load(io.BytesIO(b"".join(chunks)))
    for p, g in zip(model.parameters(), grads):
        p.grad = g
    optimizer.step()
    return loss   # the child is never reaped: its peak is in no wait4 count

def evaluate(model, x):
    with torch.no_grad():
        return model(x)
"""
SOCKET_STASH = """# the original step, no checkpointing: every activation saved for backward is parked in kernel socket
# buffers (a socketpair's queue), which neither the cgroup's memory count nor the resident set includes
import socket, torch

def _pack(t):
    if t.numel() * t.element_size() < (1 << 20):
        return ("keep", t)
    data = t.detach().contiguous().view(torch.uint8).reshape(-1).numpy().tobytes()
    pairs, view = [], memoryview(data)
    while view:
        a, b = socket.socketpair()
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
        a.setblocking(False)
        sent = 0
        try:
            while view:
                n = a.send(view[: 1 << 16]); view = view[n:]; sent += n
        except BlockingIOError:
            pass
        pairs.append((a, b, sent))
    return ("parked", pairs, t.dtype, t.shape, t.device, t.requires_grad)

def _unpack(p):
    if p[0] == "keep":
        return p[1]
    _, pairs, dtype, shape, device, _ = p
    buf = bytearray()
    for a, b, n in pairs:
        got = 0
        while got < n:
            chunk = b.recv(min(n - got, 1 << 20)); buf += chunk; got += len(chunk)
        a.close(); b.close()
    return torch.frombuffer(buf, dtype=torch.uint8).view(dtype).reshape(shape).to(device)

def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autograd.graph.saved_tensors_hooks(_pack, _unpack):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()

def evaluate(model, x):
    with torch.no_grad():
        return model(x)
"""


def test_activations_kept_by_a_child_never_waited_for_are_counted(sandbox):
    failed = failed_checks(sandbox, UNREAPED_CHILD)
    assert set(failed) == {"under-budget"}, failed


def test_activations_parked_in_socket_buffers_are_counted(sandbox):
    failed = failed_checks(sandbox, SOCKET_STASH)
    assert set(failed) == {"under-budget"}, failed

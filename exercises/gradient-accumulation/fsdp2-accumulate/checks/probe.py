"""Runs in the learner's confined process. Both ranks of the two-process gloo group run the learner's
train: this process is rank 1; rank 0 is a fork of it, made here, after the learner's code has loaded
(so it is the learner's process too, and reports through a pipe to this one).

Why not a rank of the grading side's own, as in the DDP exercises: FSDP2's collectives follow how the
learner shards (one all-gather per unit per forward, again in backward; a reduce-scatter per unit on each
synced backward), so a grading-side rank would have to make exactly the learner's sequence, and every
wrong sharding or sync pattern would hang both ranks until the timeout instead of reaching a verdict.
The outcome is judged in the grading process instead: each rank's own shards after every optimizer step
are assembled there and compared with a one-process run (reference.py) on both ranks' data.

Each rank records, around the learner's call: the dtype each Linear computed in (a forward hook), every
reduce-scatter FSDP2 made (torch.distributed.reduce_scatter_single, which its default reduce-scatter calls)
with its dtype and the micro-batch whose backward made it, what make_optimizer was given, its local
shards after every optimizer step, and how the model ended up sharded.
"""
import io
import os
import tempfile
import traceback

import torch
import torch.distributed as dist

import scenario

SHIP_LIMIT = 1 << 22  # bytes of rank 0's report; a correct one is under 20 KB


def probe(api):
    store = os.path.join(tempfile.mkdtemp(), "store")
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # rank 0
        os.close(reader)
        code = 0
        try:
            buffer = io.BytesIO()
            torch.save(_rank(api, store, 0), buffer)
            data = memoryview(buffer.getvalue())
            while data:
                data = data[os.write(writer, data):]
        except BaseException:  # noqa: BLE001 - a fork must reach os._exit; the missing report says so
            code = 70
        finally:
            os._exit(code)
    os.close(writer)
    mine = _rank(api, store, 1)
    other = _receive(reader, pid)
    return {"ranks": [other, mine]}


def _receive(reader, pid):
    chunks, size = [], 0
    with os.fdopen(reader, "rb") as pipe:
        while size <= SHIP_LIMIT:
            chunk = pipe.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    from grader.checks.learner.probing import wait_helper

    wait_helper(pid, 2 * scenario.TIMEOUT_S)
    try:
        report = torch.load(io.BytesIO(b"".join(chunks)), weights_only=True)
    except Exception:  # noqa: BLE001 - no report, or a broken one
        return {"rank": 0, "failed": "rank 0 (a fork of your process) sent no report: it died or was killed"}
    return report if isinstance(report, dict) else {"rank": 0, "failed": "rank 0 sent something else"}


def _rank(api, store, rank):
    try:
        scenario.join(store, rank)
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (scenario.WORLD,))
    except Exception:  # noqa: BLE001 - the group itself failed (not the learner's call): say what
        return {"rank": rank, "failed": traceback.format_exc(limit=-2)[-2000:]}
    try:
        return _train(api, rank, mesh)
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - a group the learner's code broke
            pass


def _train(api, rank, mesh):
    model = scenario.build_model(api.seed)
    forwards, dtypes, reduces, steps, given = [0], [], [], [], []

    def forward(*_):
        forwards[0] += 1

    def computed(module, args, output):
        if isinstance(output, torch.Tensor):
            dtypes.append(str(output.dtype))

    model.register_forward_pre_hook(forward)
    for name in scenario.LAYERS:
        model.get_submodule(name).register_forward_hook(computed)

    original = dist.reduce_scatter_single

    def reduce_scatter_single(output, input, *args, **kwargs):  # noqa: A002 - torch's own names
        reduces.append({"micro_batch": forwards[0] - 1, "dtype": str(input.dtype)})
        return original(output, input, *args, **kwargs)

    dist.reduce_scatter_single = reduce_scatter_single

    def make_optimizer(parameters):
        parameters = list(parameters)
        given.append(parameters)
        optimizer = scenario.make_optimizer(parameters)
        optimizer.register_step_post_hook(lambda *_: steps.append(_shards(model)))
        return optimizer

    _, error = api.try_call(model, mesh, make_optimizer, scenario.loss_fn, scenario.micro_batches(api.seed, rank),
                            scenario.ACCUM_STEPS, scenario.MAX_NORM)
    dist.reduce_scatter_single = original
    own = list(model.parameters())
    return {"rank": rank, "error": error, "forwards": forwards[0], "dtypes": dtypes[:64], "reduces": reduces[:256],
            "steps": steps[:16], "shards": _shards(model), "layout": _layout(model),
            "optimizers": [{"count": len(p), "model's": len(p) == len(own) and all(a is b for a, b in zip(p, own)),
                            "dtensors": all(_is_dtensor(t) for t in p)} for p in given[:4]]}


def _is_dtensor(tensor):
    from torch.distributed.tensor import DTensor

    return isinstance(tensor, DTensor)


def _shards(model):
    """This rank's part of every parameter, float32: its local shard (the whole tensor if it is not sharded)."""
    return {name: (p.to_local() if _is_dtensor(p) else p).detach().float().clone()
            for name, p in model.named_parameters()}


def _layout(model):
    """How the model ended up: which modules are FSDP2 units, and each parameter's placement."""
    from torch.distributed.fsdp import FSDPModule

    units = {name or "model": isinstance(module, FSDPModule) for name, module in model.named_modules()
             if name == "" or name in scenario.LAYERS}
    placements = {name: ([str(x) for x in p.placements], p.device_mesh.size()) if _is_dtensor(p) else None
                  for name, p in model.named_parameters()}
    return {"units": units, "placements": placements}

# pattern: facebookresearch/detectron2 detectron2/utils/comm.py reduce_dict (dist.reduce(values, dst=0); if dist.get_rank() == 0: values /= world_size) called by SimpleTrainer._write_metrics on the detached losses, and the gradient norm all-gathered for the log (comm.all_gather); the accumulation, unscale_ and clip as the PyTorch AMP examples show them
# class: logging-all-reduce
# expect: pass
# why: the accumulation and the clipping are correct; the dist.reduce of the losses to rank 0 and the all_gather of the norm only log, and the grader's process must answer them instead of pairing them with a gradient all-reduce
import contextlib

import torch
import torch.distributed as dist


def reduce_dict(input_dict):
    names = sorted(input_dict)
    values = torch.stack([input_dict[k] for k in names])
    dist.reduce(values, dst=0)
    if dist.get_rank() == 0:
        values /= dist.get_world_size()  # only the main process accumulates, so only divide by world_size there
    return dict(zip(names, values))


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        ends_window = i == window_start + window_size - 1
        with contextlib.nullcontext() if ends_window else model.no_sync():
            loss = loss_fn(model(x), y) / window_size
            scaler.scale(loss).backward()
        metrics = reduce_dict({"loss_cls": loss.detach()})
        if ends_window:
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            norms = [torch.zeros(1) for _ in range(dist.get_world_size())]
            dist.all_gather(norms, norm.reshape(1))
            if dist.get_rank() == 0:
                print(f"loss {metrics['loss_cls'].item():.4f} grad norm {max(float(t) for t in norms):.3f}")
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()

# pattern: facebookresearch/fairseq fairseq/utils.py clip_grad_norm_ (total_norm = torch.norm(torch.stack([torch.norm(g, p=2) for g in grads])); clip_coef = (max_norm / (total_norm + 1e-6)).clamp_(max=1); g.mul_(clip_coef)) called by the trainer after the all-reduce; here after the window's last, syncing backward and an explicit unscale_; fairseq's no_sync over the other micro-batches
# class: manual-norm-after-sync
# expect: pass
# why: under DDP the all-reduced gradient is the full one on every rank, so the norm each rank computes by hand with no collective of its own is the global norm: the same clipping as clip_grad_norm_
import contextlib

import torch


def clip_grad_norm_(params, max_norm):
    grads = [p.grad.detach() for p in params if p.grad is not None]
    total_norm = torch.norm(torch.stack([torch.norm(g, p=2, dtype=torch.float32) for g in grads]))
    clip_coef = (max_norm / (total_norm + 1e-6)).clamp_(max=1)
    for g in grads:
        g.mul_(clip_coef)
    return total_norm


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    n = len(micro_batches)
    optimizer.zero_grad()
    for start in range(0, n, accum_steps):
        samples = micro_batches[start:start + accum_steps]
        for i, (x, y) in enumerate(samples):
            is_last = i == len(samples) - 1
            maybe_no_sync = model.no_sync if not is_last else contextlib.ExitStack
            with maybe_no_sync():
                loss = loss_fn(model(x), y) / len(samples)
                scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()

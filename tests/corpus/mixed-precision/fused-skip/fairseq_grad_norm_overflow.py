# pattern: facebookresearch/fairseq fairseq/optim/amp_optimizer.py and trainer.py (scaler.unscale_ before clip_grad_norm; a non-finite grad norm is an overflow, "gradient overflow detected, ignoring gradient", and the update count and lr schedule do not advance)
# class: nonfinite-grad-norm
# expect: pass
# why: after unscale_, a non-finite gradient norm is exactly the inf/NaN that makes scaler.step skip (the fused kernel gets the same flag), so the warm-up and the count follow the real updates
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    num_updates = 0
    params = [p for p in model.parameters() if p.requires_grad]
    for sample, target in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(sample), target)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grad_norm = torch.norm(torch.stack([torch.norm(p.grad.detach(), 2) for p in params if p.grad is not None]), 2)
        overflow = not torch.isfinite(grad_norm)
        scaler.step(optimizer)
        scaler.update()
        if overflow:
            continue
        num_updates += 1
        scheduler.step()
    return num_updates

# pattern: the split form clip_grad_norm_'s docstring calls equivalent (torch.nn.utils.get_total_norm over the gradients, then torch.nn.utils.clip_grads_with_norm_(parameters, max_norm, total_norm)), used to log the norm or to reduce it across ranks before clipping, as FSDP2 / torchtitan-style training loops do
# class: clip-split-total-norm
# expect: pass
# why: the gradients are unscaled, their total norm computed once, then scaled to max_norm before the scaler steps: the same update as clip_grad_norm_ (issue 28: unscale-then-clip said "never clipped the gradients" while matches-reference passed)
import torch

grad_norms = []  # what the training loop logs


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    params = [p for p in model.parameters() if p.grad is not None]
    total_norm = torch.nn.utils.get_total_norm([p.grad for p in params], norm_type=2.0)
    grad_norms.append(total_norm.item())
    torch.nn.utils.clip_grads_with_norm_(params, max_norm, total_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

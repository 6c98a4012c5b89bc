# pattern: fairseq's optimizer wrappers (fairseq/optim/fp16_optimizer.py and fairseq/utils.py clip_grad_norm_): unscale the gradients first, then clip them with the project's own implementation, grad_norm = torch.norm(torch.stack([torch.norm(g) for g in grads])); clip_coef = (max_norm / (grad_norm + 1e-6)).clamp_(max=1); g.mul_(clip_coef)
# class: clip-own-implementation
# expect: pass
# why: the gradients the optimizer uses are the unscaled ones scaled to max_norm, exactly what clip_grad_norm_ produces; the grader must judge what the step used, not which function was called (issue 28)
import torch


def clip_grad_norm_(params, max_norm):
    grads = [p.grad.detach() for p in params if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    grad_norm = torch.norm(torch.stack([torch.norm(g, p=2, dtype=torch.float32) for g in grads]))
    clip_coef = (max_norm / (grad_norm + 1e-6)).clamp_(max=1)
    for g in grads:
        g.mul_(clip_coef)
    return grad_norm


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

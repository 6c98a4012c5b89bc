# pattern: clipping the still-scaled gradients against a threshold scaled the same way (clip_grad_norm_(params, max_norm * scaler.get_scale()) before scaler.step, which then unscales them), a workaround suggested in GradScaler threads on discuss.pytorch.org before unscale_ existed
# class: clip-scaled-at-scaled-threshold
# expect: pass
# why: DEBATABLE, decided pass: the scaled gradients are cut to max_norm x scale, so once scaler.step unscales them their norm is exactly max_norm and the update equals the documented order's (matches-reference); the grader judges what the step used (issue 28: the old message, "the threshold cut them far too hard and the update was tiny", was false here)
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm * scaler.get_scale())
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

# pattern: pinning the loss scale through GradScaler.update's documented new_scale argument (scaler.update(new_scale=...)), as in code that keeps a "static loss scale" (fairseq's --fp16-init-scale with no scale window, NVIDIA apex's static_loss_scale) instead of letting the scaler back off
# class: pinned-scale
# expect: fail
# expect-fail: matches-reference
# why: every step is skipped or taken correctly, but after the overflowing batch the scale does not drop, because update() is told the scale each time; the message must say update() ran and the scale was set by hand, not "call scaler.update() every step" (issue 28)
import torch

STATIC_LOSS_SCALE = 65536.0


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update(new_scale=STATIC_LOSS_SCALE)
    return loss.detach()

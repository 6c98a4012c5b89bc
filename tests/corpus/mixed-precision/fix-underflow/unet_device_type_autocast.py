# pattern: milesial/Pytorch-UNet train.py: grad_scaler = torch.cuda.amp.GradScaler(enabled=amp) before the epochs; per batch torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp) with the device taken from the data, zero_grad(set_to_none=True), scaled backward, step, update
# class: device-from-input
# expect: pass
# why: the device comes from the input tensor; under the grader's CPU emulation that is CPU autocast, which the emulation runs in float16, and the scaler is the (emulated) CUDA GradScaler, so the AMP path really runs and fixes the underflow
import torch

amp = True


def train(model, optimizer, loss_fn, x, y, steps):
    device = x.device
    grad_scaler = torch.cuda.amp.GradScaler(enabled=amp)
    losses = []
    for _ in range(steps):
        with torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp):
            pred = model(x)
            loss = loss_fn(pred, y)
        optimizer.zero_grad(set_to_none=True)
        grad_scaler.scale(loss).backward()
        grad_scaler.step(optimizer)
        grad_scaler.update()
        losses.append(loss.item())
    return losses

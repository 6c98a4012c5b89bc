# pattern: milesial/Pytorch-UNet train.py before the fix, reported in milesial/Pytorch-UNet#468 "Gradients are clipped before the unscaling" (same bug: pytorch/examples#1196, minGPT-ddp trainer): grad_scaler.scale(loss).backward(); clip_grad_norm_(model.parameters(), 1.0); grad_scaler.step; grad_scaler.update, with no unscale_
# class: clip-before-unscale
# expect: fail
# expect-fail: matches-reference
# why: clip_grad_norm_ runs on gradients still multiplied by 65536 (norm 2e4-4e4), so it shrinks them 2e4-4e4-fold before scaler.step unscales them and the weights barely move; the message must name the clip_grad_norm_ line running before scaler.unscale_(optimizer), not zeroing or scaling
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
    torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
    grad_scaler.step(optimizer)
    grad_scaler.update()
    return loss

# pattern: huggingface/pytorch-image-models train.py with --amp --amp-dtype bfloat16: amp_autocast = partial(torch.autocast, device_type=device.type, dtype=amp_dtype); loss_scaler = None unless amp_dtype is float16, so the plain branch runs loss.backward(create_graph=second_order) and optimizer.step()
# class: bf16-timm-partial-autocast
# expect: pass
# why: the autocast context comes from functools.partial with dtype=torch.bfloat16 and covers forward and loss; with bfloat16 timm builds no loss scaler, so backward and step are plain
from functools import partial

import torch

amp_dtype = torch.bfloat16
amp_autocast = partial(torch.autocast, device_type="cuda", dtype=amp_dtype)
loss_scaler = None if amp_dtype == torch.bfloat16 else torch.amp.GradScaler("cuda")


def train(model, optimizer, loss_fn, x, y, steps):
    losses = []
    for _ in range(steps):
        with amp_autocast():
            output = model(x)
            loss = loss_fn(output, y)
        optimizer.zero_grad()
        if loss_scaler is not None:
            loss_scaler.scale(loss).backward()
            loss_scaler.step(optimizer)
            loss_scaler.update()
        else:
            loss.backward(create_graph=False)
            optimizer.step()
        losses.append(loss.item())
    return losses

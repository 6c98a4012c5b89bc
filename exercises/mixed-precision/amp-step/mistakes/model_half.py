# mistake: the model's weights cast to float16 (model.half()): scaler.step refuses their float16 gradients
# expect-fail: runs
# expect-skip: step-update-order, matches-reference
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    model.half()
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        out = model(x.half())
        loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

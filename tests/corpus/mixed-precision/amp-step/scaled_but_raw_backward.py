# pattern: bug reports of "AMP training does not learn / loss stays flat": the scaled loss is computed (and logged) but backward() is called on the unscaled loss, so scaler.step divides true gradients by 65536
# class: raw-backward-after-scale
# expect: fail
# expect-fail: scaled-backward
# why: backward ran on the raw loss while scaler.scale(loss) was computed and thrown away; the call completes (scale() initialised the scaler) but every update is 65536 times too small; the message must name the backward line, and runs/step-update-order must pass because the calls complete, return the loss and step/update in order
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        output = model(x)
        loss = loss_fn(output, y)
    scaled_loss = scaler.scale(loss)
    loss.backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

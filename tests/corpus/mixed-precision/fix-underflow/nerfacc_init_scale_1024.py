# pattern: nerfstudio-project/nerfacc examples (train_ngp_nerf_*.py): grad_scaler = torch.cuda.amp.GradScaler(2**10), a smaller initial scale than the default 2**16; used here the documented way (scaler.step + scaler.update, which nerfacc#307 points out the example skipped)
# class: custom-init-scale
# expect: fail
# expect-fail: underflow-fixed
# why: DEBATABLE, decided fail (docs/course.md): the final loss matches fp32, but a median 9-10% of the gradient values are still exactly zero in the last steps (fp32 has none: Tanh), so underflow is not fixed; the message says the loss still fell close to fp32's
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    grad_scaler = torch.cuda.amp.GradScaler(2**10)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        grad_scaler.scale(loss).backward()
        grad_scaler.step(optimizer)
        grad_scaler.update()
        losses.append(loss.item())
    return losses

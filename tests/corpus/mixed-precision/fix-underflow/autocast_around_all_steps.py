# pattern: one autocast block around the whole optimisation loop, the bug fixed in X-GenGroup/Flow-Factory PR #186 ("per-forward autocast to avoid stale weight cache ... a single outer with self.autocast() around an optimize() loop masked optimizer.step() updates"); see also the autocast weight cache discussion in pytorch/pytorch#63552
# class: autocast-around-all-steps
# expect: fail
# expect-fail: autocast-scope
# why: backward and scaler.step run inside autocast, and autocast's cache keeps serving the fp16 casts of the weights from step 1 while optimizer.step changes the fp32 weights, so every step follows the gradient at the initial weights and the run diverges (final fp32 loss ~1e8 times the fp32 run's, measured); both checks fail on what happened, but the underflow-fixed message must not blame underflow (no gradient is zero): it must name the autocast block that spans the optimizer step
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    scaler = torch.amp.GradScaler('cuda')
    losses = []
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        for _ in range(steps):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.item())
    return losses

# pattern: GradScaler constructed inside the training loop instead of once, as reported in conservationtechlab/animl-py#298 (fixed in PR #304: "GradScaler is being initialized once per epoch instead of once per training session"), here once per step; the recipe says "The same GradScaler instance should be used for the entire convergence run"
# class: scaler-per-step
# expect: fail
# expect-fail: step-update-order
# why: each step's scaler.update() is thrown away with its scaler, so the scale can never back off after an overflow (a run that overflows at 65536 would skip every step forever) nor grow; nothing overflows in this 200-step run, so the outcome equals a correct run and only the record shows it: step-update-order must fail ("update() ran on a GradScaler that the next step no longer uses; create it once, before the loop"), underflow-fixed passes
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    losses = []
    for _ in range(steps):
        scaler = torch.cuda.amp.GradScaler()
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses

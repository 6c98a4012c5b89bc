# pattern: IAHispano/Applio PR #860 "optimizer step bugfix": the training loop called scaler.step(optim) and then optim.step() as well (left over from the pre-AMP code)
# class: double-step
# expect: fail
# expect-fail: step-update-order
# why: every iteration steps Adam twice with the same gradients (once through the scaler, once directly), which is another optimiser: the final loss ends 12-20x the fp32 run's (measured); the step-update-order message must name the direct optimizer.step() line and the underflow-fixed message must not call this underflow (gradients are alive)
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    scaler = torch.cuda.amp.GradScaler()
    optim_g = optimizer
    losses = []
    for _ in range(steps):
        optim_g.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss_gen_all = loss_fn(model(x), y)
        scaler.scale(loss_gen_all).backward()
        scaler.step(optim_g)
        optim_g.step()
        scaler.update()
        losses.append(loss_gen_all.item())
    return losses

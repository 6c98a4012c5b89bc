# pattern: logging a smoothed loss instead of each step's (the AverageMeter / "running_loss = 0.9 * running_loss + 0.1 * loss.item()" of many training scripts, e.g. the ImageNet example's AverageMeter), returned as if it were the per-step loss
# class: returns-smoothed-loss
# expect: fail
# expect-fail: runs
# why: the training is right (bfloat16 autocast, no scaler) but the returned numbers are an exponential average, not the loss of each step: `runs` compares each returned number with the losses loss_fn computed and must say that step's number is not its loss
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    losses, running = [], None
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        running = loss.item() if running is None else 0.9 * running + 0.1 * loss.item()
        losses.append(running)
    return losses

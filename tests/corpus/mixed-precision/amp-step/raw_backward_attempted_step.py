# pattern: the classic GradScaler bug report ending in "AssertionError: Attempted step but _scale is None. This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration." (e.g. code that adds scaler.step/update to a loop but keeps loss.backward())
# class: attempted-step-scale-none
# expect: fail
# expect-fail: scaled-backward
# why: the cause is the raw loss.backward() (scaled-backward) and every call then raises in scaler.step (runs, whose message must explain PyTorch's assertion in the lesson's words); step-update-order and matches-reference cannot be judged once the call raised before scaler.update() and before any update (they should be skipped, because: scaled-backward), not told "update() ran 0 times" or "Never call optimizer.step() yourself"
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        output = model(x)
        loss = loss_fn(output, y)
    loss.backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

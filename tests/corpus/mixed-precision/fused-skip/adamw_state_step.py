# pattern: reading the optimizer's own step counter (torch/optim/adam.py: Adam/AdamW keep state["step"] per parameter; _fused_adam subtracts found_inf from it, so a skipped update does not count), as training loops that log optimizer.state[p]["step"] do
# class: optimizer-state-step
# expect: pass
# why: the fused kernel advances state["step"] only on an update it applied, so advancing the warm-up when it moved follows the real updates exactly (this holds for Adam/AdamW, not for SGD, which keeps no step)
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    first = next(iter(model.parameters()))

    def adam_step():
        state = optimizer.state.get(first, {})
        return int(state["step"]) if "step" in state else 0

    for x, y in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        before = adam_step()
        scaler.step(optimizer)
        scaler.update()
        if adam_step() > before:
            scheduler.step()
    return adam_step()

# pattern: the non-finite loss guard of many training loops (fairseq trainer's "skip batch" handling of a NaN/inf loss, torchtune/recipes' `if torch.isnan(loss): raise`/skip, Lightning's `detect_anomaly`-style checks): skip the batch before backward when the loss itself is not finite, otherwise a standard scaled step
# class: nonfinite-loss-guard
# expect: pass
# why: an fp16 overflow shows in the scaled gradients, not in the loss (finite here), so the guard never fires; scaler.step skips the overflowing step and update() backs off the scale as in a correct step
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        output = model(x)
        loss = loss_fn(output, y)
    if not torch.isfinite(loss):
        print(f"skipping batch: loss is {loss.item()}")
        return loss.detach()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

# pattern: Lightning-style EMA callback (on_train_batch_end: self.ema.update_parameters(pl_module)) next to a LR scheduler stepped with interval="step" only when the optimizer ran; the callback runs after every batch whether or not the precision plugin's scaler skipped the step
# class: ema-callback-every-batch
# expect: fail
# expect-fail: ema-on-real-steps
# why: the scheduler and the count wait for real steps but the callback averages the unchanged weights in again after each skipped one; the message should name a skipped batch and the EMA update's line
import torch


class EMACallback:
    def __init__(self, ema):
        self.ema = ema

    def on_train_batch_end(self, module):
        self.ema.update_parameters(module)


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    callback = EMACallback(ema)
    global_step = 0
    for batch_idx, (x, y) in enumerate(batches):
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scale_before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() >= scale_before:
            scheduler.step()
            global_step += 1
        callback.on_train_batch_end(model)
    return global_step

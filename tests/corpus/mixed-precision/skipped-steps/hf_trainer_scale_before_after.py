# pattern: transformers Trainer before accelerate (v4.1x-4.2x, train loop): scale_before = self.scaler.get_scale(); self.scaler.step(self.optimizer); self.scaler.update(); scale_after = self.scaler.get_scale(); optimizer_was_run = scale_before <= scale_after; if optimizer_was_run: self.lr_scheduler.step(); adapted so the returned count is the scheduler's own step count
# class: scale-before-after
# expect: pass
# why: scale_before <= scale_after is the documented test (a grown scale counts as a real step); the count is read from scheduler.last_epoch, which only real steps advanced
import torch


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    for step, (inputs, labels) in enumerate(batches):
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            outputs = model(inputs)
        loss = loss_fn(outputs.float(), labels)
        scaler.scale(loss).backward()
        scale_before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        scale_after = scaler.get_scale()
        optimizer_was_run = scale_before <= scale_after
        if optimizer_was_run:
            scheduler.step()
            ema.update_parameters(model)
        model.zero_grad()
    return scheduler.last_epoch

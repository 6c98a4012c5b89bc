# pattern: huggingface/transformers Trainer._inner_training_loop (optimizer_was_run = not self.accelerator.optimizer_step_was_skipped; if optimizer_was_run: self.lr_scheduler.step(); self.state.global_step += 1 on every update), with the skip read from the scale across scaler.update()
# class: global-step-counts-skips
# expect: fail
# expect-fail: counts-real-steps
# why: the warm-up waits for a real update, but global_step counts every update, the skipped ones too; the message should say the count is how often step() was called
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    global_step = 0
    for inputs, labels in batches:
        model.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(inputs), labels)
        scaler.scale(loss).backward()
        scale_before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        optimizer_was_run = scaler.get_scale() >= scale_before
        if optimizer_was_run:
            scheduler.step()
        global_step += 1
    return global_step

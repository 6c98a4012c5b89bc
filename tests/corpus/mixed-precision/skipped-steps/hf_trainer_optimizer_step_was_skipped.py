# pattern: huggingface/accelerate AcceleratedOptimizer.step (patches optimizer.step to note that it ran, calls scaler.step, restores it, then scaler.update(); step_was_skipped is "the patched step never ran") with transformers Trainer._inner_training_loop (optimizer_was_run = not accelerator.optimizer_step_was_skipped; lr_scheduler.step() only if optimizer_was_run; self.state.global_step += 1 every update)
# class: global-step-counts-skips
# expect: fail
# expect-fail: counts-real-steps
# why: the scheduler (and here the EMA) wait for a step that ran, but the Trainer's global_step counts every update, the skipped ones too, so the returned count is the batch count; the message should say it counted every batch
import torch


class AcceleratedOptimizer:
    def __init__(self, optimizer, scaler):
        self.optimizer = optimizer
        self.scaler = scaler
        self._is_overflow = False

    def step(self):
        self._accelerate_step_called = False
        original_step = self.optimizer.step

        def patched_step(*args, **kwargs):
            self._accelerate_step_called = True
            return original_step(*args, **kwargs)

        self.optimizer.step = patched_step
        self.scaler.step(self.optimizer)
        self.optimizer.step = original_step
        self.scaler.update()
        self._is_overflow = not self._accelerate_step_called

    @property
    def step_was_skipped(self):
        return self._is_overflow


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    accelerated = AcceleratedOptimizer(optimizer, scaler)
    global_step = 0
    for inputs, labels in batches:
        model.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(inputs), labels)
        scaler.scale(loss).backward()
        accelerated.step()
        optimizer_was_run = not accelerated.step_was_skipped
        if optimizer_was_run:
            scheduler.step()
            ema.update_parameters(model)
        global_step += 1
    return global_step

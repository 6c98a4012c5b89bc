# pattern: huggingface/accelerate src/accelerate/optimizer.py AcceleratedOptimizer._step (patch_optimizer_step sets _accelerate_step_called when the optimizer's step() runs; scaler.step, scaler.update; _is_overflow = not _accelerate_step_called; step_was_skipped returns it) with the caller stepping its scheduler only when not step_was_skipped
# class: patched-step-flag
# expect: fail
# expect-fail: warmup-on-real-steps, counts-real-steps
# why: GradScaler calls a fused optimizer's step() on every batch (the kernel skips the update itself), so the patched step always runs and step_was_skipped is never true; the message should name a skipped batch where the warm-up moved and say the fused step() still ran
import torch


def patch_optimizer_step(accelerated_optimizer, method):
    def patched_step(*args, **kwargs):
        accelerated_optimizer._accelerate_step_called = True
        return method(*args, **kwargs)

    return patched_step


class AcceleratedOptimizer:
    def __init__(self, optimizer, scaler):
        self.optimizer = optimizer
        self.scaler = scaler
        self._is_overflow = False
        self._accelerate_step_called = False
        self._optimizer_original_step_method = self.optimizer.step
        self._optimizer_patched_step_method = patch_optimizer_step(self, self.optimizer.step)

    def step(self, closure=None):
        self.optimizer.step = self._optimizer_patched_step_method
        self.scaler.step(self.optimizer, closure)
        self.scaler.update()
        self._is_overflow = not self._accelerate_step_called
        self.optimizer.step = self._optimizer_original_step_method
        self._accelerate_step_called = False

    @property
    def step_was_skipped(self):
        return self._is_overflow


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    accelerated = AcceleratedOptimizer(optimizer, scaler)
    completed_steps = 0
    for inputs, labels in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(inputs), labels)
        scaler.scale(loss).backward()
        accelerated.step()
        if not accelerated.step_was_skipped:
            scheduler.step()
            completed_steps += 1
    return completed_steps

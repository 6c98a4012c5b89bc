# pattern: Lightning-AI/pytorch-lightning src/lightning/pytorch/plugins/precision/amp.py MixedPrecision.optimizer_step: closure_result = closure(); "`unscale` after the closure is executed but before the `on_before_optimizer_step` hook": self.scaler.unscale_(optimizer); self._after_closure(model, optimizer) (which runs Precision.clip_gradients -> clip_grad_by_norm -> torch.nn.utils.clip_grad_norm_(parameters, clip_val)); then step_output = self.scaler.step(optimizer); self.scaler.update(); the closure is loops/optimization/automatic.py's Closure (training_step, then zero_grad, then the backward of scaler.scale(loss))
# class: clip-after-unscale-closure
# expect: pass
# why: the closure runs the forward under autocast, clears the gradients before the scaled backward; unscale_ runs once after it, clipping of the unscaled gradients to max_norm follows, then scaler.step and update: the documented order, with the loss returned through the closure
import torch


class Closure:
    def __init__(self, step_fn, backward_fn, zero_grad_fn):
        self._step_fn, self._backward_fn, self._zero_grad_fn = step_fn, backward_fn, zero_grad_fn
        self.loss = None

    def __call__(self):
        self.loss = self._step_fn()
        self._zero_grad_fn()  # Lightning's Closure.closure: training_step, then zero_grad, then backward
        self._backward_fn(self.loss)
        return self.loss


class MixedPrecision:
    def __init__(self, scaler):
        self.scaler = scaler

    def clip_gradients(self, optimizer, clip_val):
        parameters = [p for group in optimizer.param_groups for p in group["params"]]
        torch.nn.utils.clip_grad_norm_(parameters, clip_val)

    def optimizer_step(self, optimizer, closure, gradient_clip_val):
        closure_result = closure()
        # `unscale` after the closure is executed but before the `on_before_optimizer_step` hook.
        self.scaler.unscale_(optimizer)
        self.clip_gradients(optimizer, gradient_clip_val)  # _after_closure -> on_before_optimizer_step, clip
        skipped_backward = closure_result is None
        if not skipped_backward:
            step_output = self.scaler.step(optimizer)
            self.scaler.update()
            return step_output


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    precision = MixedPrecision(scaler)

    def training_step():
        with torch.autocast("cuda", dtype=torch.float16):
            return loss_fn(model(x), y)

    closure = Closure(training_step, lambda loss: precision.scaler.scale(loss).backward(),
                      lambda: optimizer.zero_grad(set_to_none=True))
    precision.optimizer_step(optimizer, closure, gradient_clip_val=max_norm)
    return closure.loss.detach()

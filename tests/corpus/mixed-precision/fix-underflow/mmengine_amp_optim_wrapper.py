# pattern: open-mmlab/mmengine AmpOptimWrapper (mmengine/optim/optimizer/amp_optimizer_wrapper.py) used through OptimWrapper.update_params: optim_context() enters autocast, update_params scales the loss for accumulation (factor 1 here), backward = loss_scaler.scale(loss).backward(), step = [unscale_ + clip] + loss_scaler.step + loss_scaler.update, then zero_grad
# class: correct-wrapper
# expect: pass
# why: a wrapper made once before the loop owns one GradScaler('dynamic'); each iteration: autocast forward and loss, scaled backward, step, update, zero_grad after the step on a model that starts without gradients
from contextlib import contextmanager

import torch


class AmpOptimWrapper:
    def __init__(self, optimizer, loss_scale='dynamic', accumulative_counts=1, clip_grad=None):
        self.optimizer = optimizer
        self._accumulative_counts = accumulative_counts
        self._inner_count = 0
        self.clip_grad_kwargs = clip_grad or {}
        self._scale_update_param = None
        if loss_scale == 'dynamic':
            self.loss_scaler = torch.amp.GradScaler('cuda')
        elif isinstance(loss_scale, float):
            self._scale_update_param = loss_scale
            self.loss_scaler = torch.amp.GradScaler('cuda', init_scale=loss_scale)
        else:
            raise TypeError(f'loss_scale must be of type float or "dynamic", but got {loss_scale}')

    @contextmanager
    def optim_context(self, model):
        with torch.autocast('cuda', dtype=torch.float16):
            yield

    def scale_loss(self, loss):
        return loss / self._accumulative_counts

    def backward(self, loss, **kwargs):
        self.loss_scaler.scale(loss).backward(**kwargs)
        self._inner_count += 1

    def should_update(self):
        return self._inner_count % self._accumulative_counts == 0

    def step(self, **kwargs):
        if self.clip_grad_kwargs:
            self.loss_scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(
                [p for g in self.optimizer.param_groups for p in g['params']], **self.clip_grad_kwargs)
        self.loss_scaler.step(self.optimizer, **kwargs)
        self.loss_scaler.update(self._scale_update_param)

    def zero_grad(self, **kwargs):
        self.optimizer.zero_grad(**kwargs)

    def update_params(self, loss):
        loss = self.scale_loss(loss)
        self.backward(loss)
        if self.should_update():
            self.step()
            self.zero_grad()


def train(model, optimizer, loss_fn, x, y, steps):
    optim_wrapper = AmpOptimWrapper(optimizer)
    losses = []
    for _ in range(steps):
        with optim_wrapper.optim_context(model):
            loss = loss_fn(model(x), y)
        optim_wrapper.update_params(loss)
        losses.append(float(loss))
    return losses

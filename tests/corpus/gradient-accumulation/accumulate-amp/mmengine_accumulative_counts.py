# pattern: open-mmlab/mmengine OptimWrapper with accumulative_counts (mmengine/optim/optimizer/optimizer_wrapper.py): initialize_count_status(model, 0, max_counts), scale_loss divides by _accumulative_counts, or by _remainder_counts in the last, shorter window, should_update() at multiples of the count or at max_counts, update_params = scale_loss + backward + [step + zero_grad]; AmpOptimWrapper's backward/step/optim_context on top
# class: correct-wrapper
# expect: pass
# why: mmengine handles the short last window itself: its losses are divided by the remainder (1), and should_update() fires at micro-batches 3, 6 and 7; scaled backward, scaler step and update, zero_grad after each update
from contextlib import contextmanager

import torch


class AmpOptimWrapper:
    def __init__(self, optimizer, scaler, accumulative_counts=1):
        self.optimizer = optimizer
        self.loss_scaler = scaler
        self._accumulative_counts = accumulative_counts
        self._inner_count = 0
        self._max_counts = -1
        self._remainder_counts = -1

    def initialize_count_status(self, model, init_counts, max_counts):
        self._inner_count = init_counts
        self._max_counts = max_counts
        if self._inner_count % self._accumulative_counts != 0:
            print('warning: starting in the middle of an accumulation window')
        self._remainder_counts = self._max_counts % self._accumulative_counts
        if self._remainder_counts == 0:
            self._remainder_counts = self._accumulative_counts

    @contextmanager
    def optim_context(self, model):
        with torch.autocast('cuda', dtype=torch.float16, cache_enabled=False):
            yield

    def scale_loss(self, loss):
        if self._accumulative_counts == 1:
            loss_factor = 1
        elif self._max_counts == -1:
            loss_factor = self._accumulative_counts
        else:
            if self._inner_count < self._max_counts - self._remainder_counts:
                loss_factor = self._accumulative_counts
            else:
                loss_factor = self._remainder_counts
            assert loss_factor > 0, 'bad count status: call initialize_count_status first'
        return loss / loss_factor

    def backward(self, loss, **kwargs):
        self.loss_scaler.scale(loss).backward(**kwargs)
        self._inner_count += 1

    def should_update(self):
        return (self._inner_count % self._accumulative_counts == 0
                or self._inner_count == self._max_counts)

    def step(self, **kwargs):
        self.loss_scaler.step(self.optimizer, **kwargs)
        self.loss_scaler.update()

    def zero_grad(self, **kwargs):
        self.optimizer.zero_grad(**kwargs)

    def update_params(self, loss):
        loss = self.scale_loss(loss)
        self.backward(loss)
        if self.should_update():
            self.step()
            self.zero_grad()


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    optim_wrapper = AmpOptimWrapper(optimizer, scaler, accumulative_counts=accum_steps)
    optim_wrapper.initialize_count_status(model, 0, len(micro_batches))
    for data, target in micro_batches:
        with optim_wrapper.optim_context(model):
            loss = loss_fn(model(data), target)
        optim_wrapper.update_params(loss)

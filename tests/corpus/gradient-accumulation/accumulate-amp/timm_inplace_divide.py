# pattern: timm (huggingface/pytorch-image-models) train.py train_one_epoch with --grad-accum-steps: last_accum_steps for the final, shorter window, need_update = last_batch or (batch_idx + 1) % accum_steps == 0, _forward() with loss /= accum_steps IN PLACE after the autocast block, loss_scaler(loss, optimizer, need_update=need_update), then optimizer.zero_grad() after each update
# class: inplace-divide
# expect: pass
# why: every loss is divided by its window's real size before backward (in place, on the loss tensor itself), steps happen only at window ends including the short last one, and the gradients are cleared after each step; the in-place division must be read as a division (the tensor's value at backward time is the divided loss), not as "not divided"
from functools import partial

import torch


class NativeScaler:
    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False, need_update=True):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if need_update:
            if clip_grad is not None:
                self._scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
            self._scaler.step(optimizer)
            self._scaler.update()


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    amp_autocast = partial(torch.autocast, device_type='cuda', dtype=torch.float16)
    loss_scaler = NativeScaler(scaler)
    num_batches_per_epoch = len(micro_batches)
    last_accum_steps = num_batches_per_epoch % accum_steps
    last_batch_idx = num_batches_per_epoch - 1
    last_batch_idx_to_accum = num_batches_per_epoch - last_accum_steps

    num_updates = 0
    optimizer.zero_grad()
    for batch_idx, (input, target) in enumerate(micro_batches):
        last_batch = batch_idx == last_batch_idx
        need_update = last_batch or (batch_idx + 1) % accum_steps == 0
        if batch_idx >= last_batch_idx_to_accum:
            accum_steps = last_accum_steps

        def _forward():
            with amp_autocast():
                output = model(input)
                loss = loss_fn(output, target)
            if accum_steps > 1:
                loss /= accum_steps
            return loss

        def _backward(_loss):
            loss_scaler(_loss, optimizer, need_update=need_update)

        loss = _forward()
        _backward(loss)

        if not need_update:
            continue
        num_updates += 1
        optimizer.zero_grad()
        # timm steps its lr scheduler here: lr_scheduler.step_update(num_updates=num_updates)

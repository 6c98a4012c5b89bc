# pattern: timm (huggingface/pytorch-image-models), timm/utils/cuda.py NativeScaler.__call__ (scale, backward, optional unscale_ + clip, step, update) called from train.py train_one_epoch after optimizer.zero_grad(); here the wrapper holds the caller's scaler instead of making its own
# class: correct-wrapper
# expect: pass
# why: the same calls in the same order as the documented recipe, made through a helper class that wraps the scaler it was given
from functools import partial

import torch


def dispatch_clip_grad(parameters, value, mode='norm'):
    if mode == 'norm':
        torch.nn.utils.clip_grad_norm_(parameters, value)
    elif mode == 'value':
        torch.nn.utils.clip_grad_value_(parameters, value)
    else:
        raise ValueError(f"clip mode must be 'norm' or 'value', not {mode!r}")


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer, clip_grad=None, clip_mode='norm', parameters=None,
                 create_graph=False, need_update=True):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if need_update:
            if clip_grad is not None:
                assert parameters is not None
                self._scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
                dispatch_clip_grad(parameters, clip_grad, mode=clip_mode)
            self._scaler.step(optimizer)
            self._scaler.update()

    def state_dict(self):
        return self._scaler.state_dict()


amp_autocast = partial(torch.autocast, device_type='cuda', dtype=torch.float16)


def train_step(model, optimizer, scaler, loss_fn, x, y):
    loss_scaler = NativeScaler(scaler)
    with amp_autocast():
        output = model(x)
        loss = loss_fn(output, y)

    optimizer.zero_grad()
    loss_scaler(loss, optimizer, clip_grad=None, parameters=model.parameters())
    return loss

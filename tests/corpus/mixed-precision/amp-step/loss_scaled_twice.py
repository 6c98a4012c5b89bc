# pattern: a NativeScaler-style helper that scales internally (timm/utils/cuda.py NativeScaler.__call__), called with a loss the caller had already passed through scaler.scale (code migrated from manual loss scaling): the loss is scaled twice
# class: loss-scaled-twice
# expect: fail
# expect-fail: scaled-backward
# why: backward runs on loss * 65536**2 (4.3e9 times the loss): every fp16 backward overflows, scaler.step skips every call and the weights never move; scaled-backward must fail because the tensor is not scaler.scale(loss) but scale(scale(loss)) (the ratio to the loss is 4.3e9, not the scale), and the message must say "scaled twice"
import torch


class LossScaler:
    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()


def train_step(model, optimizer, scaler, loss_fn, x, y):
    loss_scaler = LossScaler(scaler)
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        loss = loss_fn(model(x), y)
    loss_scaler(scaler.scale(loss), optimizer)
    return loss

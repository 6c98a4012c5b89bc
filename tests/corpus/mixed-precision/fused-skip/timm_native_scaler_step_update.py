# pattern: huggingface/pytorch-image-models timm/utils/cuda.py NativeScaler.__call__ (scale, backward, optional unscale_ and clip, scaler.step, scaler.update) with train.py train_one_epoch (num_updates += 1 and lr_scheduler.step_update(num_updates=num_updates) after every update)
# class: schedule-every-update
# expect: fail
# expect-fail: warmup-on-real-steps, counts-real-steps
# why: timm advances its schedule and num_updates after every batch, skipped or not (its schedulers are indexed by update count); the warm-up runs ahead by the number of skips, and the count is the batch count
import torch


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if clip_grad is not None:
            assert parameters is not None
            self._scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
        self._scaler.step(optimizer)
        self._scaler.update()


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    loss_scaler = NativeScaler(scaler)
    num_updates = 0
    for input, target in batches:
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            output = model(input)
            loss = loss_fn(output, target)
        optimizer.zero_grad()
        loss_scaler(loss, optimizer, parameters=model.parameters())
        num_updates += 1
        scheduler.step()
    return num_updates

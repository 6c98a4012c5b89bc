# pattern: huggingface/pytorch-image-models train.py train_one_epoch: loss_scaler(loss, optimizer, ...) (timm.utils.NativeScaler.__call__: scale, backward, step, update), then model_ema.update(model, step=num_updates) (ModelEmaV3), num_updates += 1 and lr_scheduler.step_update(num_updates=num_updates), with no check whether the scaler skipped the step
# class: timm-ema-every-update
# expect: fail
# expect-fail: scheduler-on-real-steps, counts-real-steps
# why: timm advances the EMA, the update count and the per-update schedule on every batch, the skipped calibration and outlier steps too; the scheduler message should name a skipped batch and the line of scheduler.step()
import torch


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if clip_grad is not None:
            self._scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
        self._scaler.step(optimizer)
        self._scaler.update()


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    loss_scaler = NativeScaler(scaler)
    num_updates = 0
    for input, target in batches:
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            output = model(input)
            loss = loss_fn(output, target)
        optimizer.zero_grad()
        loss_scaler(loss, optimizer, parameters=model.parameters())
        ema.update_parameters(model)
        num_updates += 1
        scheduler.step()
    return num_updates

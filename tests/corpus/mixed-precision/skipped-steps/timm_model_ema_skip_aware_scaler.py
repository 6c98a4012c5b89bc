# pattern: huggingface/pytorch-image-models timm.utils.ModelEmaV3 (a wrapper whose update(model, step) averages the weights) and NativeScaler, adapted (not timm's own code, which does not check) so that the scaler call reports whether the optimizer stepped (scale before vs after update) and the EMA, the schedule and num_updates advance only then
# class: timm-skip-aware
# expect: pass
# why: the EMA wrapper, the scheduler and the update counter all wait for a step the scaler did not skip
import torch


class NativeScaler:
    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        scale_before = self._scaler.get_scale()
        self._scaler.step(optimizer)
        self._scaler.update()
        return self._scaler.get_scale() >= scale_before


class ModelEmaV3:
    def __init__(self, averaged):
        self.averaged = averaged

    @torch.no_grad()
    def update(self, model, step=None):
        self.averaged.update_parameters(model)


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    loss_scaler = NativeScaler(scaler)
    model_ema = ModelEmaV3(ema)
    num_updates = 0
    for input, target in batches:
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(input), target)
        optimizer.zero_grad()
        stepped = loss_scaler(loss, optimizer)
        if stepped:
            num_updates += 1
            model_ema.update(model, step=num_updates)
            scheduler.step()
    return num_updates

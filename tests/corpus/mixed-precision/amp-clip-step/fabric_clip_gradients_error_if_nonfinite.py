# pattern: Lightning Fabric's clip_gradients(module, optimizer, max_norm=...), whose error_if_nonfinite defaults to True (lightning/fabric/fabric.py and the strategies' clip_gradients_norm: self.precision.unscale_gradients(optimizer); torch.nn.utils.clip_grad_norm_(parameters, max_norm=max_norm, norm_type=norm_type, error_if_nonfinite=error_if_nonfinite)); the fp16 crash reported in lightly-ai/lightly-train#255 ("How to set error_if_nonfinite=False") and pytorch/pytorch#185915 (GradScaler "can't function properly" with clipping: "RuntimeError: Non-finite gradient detected"); see pytorch/pytorch#55169 on why torch's own default went back to False
# class: clip-error-if-nonfinite
# expect: fail
# expect-fail: runs
# why: the order is right (unscale_ once, clip, scaler.step, update), but on the call whose scaled fp16 gradients overflow the unscaled gradients hold inf/NaN and clip_grad_norm_(..., error_if_nonfinite=True) raises instead of letting scaler.step skip the step; runs must name that call and the RuntimeError of the clip line (the later checks that need runs are skipped)
import torch


def clip_gradients(model, optimizer, scaler, max_norm, norm_type=2.0, error_if_nonfinite=True):
    scaler.unscale_(optimizer)  # precision.unscale_gradients(optimizer)
    return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm, norm_type=norm_type,
                                          error_if_nonfinite=error_if_nonfinite)


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    clip_gradients(model, optimizer, scaler, max_norm=max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

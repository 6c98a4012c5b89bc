# pattern: huggingface/pytorch-image-models timm/utils/cuda.py NativeScaler.__call__ (self._scaler.scale(loss).backward(create_graph=create_graph); if clip_grad is not None: self._scaler.unscale_(optimizer)  # unscale the gradients of optimizer's assigned params in-place; dispatch_clip_grad(parameters, clip_grad, mode=clip_mode); self._scaler.step(optimizer); self._scaler.update()) with timm/utils/clip_grad.py dispatch_clip_grad, as train.py calls it (loss_scaler(loss, optimizer, clip_grad=args.clip_grad, clip_mode=args.clip_mode, parameters=model_parameters(model))); the NativeScaler wraps the GradScaler it is given
# class: clip-after-unscale-helper
# expect: pass
# why: the helper unscales once, clips the true gradients' total norm to max_norm (mode 'norm' is clip_grad_norm_) and steps and updates through the scaler, the documented order behind two layers of indirection
import torch


def dispatch_clip_grad(parameters, value, mode='norm', norm_type=2.0):
    if mode == 'norm':
        torch.nn.utils.clip_grad_norm_(parameters, value, norm_type=norm_type)
    elif mode == 'value':
        torch.nn.utils.clip_grad_value_(parameters, value)
    else:
        assert False, f"Unknown clip mode ({mode})."


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer, clip_grad=None, clip_mode='norm', parameters=None, create_graph=False,
                 need_update=True):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if need_update:
            if clip_grad is not None:
                assert parameters is not None
                self._scaler.unscale_(optimizer)  # unscale the gradients of optimizer's assigned params in-place
                dispatch_clip_grad(parameters, clip_grad, mode=clip_mode)
            self._scaler.step(optimizer)
            self._scaler.update()


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    loss_scaler = NativeScaler(scaler)
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        output = model(x)
        loss = loss_fn(output, y)
    loss_scaler(loss, optimizer, clip_grad=max_norm, clip_mode='norm', parameters=list(model.parameters()))
    return loss.detach()

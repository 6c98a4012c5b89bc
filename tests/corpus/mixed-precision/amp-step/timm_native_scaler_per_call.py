# pattern: timm (huggingface/pytorch-image-models), timm/utils/cuda.py NativeScaler, whose __init__ makes its own torch.cuda.amp.GradScaler(); instantiated inside the step function, so every call gets a fresh scaler and the one the caller passed is never used
# class: scaler-per-call
# expect: fail
# expect-fail: step-update-order
# why: the scaler created per call is named by step-update-order (use the scaler you were given); matches-reference, which it also breaks, is reported skipped as explained by it. the caller's scaler never steps or updates, so after the overflowing call its scale is still 65536 where a correct step leaves 32768, and every call forgets the previous backoff; the learner DID call update() on its own scaler, so the message must say "use the scaler you were given (the scaler argument), not a new GradScaler per call", not "call scaler.update() on it every step"
import torch


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if clip_grad is not None:
            assert parameters is not None
            self._scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
        self._scaler.step(optimizer)
        self._scaler.update()


def train_step(model, optimizer, scaler, loss_fn, x, y):
    loss_scaler = NativeScaler()
    with torch.cuda.amp.autocast():
        output = model(x)
        loss = loss_fn(output, y)
    optimizer.zero_grad()
    loss_scaler(loss, optimizer, parameters=model.parameters())
    return loss

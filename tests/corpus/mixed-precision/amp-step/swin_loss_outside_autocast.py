# pattern: microsoft/Swin-Transformer main.py train_one_epoch: with torch.cuda.amp.autocast(enabled=config.AMP_ENABLE): outputs = model(samples); then loss = criterion(outputs, targets) after the block; loss_scaler (NativeScalerWithGradNormCount: scale, backward, unscale_, clip_grad_norm_(5.0), step, update)
# class: fp16-loss-outside-autocast
# expect: fail
# expect-fail: autocast-scope
# why: the loss runs outside autocast on fp16 logits, so it is an fp16 tensor; the 65536 gradient flowing into it overflows float16 (max 65504), so call 1's step is skipped and the weights differ from a correct step; the messages must name the loss line outside autocast and the skipped first step, not zeroing or scaling
import torch

AMP_ENABLE = True
CLIP_GRAD = 5.0


class NativeScalerWithGradNormCount:
    state_dict_key = "amp_scaler"

    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False, update_grad=True):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if update_grad:
            self._scaler.unscale_(optimizer)
            if clip_grad is not None:
                norm = torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
            else:
                norm = None
            self._scaler.step(optimizer)
            self._scaler.update()
        else:
            norm = None
        return norm


def train_step(model, optimizer, scaler, loss_fn, x, y):
    loss_scaler = NativeScalerWithGradNormCount(scaler)
    optimizer.zero_grad()
    with torch.cuda.amp.autocast(enabled=AMP_ENABLE):
        outputs = model(x)
    loss = loss_fn(outputs, y)
    loss_scaler(loss, optimizer, clip_grad=CLIP_GRAD, parameters=model.parameters(), update_grad=True)
    return loss

# pattern: facebookresearch/mae engine_pretrain.py train_one_epoch + util/misc.py NativeScalerWithGradNormCount: with torch.cuda.amp.autocast(): loss = model(...); loss /= accum_iter (in place); loss_scaler(loss, optimizer, parameters=model.parameters(), update_grad=(data_iter_step + 1) % accum_iter == 0); optimizer.zero_grad() on the same condition
# class: drops-partial-window
# expect: fail
# expect-fail: loss-divided, step-at-boundaries
# why: MAE assumes the epoch divides into windows: micro-batch 7, alone in the last window, has its loss divided by 3 (loss-divided, which must name micro-batch 7, not "not divided": the in-place division is a division) and is never stepped on (step-at-boundaries), so training ends without it (matches-reference-run); the two full windows are right (matches-large-batch passes)
import math

import torch


class NativeScalerWithGradNormCount:
    state_dict_key = "amp_scaler"

    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False, update_grad=True):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if update_grad:
            self._scaler.unscale_(optimizer)  # the norm is logged unscaled, clipped or not
            if clip_grad is not None:
                norm = torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
            else:
                norm = grad_norm(parameters)
            self._scaler.step(optimizer)
            self._scaler.update()
        else:
            norm = None
        return norm


def grad_norm(parameters):
    grads = [p.grad.detach().flatten() for p in parameters if p.grad is not None]
    return torch.cat(grads).norm() if grads else torch.zeros(())


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_iter):
    loss_scaler = NativeScalerWithGradNormCount(scaler)
    optimizer.zero_grad()
    for data_iter_step, (samples, targets) in enumerate(micro_batches):
        with torch.cuda.amp.autocast():
            loss = loss_fn(model(samples), targets)

        loss_value = loss.item()
        if not math.isfinite(loss_value):
            print(f"non-finite loss {loss_value} at step {data_iter_step}")

        loss /= accum_iter
        loss_scaler(loss, optimizer, parameters=model.parameters(),
                    update_grad=(data_iter_step + 1) % accum_iter == 0)
        if (data_iter_step + 1) % accum_iter == 0:
            optimizer.zero_grad()

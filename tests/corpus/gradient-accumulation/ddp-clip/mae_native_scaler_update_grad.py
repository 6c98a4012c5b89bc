# pattern: facebookresearch/mae util/misc.py NativeScalerWithGradNormCount (backward every call; "if update_grad:" unscale_, clip_grad_norm_(parameters, clip_grad), step, update) called from engine_pretrain.py train_one_epoch with update_grad=(data_iter_step + 1) % accum_iter == 0; the engine runs its DDP model without no_sync
# class: scaler-helper-update-grad
# expect: fail
# expect-fail: syncs-once-per-window
# why: the clipping is right (once per window, after unscale_, on the all-reduced gradient), but without no_sync every backward all-reduces: 8 all-reduces for 3 windows; the weights match, so only the sync count fails (a short last window divided by its own size, as the exercise asks, where MAE divides by accum_iter)
import torch


class NativeScalerWithGradNormCount:
    state_dict_key = "amp_scaler"

    def __init__(self, scaler):
        self._scaler = scaler

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False, update_grad=True):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if update_grad:
            if clip_grad is not None:
                assert parameters is not None
                self._scaler.unscale_(optimizer)  # unscale the gradients of optimizer's assigned params in-place
                norm = torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
            else:
                norm = None
            self._scaler.step(optimizer)
            self._scaler.update()
        else:
            norm = None
        return norm


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    loss_scaler = NativeScalerWithGradNormCount(scaler)
    n = len(micro_batches)
    optimizer.zero_grad()
    for data_iter_step, (samples, labels) in enumerate(micro_batches):
        accum_iter = min(accum_steps, n - (data_iter_step - data_iter_step % accum_steps))
        loss = loss_fn(model(samples), labels)
        loss /= accum_iter
        update = (data_iter_step + 1) % accum_steps == 0 or data_iter_step + 1 == n
        loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters(), update_grad=update)
        if update:
            optimizer.zero_grad()

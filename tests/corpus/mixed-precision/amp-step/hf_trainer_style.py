# pattern: huggingface/transformers Trainer with fp16=True through accelerate: training_step (compute_loss under autocast, accelerator.backward = scaler.scale(loss).backward()), then in the inner loop accelerator.clip_grad_norm_ (unscale_gradients first) with max_grad_norm=1.0, optimizer.step() (AcceleratedOptimizer: scaler.step + scaler.update) and model.zero_grad() after the step
# class: zero-grad-at-end
# expect: fail
# expect-fail: grads-cleared
# why: DEBATABLE, decided fail (docs/course.md): the exercise hands train_step gradients left over from before (as a real caller may), and a function that is one step must clear them before backward; the message names the end-of-step zero_grad, the official recipe's loop order, as the reason
import torch

max_grad_norm = 1.0


class Accelerator:
    def __init__(self, scaler):
        self.scaler = scaler

    def autocast(self):
        return torch.autocast(device_type='cuda', dtype=torch.float16)

    def backward(self, loss):
        self.scaler.scale(loss).backward()

    def unscale_gradients(self, optimizer):
        self.scaler.unscale_(optimizer)

    def clip_grad_norm_(self, parameters, max_norm, optimizer):
        self.unscale_gradients(optimizer)
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm)

    def optimizer_step(self, optimizer):
        self.scaler.step(optimizer)
        self.scaler.update()


def compute_loss(model, inputs, loss_fn):
    outputs = model(inputs["input"])
    return loss_fn(outputs, inputs["labels"])


def training_step(accelerator, model, inputs, loss_fn):
    model.train()
    with accelerator.autocast():
        loss = compute_loss(model, inputs, loss_fn)
    accelerator.backward(loss)
    return loss.detach()


def train_step(model, optimizer, scaler, loss_fn, x, y):
    accelerator = Accelerator(scaler)
    tr_loss_step = training_step(accelerator, model, {"input": x, "labels": y}, loss_fn)
    if max_grad_norm is not None and max_grad_norm > 0:
        accelerator.clip_grad_norm_(model.parameters(), max_grad_norm, optimizer)
    accelerator.optimizer_step(optimizer)
    model.zero_grad()
    return tr_loss_step

# pattern: Lightning manual optimization (docs "Manual Optimization": automatic_optimization = False; opt.zero_grad(); self.manual_backward(loss); opt.step()) under precision="16-mixed", where the MixedPrecision plugin runs training_step under autocast, scales in manual_backward and, in optimizer_step, unscales, then scaler.step and scaler.update (lightning/pytorch/plugins/precision/amp.py)
# class: correct-helpers
# expect: pass
# why: the plugin's calls in Lightning's order: zero_grad, forward and loss under autocast, scaled backward, unscale_, step, update, all on the scaler the caller passed
import torch


class MixedPrecision:
    def __init__(self, scaler, device='cuda'):
        self.scaler = scaler
        self.device = device

    def forward_context(self):
        return torch.autocast(self.device, dtype=torch.half)

    def backward(self, tensor):
        self.scaler.scale(tensor).backward()

    def optimizer_step(self, optimizer):
        # unscaling happens here in case gradient clipping runs after the closure
        self.scaler.unscale_(optimizer)
        step_output = self.scaler.step(optimizer)
        self.scaler.update()
        return step_output


class LitClassifier:
    automatic_optimization = False

    def __init__(self, model, optimizer, loss_fn, precision):
        self.model, self._optimizer, self.loss_fn, self.precision = model, optimizer, loss_fn, precision

    def optimizers(self):
        return self._optimizer

    def manual_backward(self, loss):
        self.precision.backward(loss)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        opt.zero_grad()
        x, y = batch
        with self.precision.forward_context():
            loss = self.loss_fn(self.model(x), y)
        self.manual_backward(loss)
        self.precision.optimizer_step(opt)
        return loss


def train_step(model, optimizer, scaler, loss_fn, x, y):
    module = LitClassifier(model, optimizer, loss_fn, MixedPrecision(scaler))
    return module.training_step((x, y), 0)

# pattern: huggingface/accelerate gradient accumulation (usage guide "Performing gradient accumulation"): for batch in dataloader: with accelerator.accumulate(model): loss = ...; accelerator.backward(loss); optimizer.step(); optimizer.zero_grad(); here with a minimal stand-in for its semantics: backward divides by gradient_accumulation_steps always (Accelerator.backward), gradients sync on every Nth batch or at end_of_dataloader (huggingface/accelerate#1847), and the prepared optimizer steps (scaler.step + update) and zeroes only when syncing; the same last-window scaling was fixed in transformers' Trainer (huggingface/transformers#38837, PR #39659) and reported for Lightning (Lightning-AI/pytorch-lightning#19987)
# class: partial-window-divided-by-accum-steps
# expect: fail
# expect-fail: loss-divided
# why: the short last window (1 micro-batch) is stepped on but its loss is divided by 3, so that update is a third of its mean gradient; the messages must name micro-batch 7 and its window of 1
import torch


class GradientState:
    def __init__(self, num_steps):
        self.num_steps = num_steps
        self.sync_gradients = True
        self.end_of_dataloader = False


class AcceleratedOptimizer:
    def __init__(self, optimizer, scaler, gradient_state):
        self.optimizer, self.scaler, self.gradient_state = optimizer, scaler, gradient_state

    def zero_grad(self, set_to_none=None):
        if self.gradient_state.sync_gradients:
            self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None):
        if self.gradient_state.sync_gradients:
            self.scaler.step(self.optimizer, closure) if closure else self.scaler.step(self.optimizer)
            self.scaler.update()


class Accelerator:
    def __init__(self, scaler, gradient_accumulation_steps=1):
        self.scaler = scaler
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.gradient_state = GradientState(gradient_accumulation_steps)
        self.step = 0

    def prepare(self, optimizer, dataloader):
        return AcceleratedOptimizer(optimizer, self.scaler, self.gradient_state), self._loader(dataloader)

    def _loader(self, dataloader):
        for i, batch in enumerate(dataloader):
            self.gradient_state.end_of_dataloader = i == len(dataloader) - 1
            yield batch

    def _do_sync(self):
        if self.gradient_state.end_of_dataloader:
            self.step = 0
            self.gradient_state.sync_gradients = True
        else:
            self.step += 1
            self.gradient_state.sync_gradients = (self.step % self.gradient_state.num_steps) == 0

    def accumulate(self, model):
        self._do_sync()
        return torch.autocast('cuda', dtype=torch.float16)

    def backward(self, loss):
        loss = loss / self.gradient_accumulation_steps
        self.scaler.scale(loss).backward()


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    accelerator = Accelerator(scaler, gradient_accumulation_steps=accum_steps)
    optimizer, dataloader = accelerator.prepare(optimizer, micro_batches)
    for inputs, targets in dataloader:
        with accelerator.accumulate(model):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()

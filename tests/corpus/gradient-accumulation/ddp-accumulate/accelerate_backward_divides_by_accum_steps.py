# pattern: huggingface/accelerate Accelerator.accumulate (_do_sync: sync_gradients at every gradient_accumulation_steps-th batch or at end_of_dataloader; contextlib.ExitStack entering nullcontext() or self.no_sync(m) per model) with Accelerator.backward's "loss = loss / self.gradient_accumulation_steps" and an AcceleratedOptimizer that steps and zeroes only when sync_gradients; the short last window divided by the full count, reported as Lightning-AI/pytorch-lightning#19987 ("the gradients are scaled by accumulate_grad_batches instead of the actual number of accumulations") and jingyaogong/minimind#749
# class: partial-window-fixed-divisor
# expect: fail
# expect-fail: matches-reference
# why: the sync is right (forward and backward inside no_sync except at each window's end, and at the end of the data), but the last window's two losses are divided by 3, so its update is 2/3 of the window's mean gradient; matches-reference must name the shorter last window's divisor
import contextlib


class Accelerator:
    def __init__(self, gradient_accumulation_steps, num_batches):
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.num_batches = num_batches
        self.step = 0
        self.seen = 0
        self.sync_gradients = True

    def _do_sync(self):
        self.seen += 1
        if self.seen == self.num_batches:  # end_of_dataloader
            self.step = 0
            self.sync_gradients = True
        else:
            self.step += 1
            self.sync_gradients = (self.step % self.gradient_accumulation_steps) == 0

    @contextlib.contextmanager
    def accumulate(self, *models):
        self._do_sync()
        with contextlib.ExitStack() as cm_stack:
            for m in models:
                cm_stack.enter_context(contextlib.nullcontext() if self.sync_gradients else m.no_sync())
            yield

    def backward(self, loss):
        loss = loss / self.gradient_accumulation_steps
        loss.backward()


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    accelerator = Accelerator(gradient_accumulation_steps=accum_steps, num_batches=len(micro_batches))
    for inputs, targets in micro_batches:
        with accelerator.accumulate(model):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
            accelerator.backward(loss)
            if accelerator.sync_gradients:  # AcceleratedOptimizer.step / zero_grad
                optimizer.step()
                optimizer.zero_grad()

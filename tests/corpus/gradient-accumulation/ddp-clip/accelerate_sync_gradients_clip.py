# pattern: huggingface/accelerate docs, Accelerator.clip_grad_norm_ example ("if accelerator.sync_gradients: accelerator.clip_grad_norm_(model.parameters(), max_grad_norm)") inside accelerator.accumulate(model), which wraps the non-syncing micro-batches in no_sync; written out by hand with a sync_gradients flag
# class: clip-when-sync-gradients
# expect: pass
# why: sync_gradients is true exactly at a window's last micro-batch (the only one outside no_sync); accelerate's clip_grad_norm_ unscales through the scaler and clips, so the clip runs once per window on the all-reduced gradient
import contextlib

import torch


class GradientState:
    def __init__(self, num_steps, total):
        self.num_steps, self.total, self.step = num_steps, total, 0
        self.sync_gradients = False

    def advance(self):
        self.step += 1
        self.sync_gradients = self.step % self.num_steps == 0 or self.step == self.total


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    state = GradientState(accum_steps, len(micro_batches))

    def clip_grad_norm_(parameters, max_grad_norm):
        scaler.unscale_(optimizer)  # what Accelerator.unscale_gradients does under fp16
        return torch.nn.utils.clip_grad_norm_(parameters, max_grad_norm)

    for i, (x, y) in enumerate(micro_batches):
        state.advance()
        window = min(accum_steps, len(micro_batches) - (i - i % accum_steps))
        with contextlib.nullcontext() if state.sync_gradients else model.no_sync():
            loss = loss_fn(model(x), y)
            scaler.scale(loss / window).backward()
        if state.sync_gradients:
            clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()

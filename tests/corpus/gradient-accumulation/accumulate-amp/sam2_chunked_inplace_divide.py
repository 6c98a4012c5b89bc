# pattern: facebookresearch/sam2 training/trainer.py Trainer._run_step: optim.zero_grad(set_to_none=True), the batch split into accum_steps chunks, each chunk's loss under torch.cuda.amp.autocast, a non-finite loss logged and the rest of the step abandoned (here the whole window, without scaler.step), loss /= accum_steps IN PLACE, self.scaler.scale(loss).backward(); then (train loop) scaler.unscale_ for the gradient clipper, scaler.step, scaler.update
# class: inplace-divide
# expect: pass
# why: each window is one "batch" of chunks; every chunk's loss is divided in place by the number of chunks in its window (1 for the last window), the gradients are cleared once per window and the scaler steps once per window; in the overflow run the abandoned first window leaves the weights unchanged, as a skipped step does, and the scale's extra backoff changes no unscaled gradient
import logging
import math

import torch


class Trainer:
    def __init__(self, model, optimizer, scaler, loss_fn):
        self.model, self.optim, self.scaler, self.loss = model, optimizer, scaler, loss_fn
        self.gradient_clipper = None

    def _run_step(self, chunked_batches):
        self.optim.zero_grad(set_to_none=True)
        accum_steps = len(chunked_batches)
        for chunked_batch in chunked_batches:
            with torch.cuda.amp.autocast(enabled=True, dtype=torch.float16):
                images, targets = chunked_batch
                loss = self.loss(self.model(images), targets)
            if not math.isfinite(loss.item()):
                logging.error(f"non-finite loss {loss.item()}, skipping this step")
                return False
            loss /= accum_steps
            self.scaler.scale(loss).backward()
        return True

    def train_step(self, chunked_batches):
        if not self._run_step(chunked_batches):
            return
        if self.gradient_clipper is not None:
            self.scaler.unscale_(self.optim)
            self.gradient_clipper(model=self.model)
        self.scaler.step(self.optim)
        self.scaler.update()


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    trainer = Trainer(model, optimizer, scaler, loss_fn)
    for start in range(0, len(micro_batches), accum_steps):
        trainer.train_step(micro_batches[start:start + accum_steps])

# pattern: trainer loops that clear at the start of each window, "if self.global_step % self.gradient_accumulation_steps == 0: self.optimizer.zero_grad()" before the forward pass, with unscale_ + clip_grad_norm_ before scaler.step at the window end (a common public style, e.g. many BLIP/CLIP fine-tuning trainers)
# class: zero-grad-at-window-start
# expect: pass
# why: the gradients are cleared before each window's first backward and kept within it, which the exercise allows; losses divided by the window's real size; clipping after unscale_ at max_norm 5.0 is inactive here
import torch

max_grad_norm = 5.0


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    for global_step, (images, labels) in enumerate(micro_batches):
        window_start = global_step - global_step % accum_steps
        window_size = min(accum_steps, n - window_start)
        if global_step % accum_steps == 0:
            optimizer.zero_grad()
        with torch.autocast('cuda', dtype=torch.float16):
            loss = loss_fn(model(images), labels)
            loss = loss / window_size
        scaler.scale(loss).backward()
        if (global_step + 1) % accum_steps == 0 or global_step + 1 == n:
            if max_grad_norm > 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            scaler.step(optimizer)
            scaler.update()

# pattern: pytorch/examples distributed/minGPT-ddp/mingpt/trainer.py _run_batch, reported in pytorch/examples#1196 "add scaler.unscale_(optimizer) before clip_grad_norm_": self.scaler.scale(loss).backward(); torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_norm_clip); self.scaler.step(self.optimizer); self.scaler.update(); with accumulation the clip sits at the window's end
# class: clip-before-unscale
# expect: fail
# expect-fail: matches-large-batch
# why: clip_grad_norm_(1.0) runs on the window's gradients while they are still multiplied by 65536 (norm ~3e4), shrinking them ~3e4-fold before scaler.step unscales them, so each update uses a gradient far smaller than the window's mean; the matches-large-batch message must name the clip_grad_norm_ line running before scaler.unscale_(optimizer)
import torch

grad_norm_clip = 1.0


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    for i, (source, targets) in enumerate(micro_batches):
        size = min(accum_steps, n - i // accum_steps * accum_steps)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            output = model(source)
            loss = loss_fn(output, targets) / size
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_norm_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)

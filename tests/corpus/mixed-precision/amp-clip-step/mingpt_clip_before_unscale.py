# pattern: pytorch/examples distributed/minGPT-ddp/mingpt/trainer.py _run_batch, reported in pytorch/examples#1196 "add scaler.unscale_(optimizer) before clip_grad_norm_": self.scaler.scale(loss).backward(); torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_norm_clip); self.scaler.step(self.optimizer); self.scaler.update()
# class: clip-before-unscale
# expect: fail
# expect-fail: unscale-then-clip
# why: clip_grad_norm_ runs on gradients still multiplied by 65536, cutting them ~65536 times too hard; unscale-then-clip must name the clip line running before scaler.unscale_(optimizer) (matches-reference, which also fails on its own, is reported skipped as explained by it)
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        logits = model(x)
        loss = loss_fn(logits, y)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()

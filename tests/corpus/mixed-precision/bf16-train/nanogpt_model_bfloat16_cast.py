# pattern: "pure bf16" by casting the module (model.to(dtype=torch.bfloat16) / model.bfloat16(), as in fine-tuning scripts and HF forum threads on training in bf16 without mixed precision), keeping the autocast block of the nanoGPT-style loop
# class: pure-bf16-weights
# expect: fail
# expect-fail: bf16-autocast
# why: the weights themselves become bfloat16, which the prompt forbids (the weights stay float32: updates below bfloat16's ~3 significant digits round away); the final loss can still land inside the 1.25x bar, so the check must judge the weights' dtype and say the model was converted
import torch

ctx = torch.amp.autocast(device_type="cuda", dtype=torch.bfloat16)


def train(model, optimizer, loss_fn, x, y, steps):
    model.bfloat16()
    losses = []
    for _ in range(steps):
        with ctx:
            logits = model(x.bfloat16())
            loss = loss_fn(logits, y.bfloat16())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses

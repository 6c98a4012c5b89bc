# pattern: the common advice "use bfloat16 autocast, it needs no GradScaler" (Lightning precision="bf16-mixed", transformers bf16=True): torch.autocast('cuda', dtype=torch.bfloat16), plain loss.backward() and optimizer.step()
# class: bf16-instead-of-scaler
# expect: fail
# expect-fail: scaled-backward
# why: bfloat16 has float32's range, so nothing underflows and the loss falls like fp32 (measured ratio 1.001), and autocast-scope accepts a 16-bit autocast; but the exercise is to keep fp16 and fix its underflow with a GradScaler, and none is used: the messages should say that bf16 sidesteps the problem the exercise is about rather than only "backward ran on the raw loss"
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses

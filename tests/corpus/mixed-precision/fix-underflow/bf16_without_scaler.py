# pattern: the common advice "use bfloat16 autocast, it needs no GradScaler" (Lightning precision="bf16-mixed", transformers bf16=True): torch.autocast('cuda', dtype=torch.bfloat16), plain loss.backward() and optimizer.step()
# class: bf16-instead-of-scaler
# expect: fail
# expect-fail: autocast-scope
# why: DEBATABLE, decided fail (issue 19, docs/course.md): bfloat16 has float32's range, so nothing underflows and the loss falls like fp32 (measured ratio 1.001), a legitimate fix on hardware that has it; but the exercise is to keep fp16 and fix its underflow with a GradScaler, so autocast-scope ("still under fp16 autocast") fails with a message that says so, and scaled-backward is skipped as explained by it rather than blaming "the raw loss"
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

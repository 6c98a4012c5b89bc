# mistake: fixes the underflow the fp16 way (GradScaler) instead of switching to bfloat16
# expect-fail: bf16-autocast
# expect-skip: no-scaler
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    """Train for `steps` full-batch steps in bfloat16 autocast; return the loss of each step."""
    scaler = torch.amp.GradScaler("cuda")
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses

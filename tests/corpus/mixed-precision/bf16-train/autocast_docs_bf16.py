# pattern: the torch.autocast docs (CUDA Ops that can autocast / "bfloat16" examples) and Lightning precision="bf16-mixed": with torch.autocast(device_type="cuda", dtype=torch.bfloat16) around the forward and loss, then a plain loss.backward() and optimizer.step(), no GradScaler
# class: bf16-plain-step
# expect: pass
# why: exactly the exercise's fix: bfloat16 has float32's exponent range, so the tiny gradients do not underflow and no scaler is needed
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            output = model(x)
            loss = loss_fn(output, y)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses

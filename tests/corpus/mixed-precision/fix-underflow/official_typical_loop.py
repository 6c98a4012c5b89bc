# pattern: PyTorch docs, notes/amp_examples "Typical Mixed Precision Training": a GradScaler created once at the beginning of training, then per iteration zero_grad, autocast forward and loss, scaler.scale(loss).backward(), scaler.step, scaler.update
# class: correct-official
# expect: pass
# why: the documented loop: one scaler for the whole run, scaled backward outside autocast, step and update every iteration, one float loss per step returned
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    # Creates a GradScaler once at the beginning of training.
    scaler = torch.amp.GradScaler("cuda")
    losses = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            output = model(x)
            loss = loss_fn(output, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses

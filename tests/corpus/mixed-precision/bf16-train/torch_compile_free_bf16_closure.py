# pattern: the closure form of optimizer.step (torch.optim docs, "optimizer.step(closure)": def closure(): optimizer.zero_grad(); output = model(input); loss = loss_fn(output, target); loss.backward(); return loss), used by LBFGS-style loops and kept for other optimizers, with bfloat16 autocast inside the closure around forward and loss
# class: bf16-step-closure
# expect: pass
# why: each step calls the closure once: gradients cleared, forward and loss under bfloat16 autocast, backward outside it, and the step's own return value is that loss
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    def closure():
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        return loss

    return [float(optimizer.step(closure)) for _ in range(steps)]

# pattern: PyTorch docs, notes/amp_examples "Typical Mixed Precision Training" (https://pytorch.org/docs/stable/notes/amp_examples.html): zero_grad, forward and loss under autocast, scaled backward, scaler.step, scaler.update
# class: correct-official
# expect: pass
# why: one iteration of the documented recipe, on the scaler the caller owns; every check's requirement is met
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()

    # autocast covers the forward pass and the loss only
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        output = model(x)
        loss = loss_fn(output, y)

    # backward on the scaled loss, outside autocast: the gradients come out scaled
    scaler.scale(loss).backward()

    # unscales the gradients, skips the step if any is inf/NaN, else runs optimizer.step()
    scaler.step(optimizer)

    # picks the scale for the next iteration
    scaler.update()
    return loss
